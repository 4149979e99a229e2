"""One engine per process and the transaction helpers every request and job uses.

SQLite needs two things SQLAlchemy does not do by default: the driver must not open
transactions on its own (so `BEGIN IMMEDIATE` can be sent for writes, which takes the write
lock up front instead of failing with SQLITE_BUSY when a read upgrades to a write), and each
connection needs WAL, a busy timeout and foreign keys switched on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from dutyline.db.sqlite_driver import OneHopConnection  # also registers `sqlite+dutyline`

SQLITE_BUSY_TIMEOUT_MS = 10_000


class Database:
    def __init__(self, url: str, *, pool_size: int = 20, echo: bool = False) -> None:
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if parsed.drivername == "sqlite+aiosqlite":
            # Same driver, one thread hop per statement (see db/sqlite_driver.py).
            parsed = parsed.set(drivername="sqlite+dutyline")
        # A pool smaller than the requests in flight opens and closes a connection per
        # request (for SQLite: a thread and its PRAGMAs); size it to the expected concurrency.
        kwargs: dict[str, Any] = {"echo": echo, "pool_size": pool_size, "max_overflow": pool_size}
        self._sqlite_writer: asyncio.Lock | None = None
        if self.is_sqlite:
            db = parsed.database
            if db and db != ":memory:":
                Path(db).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
            # Every connection leaves through a context manager that already ended its
            # transaction (SQLAlchemy rolls back an open one on close), so the pool's own
            # reset ROLLBACK would only add a thread hop per request.
            kwargs["pool_reset_on_return"] = None
        else:
            kwargs["pool_pre_ping"] = True
        self.engine: AsyncEngine = create_async_engine(parsed, **kwargs)
        if self.is_sqlite:
            _install_sqlite_hooks(self.engine)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self, *, write: bool = True) -> AsyncIterator[AsyncConnection]:
        """A connection inside one transaction: committed on success, rolled back on error."""
        if write and self.is_sqlite:
            # SQLite has one writer. Queue this process's writers here, in order, instead of
            # letting them poll the file lock with SQLite's sleeping busy handler, which
            # burns CPU and gave write p99 latencies of seconds under load. Other processes
            # still meet the busy timeout.
            if self._sqlite_writer is None:
                self._sqlite_writer = asyncio.Lock()
            async with (
                self._sqlite_writer,
                self.engine.connect() as conn,
                self.begin(conn, write=True),
            ):
                yield conn
            return
        async with self.engine.connect() as conn, self.begin(conn, write=write):
            yield conn

    @asynccontextmanager
    async def begin(self, conn: AsyncConnection, *, write: bool = True) -> AsyncIterator[None]:
        if self.is_sqlite:
            await conn.execution_options(sqlite_begin="BEGIN IMMEDIATE" if write else "BEGIN")
        async with conn.begin():
            yield

    async def dispose(self) -> None:
        await self.engine.dispose()


def _install_sqlite_hooks(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Hand transaction control to SQLAlchemy (see the "begin" hook below).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        statement = conn.get_execution_options().get("sqlite_begin", "BEGIN")
        dbapi_conn = conn.connection.dbapi_connection
        if isinstance(dbapi_conn, OneHopConnection):
            dbapi_conn.defer_begin(statement)
        else:
            conn.exec_driver_sql(statement)
