"""A SQLite connection that SQLAlchemy terminates (a query cancelled under it) closes on its
own thread without tying the close to the caller's event loop: when the loop ends right after,
nothing is left suspended to be collected later, and the connection's thread ends cleanly."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from pathlib import Path

from sqlalchemy import text

from dutyline.db.engine import Database

# Long enough on the connection's thread to be cancelled in flight.
SLOW = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) "
        "SELECT count(*) FROM c")


async def _cancel_twice_mid_query(db: Database) -> list[threading.Thread]:
    started = asyncio.Event()

    async def slow() -> None:
        async with db.connect() as conn:
            started.set()
            await conn.execute(text(SLOW))

    before = set(threading.enumerate())
    task = asyncio.create_task(slow())
    await started.wait()
    await asyncio.sleep(0.05)
    threads = [t for t in threading.enumerate() if t not in before]
    # A cancel scope delivers its cancellation again and again: the second one lands while
    # SQLAlchemy's terminate is under way.
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.wait([task])
    assert task.cancelled()
    return threads


def test_a_connection_terminated_as_the_loop_ends_leaves_nothing_behind(tmp_path: Path) -> None:
    unraisable: list[str] = []
    thread_errors: list[str] = []
    previous = sys.unraisablehook, threading.excepthook
    sys.unraisablehook = lambda u: unraisable.append(f"{u.object!r}: {u.exc_value!r}")
    threading.excepthook = lambda a: thread_errors.append(repr(a.exc_value))
    try:
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'terminate.db'}")
        # The loop ends at once, the engine never disposed: as a request cancelled while a
        # server stops.
        threads: list[threading.Thread] = []
        loop_thread = threading.Thread(
            target=lambda db=db: threads.extend(asyncio.run(_cancel_twice_mid_query(db))))
        loop_thread.start()
        loop_thread.join(timeout=60)
        assert not loop_thread.is_alive(), "the event loop could not end: a close waits forever"
        assert threads, "the connection's thread was not seen"
        for thread in threads:
            thread.join(timeout=30)
            assert not thread.is_alive(), "the terminated connection's thread did not end"
        del db
        gc.collect()
    finally:
        sys.unraisablehook, threading.excepthook = previous
    assert unraisable == []
    assert thread_errors == []
