"""The request's transaction, with one optional step from reading to writing.

Most operations run in one transaction from start to end. An operation that must talk to a
remote server before it writes (resolve an A2A agent card, probe a URL) would otherwise hold
the write lock — on SQLite the only one in the process — for as long as the remote server
takes. Such operations are declared `outbound=True`: they start in a read transaction, do
their remote work, then call `ctx.begin_writes()`, which commits the read transaction and
opens the write transaction the rest of the request runs in. Whatever they read before that
may have changed meanwhile, so they re-check it after the step.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.engine import Database


class RequestTransaction:
    def __init__(self, db: Database, *, write: bool) -> None:
        self._db = db
        self._write = write
        self._stack = AsyncExitStack()
        self._conn: AsyncConnection | None = None

    @property
    def conn(self) -> AsyncConnection:
        assert self._conn is not None, "the request transaction is not open"
        return self._conn

    @property
    def writing(self) -> bool:
        return self._write

    async def __aenter__(self) -> RequestTransaction:
        self._conn = await self._stack.enter_async_context(
            self._db.transaction(write=self._write)
        )
        return self

    async def begin_writes(self) -> None:
        """Commit what was read and continue in a write transaction (idempotent)."""
        if self._write:
            return
        await self._stack.aclose()  # commits the read transaction
        self._stack = AsyncExitStack()
        self._write = True
        self._conn = await self._stack.enter_async_context(self._db.transaction(write=True))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(exc_type, exc, tb)
