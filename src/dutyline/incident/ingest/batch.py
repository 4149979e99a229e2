"""Group commit for pushes on SQLite.

SQLite has one writer, and a push's transaction costs as much in BEGIN/COMMIT and thread hops
as in its own statements. Pushes that arrive while a transaction is being written wait for
the next one, and the next one carries them all: each push runs inside its own SAVEPOINT, so a
failing push rolls back alone and answers its own error, and every push in the batch is
answered only after the batch's COMMIT, so an answered push is durable exactly as before.
A push's work is a sync function of the connection, so the whole batch runs on the database
thread in one hop (Database.run_sync).

PostgreSQL has concurrent writers: there each push keeps its own transaction.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection

from dutyline.db.engine import Database

T = TypeVar("T")
Work = Callable[[Connection], Any]
Outcome = tuple[Any, Exception | None]

MAX_BATCH = 64


class IngestBatcher:
    def __init__(self, db: Database, *, max_batch: int = MAX_BATCH) -> None:
        self._db = db
        self._max_batch = max_batch
        self._pending: list[tuple[Work, asyncio.Future[Any]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self.commits = 0  # transactions written, for tests and curiosity

    async def run(self, work: Callable[[Connection], T]) -> T:
        if not self._db.is_sqlite:
            return await self._db.run_sync(work)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((work, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        result: T = await future
        return result

    async def _drain(self) -> None:
        while self._pending:
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            try:
                await self._commit(batch)
            except BaseException as exc:
                # The batch's COMMIT failed or the drainer was cancelled (shutdown): nobody
                # waiting may hang, and nothing of this batch was committed.
                for _, future in batch:
                    if not future.done():
                        future.set_exception(
                            exc if isinstance(exc, Exception) else RuntimeError("shut down")
                        )
                if not isinstance(exc, Exception):
                    for _, future in self._pending:
                        future.set_exception(RuntimeError("shut down"))
                    self._pending.clear()
                    raise

    async def _commit(self, batch: list[tuple[Work, asyncio.Future[Any]]]) -> None:
        self.commits += 1
        if len(batch) == 1:
            # Alone: its own transaction, no savepoint; an error rolls it back in _drain.
            work, future = batch[0]
            result = await self._db.run_sync(work)
            if not future.done():
                future.set_result(result)
            return
        outcomes = await self._db.run_sync(
            functools.partial(_run_each, [work for work, _ in batch])
        )
        # Answer only after COMMIT: an answered push is on disk.
        for (_, future), (result, error) in zip(batch, outcomes, strict=True):
            if future.done():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)


def _run_each(works: list[Work], conn: Connection) -> list[Outcome]:
    """Every push of a batch in its own savepoint: a failing one rolls back alone."""
    outcomes: list[Outcome] = []
    for work in works:
        try:
            with conn.begin_nested():
                result = work(conn)
        except Exception as exc:
            outcomes.append((None, exc))
        else:
            outcomes.append((result, None))
    return outcomes
