"""Waking idle workers when a job becomes due, instead of leaving it to their next poll.

An idle worker sleeps until the earliest pending job is due (it reads that time from the
table), or for one poll interval when none is. Two things can make work due sooner than it
knows, and both ring its doorbell:

- a transaction of this process commits a job due within `HORIZON_MS` (queue.py marks the
  transaction; db/commit_hooks.py runs the ring once it commits, never for a rollback);
- on PostgreSQL, any process commits one: the same transaction sends `NOTIFY dutyline_work`,
  which PostgreSQL delivers only after the commit, to every worker `listen`ing.

A job due later than the horizon needs no ring: the worker's poll interval is shorter, so its
next look at the table finds it in time. A lost ring (a listener reconnecting) costs at most
one poll interval, never the job. On SQLite, other processes are not rung; their workers poll
more often instead (worker.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from sqlalchemy import Connection

from dutyline.db import commit_hooks
from dutyline.db.engine import Database

log = structlog.get_logger("dutyline.work")

TOPIC = "work.due"
CHANNEL = "dutyline_work"
# Jobs due within this much of their enqueue ring the bell; must not be shorter than the
# longest poll interval of a worker (worker.py), or a job could wait for a poll past its time.
HORIZON_MS = 1_000
RELISTEN_S = 1.0


def note_due(conn: Connection, run_at_ms: int, now_ms: int) -> None:
    """Called for every job enqueued on `conn`: ring the workers when its transaction
    commits, if the job is due soon. One NOTIFY per transaction, whatever it enqueues."""
    if run_at_ms - now_ms > HORIZON_MS:
        return
    if commit_hooks.mark(conn, TOPIC) and conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"NOTIFY {CHANNEL}")


class Doorbell:
    """Rung from any thread; a worker loop clears it before it looks for work and waits on
    it when it found none, so a ring in between is never missed."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._unsubscribe = commit_hooks.subscribe(TOPIC, self.ring)

    def ring(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to wake
            self._loop.call_soon_threadsafe(self._event.set)

    def clear(self) -> None:
        self._event.clear()

    async def wait(self) -> None:
        await self._event.wait()

    def close(self) -> None:
        self._unsubscribe()


async def listen(db: Database, bell: Doorbell, stop: asyncio.Event) -> None:
    """PostgreSQL: ring `bell` on every NOTIFY of the channel, on a connection of its own,
    until `stop`; a lost connection is opened again (and rings once, for what it missed)."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while not stop.is_set():
            try:
                await _listen_once(db, bell, stopping)
            except Exception as exc:
                log.warning("job notification listener failed; polling meanwhile",
                            cause=repr(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(stopping), RELISTEN_S)
    finally:
        stopping.cancel()


async def _listen_once(db: Database, bell: Doorbell, stopping: asyncio.Future[Any]) -> None:
    async with db.connect() as conn:
        raw = await conn.get_raw_connection()
        pg = raw.driver_connection
        assert pg is not None
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_notify(*_: Any) -> None:
            bell.ring()

        def on_lost(*_: Any) -> None:
            if not lost.done():
                lost.set_result(None)

        await pg.add_listener(CHANNEL, on_notify)
        pg.add_termination_listener(on_lost)
        try:
            bell.ring()  # whatever was queued while nobody listened
            await asyncio.wait({lost, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            pg.remove_termination_listener(on_lost)
            if not lost.done():
                with contextlib.suppress(Exception):
                    await pg.remove_listener(CHANNEL, on_notify)
