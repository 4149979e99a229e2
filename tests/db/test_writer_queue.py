"""SQLite's writer queue across processes: two queues on one lock file stand for two
processes (flock locks belong to open files, so two opens conflict as two processes do)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from dutyline.db.engine import Database
from dutyline.db.writer_queue import WriterQueue

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _until(condition: Callable[[], bool]) -> None:
    """Yield to the event loop until `condition` holds (a deadline, not a timing assertion)."""
    with anyio.fail_after(10):
        while True:
            if condition():
                return
            await asyncio.sleep(0.001)


async def test_a_writer_waits_for_the_other_process_and_goes_the_moment_it_is_done(
        tmp_path: Path) -> None:
    mine, theirs = WriterQueue(tmp_path / "db-writers"), WriterQueue(tmp_path / "db-writers")
    await theirs.acquire()
    waiting = asyncio.create_task(mine.acquire())
    await _until(mine.locked)  # past its own process's queue, at the file lock
    assert not waiting.done()  # held by the other "process"
    theirs.release()
    await asyncio.wait_for(waiting, 2)
    # And now the other one waits for this one.
    again = asyncio.create_task(theirs.acquire())
    await _until(theirs.locked)
    assert not again.done()
    mine.release()
    await asyncio.wait_for(again, 2)
    theirs.release()


async def test_writers_of_one_process_queue_in_order(tmp_path: Path) -> None:
    queue = WriterQueue(tmp_path / "db-writers")
    order: list[int] = []

    async def write(n: int) -> None:
        async with queue:
            order.append(n)
            await asyncio.sleep(0)  # the others run meanwhile, and find it taken
            order.append(n)

    await asyncio.gather(*(write(n) for n in range(5)))
    assert order == [n for n in range(5) for _ in (0, 1)]  # never interleaved


async def test_a_cancelled_wait_gives_the_file_lock_back(tmp_path: Path) -> None:
    mine, theirs = WriterQueue(tmp_path / "db-writers"), WriterQueue(tmp_path / "db-writers")
    await theirs.acquire()
    waiting = asyncio.create_task(mine.acquire())
    await _until(mine.locked)  # waiting for the file lock in its thread
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not mine.locked()
    theirs.release()  # the cancelled waiter's thread takes the lock now, and gives it back
    await asyncio.wait_for(theirs.acquire(), 2)
    theirs.release()
    await asyncio.wait_for(mine.acquire(), 2)
    mine.release()


async def test_a_sqlite_file_database_queues_its_writers_on_a_file_beside_it(
        tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}")
    other = Database(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}")
    try:
        async with other.transaction():
            # The other process is writing: this one's write transaction waits its turn.
            writing = asyncio.create_task(_write(db))
            await _until(lambda: db._sqlite_writer is not None and db._sqlite_writer.locked())
            assert not writing.done()
        await asyncio.wait_for(writing, 5)
        assert (tmp_path / "app.db-writers").exists()
    finally:
        await db.dispose()
        await other.dispose()


async def _write(db: Database) -> None:
    async with db.transaction():
        pass
