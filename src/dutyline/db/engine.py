"""One engine per process and the transaction helpers every request and job uses.

SQLite needs two things SQLAlchemy does not do by default: the driver must not open
transactions on its own (so `BEGIN IMMEDIATE` can be sent for writes, which takes the write
lock up front instead of failing with SQLITE_BUSY when a read upgrades to a write), and each
connection needs WAL, a busy timeout and foreign keys switched on.

Hot paths that run many statements per request (alert ingestion) write their work as a plain
function of a sync `Connection` and hand it to `Database.run_sync`. On SQLite the whole
function runs on a dedicated thread through a sync engine on the same file: one thread hop for
the transaction instead of one per statement, and none of the async adapter's per-statement
cost. On PostgreSQL the same function runs through the async driver (`run_sync`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from dutyline.db import commit_hooks, signals
from dutyline.db.sqlite_driver import OneHopConnection  # also registers `sqlite+dutyline`
from dutyline.db.writer_queue import WriterQueue
from dutyline.kit.private_files import private_file

SQLITE_BUSY_TIMEOUT_MS = 10_000
# A pooled PostgreSQL connection idle longer than this is pinged before use.
IDLE_PING_S = 10.0
_IDLE_SINCE = "dutyline.idle_since"
# Threads that run sync reads on SQLite (run_sync(write=False)); writes have their own one.
SQLITE_READ_THREADS = 2

T = TypeVar("T")


class CancellationGuard:
    """Let a cancellation out of a connection's block as what it is.

    A task cancelled mid-statement leaves the connection invalidated, and cleaning it up on
    the way out can raise an error of its own (SQLAlchemy's `PendingRollbackError`, raised
    inside a greenlet, so not even chained to the `CancelledError`). Code that catches
    `Exception` around a read (a worker loop that must go on after a failed poll) would then
    swallow the cancellation and never stop. Enter the guard outside the connection's context
    managers and `guard.body()` inside them:

        async with (guard := CancellationGuard()), engine.connect() as conn, guard.body():
    """

    def __init__(self) -> None:
        self.cancelled: asyncio.CancelledError | None = None

    async def __aenter__(self) -> CancellationGuard:
        return self

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, Exception) and self.cancelled is not None:
            raise self.cancelled from exc

    @asynccontextmanager
    async def body(self) -> AsyncIterator[None]:
        try:
            yield
        except asyncio.CancelledError as exc:
            self.cancelled = exc
            raise


class Database:
    def __init__(self, url: str, *, pool_size: int = 20, echo: bool = False) -> None:
        if pool_size < 1:
            raise ValueError(f"database_pool_size must be at least 1, not {pool_size}")
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if parsed.drivername == "sqlite+aiosqlite":
            # Same driver, one thread hop per statement (see db/sqlite_driver.py).
            parsed = parsed.set(drivername="sqlite+dutyline")
        # A pool smaller than the requests in flight opens and closes a connection per
        # request (for SQLite: a thread and its PRAGMAs); size it to the expected concurrency.
        kwargs: dict[str, Any] = {"echo": echo, "pool_size": pool_size, "max_overflow": pool_size}
        self._sqlite_writer: WriterQueue | None = None
        self._writers_file: Path | None = None
        if self.is_sqlite:
            db = parsed.database
            if db and db != ":memory:":
                private_file(Path(db))
                if not db.startswith("file:"):
                    # Writers of every process on this file queue on its lock (writer_queue).
                    self._writers_file = Path(f"{db}-writers")
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
            # Every connection leaves through a context manager that already ended its
            # transaction (SQLAlchemy rolls back an open one on close), so the pool's own
            # reset ROLLBACK would only add a thread hop per request.
            kwargs["pool_reset_on_return"] = None
        self.engine: AsyncEngine = create_async_engine(parsed, **kwargs)
        commit_hooks.install(self.engine.sync_engine)
        signals.install(self.engine.sync_engine)
        if not self.is_sqlite:
            _ping_idle_connections(self.engine.sync_engine)
        self._sync: _SyncSQLite | None = None
        if self.is_sqlite:
            _install_sqlite_hooks(self.engine.sync_engine)
            self._sync = _SyncSQLite(parsed.set(drivername="sqlite+pysqlite"))
            commit_hooks.install(self._sync.engine)
            signals.install(self._sync.engine)

    @property
    def sync_engines(self) -> list[Engine]:
        """Every engine statements run through (to watch them, as tests and benchmarks do):
        the async engine's, and on SQLite the sync engine of `run_sync`."""
        return [self.engine.sync_engine] + ([self._sync.engine] if self._sync else [])

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        async with (guard := CancellationGuard()), self.engine.connect() as conn, guard.body():
            yield conn

    @asynccontextmanager
    async def transaction(self, *, write: bool = True) -> AsyncIterator[AsyncConnection]:
        """A connection inside one transaction: committed on success, rolled back on error."""
        # SQLite has one writer. Queue this process's writers here, in order, instead of
        # letting them poll the file lock with SQLite's sleeping busy handler, which burns
        # CPU and gave write p99 latencies of seconds under load. Other processes still meet
        # the busy timeout.
        queue = self._writer_lock() if write and self.is_sqlite else nullcontext()
        async with (
            (guard := CancellationGuard()),
            queue,
            self.engine.connect() as conn,
            self.begin(conn, write=write),
            guard.body(),
        ):
            yield conn

    @asynccontextmanager
    async def statement(self, *, write: bool = True) -> AsyncIterator[AsyncConnection]:
        """A connection for ONE statement, which is atomic on its own: on PostgreSQL it runs
        in autocommit, so no BEGIN and COMMIT round trips go with it (the job loop's claims
        and heartbeats are most of its statements); on SQLite it runs in a transaction as
        `transaction` gives it (the writer queue, BEGIN IMMEDIATE for a write)."""
        if not self.is_postgres:
            async with self.transaction(write=write) as conn:
                yield conn
            return
        async with (guard := CancellationGuard()), self.engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            async with guard.body():
                yield conn

    @asynccontextmanager
    async def begin(self, conn: AsyncConnection, *, write: bool = True) -> AsyncIterator[None]:
        if self.is_sqlite:
            await conn.execution_options(sqlite_begin="BEGIN IMMEDIATE" if write else "BEGIN")
        async with conn.begin():
            yield

    def _writer_lock(self) -> WriterQueue:
        """The SQLite writer queue, this process's and the file's (made on first use)."""
        if self._sqlite_writer is None:
            self._sqlite_writer = WriterQueue(self._writers_file)
        return self._sqlite_writer

    def lazy_writer(self) -> dict[str, Any]:
        """Execution options for a write transaction begun by its first statement, where
        the process's writer lock is taken only then (db/sqlite_driver.py), so work done
        before the first write holds no lock. The caller must not hold that lock itself.
        Empty on PostgreSQL, which needs neither."""
        if not self.is_sqlite:
            return {}
        return {"sqlite_begin": "BEGIN IMMEDIATE", "sqlite_writer_lock": self._writer_lock()}

    async def run_sync(
        self, fn: Callable[[Connection], T], *, write: bool = True
    ) -> T:
        """Run `fn` in one transaction (committed when it returns, rolled back when it
        raises) and return its result. On SQLite it runs whole on a database thread (writes
        queued behind this process's other writers, as `transaction` does); elsewhere through
        the async driver. `fn` must only touch the database through its connection.

        A read on PostgreSQL runs in autocommit, in one connection checkout: at the server's
        READ COMMITTED level each statement of a transaction sees its own snapshot anyway, so
        a read gains nothing from BEGIN and COMMIT but two round trips."""
        if self._sync is None:
            if not write and self.is_postgres:
                async with self.statement(write=False) as conn:
                    return await conn.run_sync(fn)
            async with self.transaction(write=write) as conn:
                return await conn.run_sync(fn)
        if not write:
            return await self._sync.run(fn, write=False)
        async with self._writer_lock():
            return await self._sync.run(fn, write=True)

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self._sync is not None:
            self._sync.dispose()
        if self._sqlite_writer is not None:
            self._sqlite_writer.close()


class _SyncSQLite:
    """A sync engine on the same SQLite file, with one thread for writes and a few for
    reads. The write thread runs one transaction at a time; the caller holds the process's
    writer lock around it."""

    def __init__(self, url: Any) -> None:
        self.engine: Engine = create_engine(
            url,
            # Connections move between this class's threads; each is used by one at a time.
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            pool_size=SQLITE_READ_THREADS + 1, max_overflow=0, pool_reset_on_return=None,
        )
        _install_sqlite_hooks(self.engine)
        self._start()

    def _start(self) -> None:
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="dutyline-sqlite-write")
        self._readers = ThreadPoolExecutor(
            SQLITE_READ_THREADS, thread_name_prefix="dutyline-sqlite-read"
        )
        # Each read thread keeps its connection: no pool checkout and return per read.
        self._local = threading.local()
        self._read_conns: list[Connection] = []

    def _transaction(self, fn: Callable[[Connection], T], write: bool) -> T:
        if not write:
            conn: Connection | None = getattr(self._local, "conn", None)
            if conn is None or conn.closed or conn.invalidated:
                conn = self._local.conn = self.engine.connect()
                self._read_conns.append(conn)
            with conn.begin():  # a read begins with the hook's default, a plain BEGIN
                return fn(conn)
        with self.engine.connect() as conn:
            conn = conn.execution_options(sqlite_begin="BEGIN IMMEDIATE")
            with conn.begin():
                return fn(conn)

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        loop = asyncio.get_running_loop()
        pool = self._writer if write else self._readers
        done = loop.run_in_executor(pool, self._transaction, fn, write)
        if not write:
            # A read holds no lock: a cancelled caller lets it end on its thread.
            return await done
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            # The thread cannot be stopped midway: keep the caller (and so the writer lock)
            # until its transaction ended, so no other writer of ours starts meanwhile.
            await asyncio.wait([done])
            raise

    def dispose(self) -> None:
        """Stop the threads and close the connections. Usable again afterwards, as the
        async engine is after its own dispose (an app whose lifespan starts again)."""
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        for conn in self._read_conns:
            conn.close()
        self.engine.dispose()
        self._start()


def _ping_idle_connections(sync_engine: Engine) -> None:
    """Check a pooled connection before use only when it sat idle for a while.

    SQLAlchemy's `pool_pre_ping` checks every checkout, which on asyncpg is three round trips
    (BEGIN, a no-op, ROLLBACK): under load, when connections go back and forth every few
    milliseconds, that was about one statement in three a job sent. A connection idle for
    less than `IDLE_PING_S` was in use a moment ago; one idle longer (across a database
    restart, a proxy's idle timeout) is pinged, and a dead one is replaced before anyone
    uses it. A restart inside that window costs the few statements that meet it one error,
    after which SQLAlchemy recycles the whole pool."""

    @event.listens_for(sync_engine, "connect")
    @event.listens_for(sync_engine, "checkin")
    def _on_idle(_dbapi_conn: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(sync_engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get(_IDLE_SINCE)
        if since is not None and time.monotonic() - since < IDLE_PING_S:
            return
        try:
            dbapi_conn.ping()
        except Exception as exc:
            # The pool discards this connection and checks out another.
            raise DisconnectionError(f"pooled connection failed its ping: {exc}") from exc


def _install_sqlite_hooks(sync_engine: Engine) -> None:
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
        options = conn.get_execution_options()
        statement = options.get("sqlite_begin", "BEGIN")
        dbapi_conn = conn.connection.dbapi_connection
        if isinstance(dbapi_conn, OneHopConnection):
            dbapi_conn.defer_begin(statement, options.get("sqlite_writer_lock"))
        else:
            # Straight to the driver: a statement through SQLAlchemy's execution costs more
            # than a small read transaction's own work.
            dbapi_conn.execute(statement)
