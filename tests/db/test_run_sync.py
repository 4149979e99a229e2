"""Database.run_sync: a sync function of a connection in one transaction. On SQLite it runs on
the database's own threads (writes queued with the process's async writers), elsewhere
through the async driver; on both it commits on return and rolls back on an exception.

Database.statement: a connection for one statement. On PostgreSQL it is in autocommit (the
statement's effect is there for everyone once it returns, with no transaction around it: no
BEGIN, no COMMIT); on SQLite it is a transaction like `transaction`, committed when the block
ends and rolled back on an error."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable

import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, String, Table, insert, select

from dutyline.db.engine import Database

pytestmark = pytest.mark.anyio

_meta = MetaData()
note = Table(
    "run_sync_note", _meta, Column("id", Integer, primary_key=True),
    Column("text", String(40), nullable=False),
)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(_meta.drop_all)
        await conn.run_sync(_meta.create_all)
    yield database
    async with database.engine.begin() as conn:
        await conn.run_sync(_meta.drop_all)
    await database.dispose()


def add(text: str) -> Callable[[Connection], int]:
    def work(conn: Connection) -> int:
        result = conn.execute(insert(note).values(text=text).returning(note.c.id))
        return int(result.scalar_one())
    return work


async def texts(db: Database) -> list[str]:
    async with db.transaction(write=False) as conn:
        return list((await conn.execute(select(note.c.text).order_by(note.c.id))).scalars())


async def test_commits_what_the_function_wrote_and_returns_its_result(db: Database) -> None:
    first = await db.run_sync(add("one"))
    second = await db.run_sync(add("two"))
    assert second == first + 1
    assert await texts(db) == ["one", "two"]
    read = await db.run_sync(lambda c: c.execute(select(note.c.text)).scalars().all(),
                             write=False)
    assert sorted(read) == ["one", "two"]


async def test_an_exception_rolls_back_everything_the_function_wrote(db: Database) -> None:
    def half_then_fail(conn: Connection) -> None:
        conn.execute(insert(note).values(text="half"))
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError, match="refused"):
        await db.run_sync(half_then_fail)
    assert await texts(db) == []
    await db.run_sync(add("after"))
    assert await texts(db) == ["after"]


async def test_sqlite_runs_off_the_event_loop_thread(sqlite_url: str) -> None:
    database = Database(sqlite_url)
    try:
        loop_thread = threading.get_ident()
        ran_on = await database.run_sync(lambda _conn: threading.get_ident())
        assert ran_on != loop_thread
    finally:
        await database.dispose()


async def test_sqlite_sync_and_async_writers_of_one_process_never_overlap(
    sqlite_url: str,
) -> None:
    """Both paths take the process's writer lock, so none waits on SQLite's busy handler
    and every write lands."""
    database = Database(sqlite_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(_meta.create_all)
    inside = 0
    most = 0

    def sync_writer(i: int) -> Callable[[Connection], None]:
        def work(conn: Connection) -> None:
            nonlocal inside, most
            inside += 1
            most = max(most, inside)
            conn.execute(insert(note).values(text=f"sync{i}"))
            inside -= 1
        return work

    async def async_writer(i: int) -> None:
        nonlocal inside, most
        async with database.transaction() as conn:
            inside += 1
            most = max(most, inside)
            await conn.execute(insert(note).values(text=f"async{i}"))
            await asyncio.sleep(0)
            inside -= 1

    try:
        await asyncio.gather(*(
            database.run_sync(sync_writer(i)) if i % 2 else async_writer(i) for i in range(40)
        ))
        assert most == 1
        assert len(await texts(database)) == 40
    finally:
        await database.dispose()


async def test_a_cancelled_caller_keeps_the_writer_lock_until_the_thread_is_done(
    sqlite_url: str,
) -> None:
    database = Database(sqlite_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(_meta.create_all)
    started = threading.Event()
    release = threading.Event()

    def slow(conn: Connection) -> None:
        conn.execute(insert(note).values(text="slow"))
        started.set()
        release.wait(10)

    try:
        task = asyncio.create_task(database.run_sync(slow))
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        # Let the cancellation be delivered: the task is now waiting for its thread.
        for _ in range(5):
            await asyncio.sleep(0)
        lock = database._sqlite_writer
        assert lock is not None
        assert not task.done()  # still waiting for its thread...
        assert lock.locked()  # ...and holding the writer lock meanwhile
        follower = asyncio.create_task(database.run_sync(add("next")))
        # The writer queue's in-process lock has the follower waiting on it.
        await _until(lambda: bool(getattr(lock._local, "_waiters", None)))
        assert not follower.done()  # queued behind the lock, not running beside the thread
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await follower
        assert await texts(database) == ["slow", "next"]  # the thread's work committed
    finally:
        release.set()
        await database.dispose()


async def _until(condition: Callable[[], bool], *, turns: int = 1000) -> None:
    """Yield to the event loop until `condition` holds (no wall-clock sleeps)."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


async def test_the_statement_is_kept_once_the_block_ends(db: Database) -> None:
    async with db.statement() as conn:
        await conn.execute(insert(note).values(text="one"))
    async with db.statement(write=False) as conn:
        assert list((await conn.execute(select(note.c.text))).scalars()) == ["one"]
    assert await texts(db) == ["one"]


async def test_postgres_runs_it_outside_any_transaction_sqlite_inside_one(
        db: Database) -> None:
    if db.is_postgres:
        async with db.statement() as conn:
            await conn.execute(insert(note).values(text="one"))
            # Seen from another connection before the block ends: nothing left to commit.
            assert await texts(db) == ["one"]
            raw = await conn.get_raw_connection()
            assert raw.driver_connection is not None
            assert not raw.driver_connection.is_in_transaction()
    else:
        with pytest.raises(RuntimeError):  # noqa: PT012 - the error comes after the write
            async with db.statement() as conn:
                await conn.execute(insert(note).values(text="one"))
                raise RuntimeError("after the statement")
        assert await texts(db) == []  # rolled back with its transaction
