"""Group commit for pushes on SQLite.

SQLite has one writer, and a push's transaction costs as much in BEGIN/COMMIT and thread hops
as in its own statements. Pushes that arrive while a transaction is being written wait for
the next one, and the next one carries them all: each push runs inside its own SAVEPOINT, so a
failing push rolls back alone and answers its own error, and every push in the batch is
answered only after the batch's COMMIT, so an answered push is durable exactly as before.

PostgreSQL has concurrent writers: there each push keeps its own transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.engine import Database

T = TypeVar("T")
Work = Callable[[AsyncConnection], Awaitable[Any]]

MAX_BATCH = 64


class IngestBatcher:
    def __init__(self, db: Database, *, max_batch: int = MAX_BATCH) -> None:
        self._db = db
        self._max_batch = max_batch
        self._pending: list[tuple[Work, asyncio.Future[Any]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self.commits = 0  # transactions written, for tests and curiosity

    async def run(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        if not self._db.is_sqlite:
            async with self._db.transaction(write=True) as conn:
                return await work(conn)
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
        outcomes: list[tuple[asyncio.Future[Any], Any, Exception | None]] = []
        self.commits += 1
        async with self._db.transaction(write=True) as conn:
            for work, future in batch:
                try:
                    async with conn.begin_nested():
                        result = await work(conn)
                except Exception as exc:  # this push alone rolls back and answers its error
                    outcomes.append((future, None, exc))
                else:
                    outcomes.append((future, result, None))
        # Answer only after COMMIT: an answered push is on disk.
        for future, result, error in outcomes:
            if future.done():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
