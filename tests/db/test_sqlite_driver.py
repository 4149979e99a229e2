"""The one-hop SQLite driver (db/sqlite_driver.py) keeps the DBAPI's behaviour: results,
rowcounts, transactions (deferred BEGIN included), errors and write serialisation."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from dutyline.db.engine import Database
from dutyline.db.sqlite_driver import OneHopConnection

pytestmark = pytest.mark.anyio

_meta = MetaData()
counter = Table(
    "driver_counter", _meta, Column("id", Integer, primary_key=True),
    Column("value", Integer, nullable=False), Column("label", String(20), unique=True),
)


@pytest.fixture
async def db(sqlite_url: str) -> Database:
    database = Database(sqlite_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(_meta.create_all)
    yield database  # type: ignore[misc]
    await database.dispose()


async def test_uses_the_one_hop_connection(db: Database) -> None:
    async with db.connect() as conn:
        raw = await conn.get_raw_connection()
        assert isinstance(raw.dbapi_connection, OneHopConnection)


async def test_results_rowcount_and_lastrowid(db: Database) -> None:
    async with db.transaction() as conn:
        result = await conn.execute(insert(counter).values(value=1, label="a"))
        assert result.inserted_primary_key == (1,)
        await conn.execute(insert(counter), [{"value": i, "label": f"m{i}"} for i in range(5)])
        changed = await conn.execute(update(counter).where(counter.c.value < 3).values(value=9))
        assert changed.rowcount == 4  # a(1) and m0, m1, m2
    async with db.transaction(write=False) as conn:
        rows = (await conn.execute(select(counter.c.label).order_by(counter.c.id))).scalars()
        assert list(rows) == ["a", "m0", "m1", "m2", "m3", "m4"]


async def test_failed_first_statement_rolls_back_and_connection_is_reusable(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(insert(counter).values(value=1, label="dup"))
    for _ in range(3):
        with pytest.raises(IntegrityError):
            async with db.transaction() as conn:
                await conn.execute(insert(counter).values(value=2, label="dup"))
    async with db.transaction() as conn:
        await conn.execute(insert(counter).values(value=3, label="ok"))
    async with db.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM driver_counter"))).scalar() == 2


async def test_rollback_discards_writes_and_empty_transactions_are_fine(db: Database) -> None:
    async with db.transaction():
        pass  # BEGIN deferred and never sent
    async def write_then_fail() -> None:
        async with db.transaction() as conn:
            await conn.execute(insert(counter).values(value=1, label="gone"))
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        await write_then_fail()
    async with db.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM driver_counter"))).scalar() == 0


async def test_concurrent_read_modify_write_transactions_serialise(db: Database) -> None:
    """BEGIN IMMEDIATE travels with the first statement, so it still takes the write lock
    before the read: no lost update and no 'database is locked' error."""
    async with db.transaction() as conn:
        await conn.execute(insert(counter).values(id=1, value=0, label="c"))

    async def increment() -> None:
        async with db.transaction(write=True) as conn:
            value = (await conn.execute(select(counter.c.value).where(counter.c.id == 1))).scalar()
            await anyio.lowlevel.checkpoint()  # let the other transactions interleave
            await conn.execute(update(counter).where(counter.c.id == 1).values(value=value + 1))

    async with anyio.create_task_group() as group:
        for _ in range(25):
            group.start_soon(increment)
    async with db.connect() as conn:
        final = (await conn.execute(select(counter.c.value).where(counter.c.id == 1))).scalar()
    assert final == 25


def _connection_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "_connection_worker_thread" in t.name]


async def test_a_connection_that_cannot_open_leaves_no_thread_behind(tmp_path: Path) -> None:
    """Each aiosqlite connection has a thread; one that could not open the file must be gone
    when the failure is raised, or it may outlive the event loop and fail there."""
    directory = tmp_path / "data"
    database = Database(f"sqlite+aiosqlite:///{directory / 'd.db'}")
    # A file where the database's directory should be: no connection can open. (Database()
    # has made the directory, private, as it always does.)
    shutil.rmtree(directory)
    directory.write_text("not a directory")
    before = set(_connection_threads())
    try:
        for _ in range(3):
            with pytest.raises(DBAPIError, match="unable to open database file"):
                async with database.connect() as conn:
                    await conn.execute(text("SELECT 1"))
            assert set(_connection_threads()) - before == set()
    finally:
        await database.dispose()


async def test_a_lazy_writer_takes_the_process_lock_with_its_first_statement(
        db: Database) -> None:
    """A job's transaction (work/worker.py) holds no lock until it writes, then queues behind
    this process's other writers in order, and gives the lock back however it ends."""
    options = db.lazy_writer()
    lock = options["sqlite_writer_lock"]

    async with db.engine.connect() as conn:
        await conn.execution_options(**options)
        async with conn.begin():
            assert not lock.locked()  # begun, nothing ran: others may write meanwhile
            async with db.transaction() as other:
                await other.execute(insert(counter).values(value=1, label="other"))
            await conn.execute(insert(counter).values(value=2, label="mine"))
            assert lock.locked()
        assert not lock.locked()  # committed

        with pytest.raises(IntegrityError):
            async with conn.begin():
                await conn.execute(insert(counter).values(value=3, label="mine"))
        assert not lock.locked()  # rolled back after a failed statement

        async with conn.begin():
            pass
        assert not lock.locked()  # never wrote, never locked

    # Another writer of this process waits its turn instead of meeting the file lock.
    order: list[str] = []
    async with db.engine.connect() as conn:
        await conn.execution_options(**options)
        async with conn.begin():
            await conn.execute(update(counter).values(value=10))

            async def second() -> None:
                async with db.transaction() as other:
                    order.append("second")
                    await other.execute(update(counter).values(value=20))

            async with anyio.create_task_group() as tg:
                tg.start_soon(second)
                with anyio.fail_after(10):  # until the second writer waits its turn
                    while True:
                        if getattr(lock._local, "_waiters", None):
                            break
                        await anyio.sleep(0.001)
                order.append("first commits")
                await conn.commit()
    assert order == ["first commits", "second"]
    async with db.connect() as conn:
        assert set((await conn.execute(select(counter.c.value))).scalars()) == {20}
