"""SQLAlchemy's aiosqlite dialect, with one thread hop per statement instead of four.

aiosqlite runs every call on the connection's own thread and waits for it: the stock adapter
makes one call to open a cursor, one to execute, one to fetch the rows and one to close, so a
request with a BEGIN, two queries and a COMMIT crossed threads 13 times, and those crossings
were about a quarter of the CPU a request cost (bench/README.md). This cursor sends a single
function to the connection thread that executes, fetches every row and closes the cursor, and
keeps what SQLAlchemy later asks for (description, rowcount, lastrowid) from that one trip.

It uses aiosqlite's internals (the connection's thread queue and its raw connection):
pyproject pins aiosqlite below its next minor release, and tests/db exercise this driver on
every run.

A transaction may also hand in the process's writer lock with its deferred BEGIN (db/engine.py
`Database.lazy_writer`): the lock is then taken just before the BEGIN IMMEDIATE travels, and
given back when the transaction ends. A job that does slow outbound work before its first
write holds no lock meanwhile, yet its write queues behind this process's other writers in
order, instead of polling the file lock through SQLite's sleeping busy handler (1 to 100 ms
naps, which left the lock idle while a dozen job transactions slept on it).

The dialect is registered as `sqlite+dutyline`; db/engine.py swaps it in for `sqlite+aiosqlite`
URLs, so configuration keeps the standard URL.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from threading import Thread
from typing import Any

from aiosqlite.core import _STOP_RUNNING_SENTINEL, set_exception, set_result
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)
from sqlalchemy.util.concurrency import await_

from dutyline.db.writer_queue import WriterQueue

_Result = tuple[Any, list[Any], int, int | None]
# As long as SQLite's own busy timeout (db/engine.py): a writer that cannot get the lock in
# that time fails the same way SQLite would, instead of waiting forever.
WRITER_LOCK_WAIT_S = 10.0


def _run(
    raw: sqlite3.Connection, begin: str | None, operation: str, parameters: Any, many: bool
) -> _Result:
    if begin is not None:
        raw.execute(begin)
    cursor = raw.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        else:
            cursor.execute(operation, () if parameters is None else parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


async def _on_thread(connection: Any, fn: Callable[..., _Result], *args: Any) -> _Result:
    """aiosqlite's `_execute`, except that an answer for an event loop that has ended is
    dropped: a statement cancelled as its loop ends (a server stopping) still finishes on the
    thread, and aiosqlite's own answer would raise there, ending the thread before the close
    queued behind the statement, with the file left open."""
    if not connection._running or not connection._connection:
        raise ValueError("Connection closed")
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_Result] = loop.create_future()

    def answer(setter: Callable[[asyncio.Future[_Result], Any], None], value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(setter, future, value)

    def call() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # as aiosqlite does: every failure goes to the caller
            answer(set_exception, exc)
        else:
            answer(set_result, result)

    connection._tx.put_nowait((None, call))
    return await future


class OneHopCursor(AsyncAdapt_aiosqlite_cursor):
    __slots__ = ("_description", "_lastrowid", "_rowcount")

    def __init__(self, adapt_connection: Any) -> None:
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]  # no aiosqlite cursor: see module doc
        self._soft_closed_memoized = {}  # type: ignore[assignment]
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> int:
        return self._lastrowid  # type: ignore[return-value]

    @property
    def arraysize(self) -> int:
        return 1

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        return None

    async def _one_hop(self, operation: str, parameters: Any, many: bool) -> None:
        connection: Any = self._connection
        adapt: Any = self._adapt_connection
        if adapt._pending_begin is not None and adapt._pending_lock is not None:
            await adapt.take_writer_lock()
        async with adapt._execute_mutex:
            begin, adapt._pending_begin = adapt._pending_begin, None
            # From here on a real rollback/commit is due even if the statement fails: the
            # BEGIN may have run (and a rollback without a transaction is harmless).
            result: _Result = await _on_thread(
                connection, _run, connection._conn, begin, operation, parameters, many
            )
        self._description, rows, self._rowcount, self._lastrowid = result
        self._rows = collections.deque(rows)

    async def _execute_async(self, operation: Any, parameters: Any) -> Any:
        await self._one_hop(operation, parameters, False)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Any) -> Any:
        await self._one_hop(operation, seq_of_parameters, True)

    async def _async_soft_close(self) -> None:
        return None

    def close(self) -> None:
        self._rows.clear()

    def fetchall(self) -> Sequence[Any]:
        rows = list(self._rows)
        self._rows.clear()
        return rows


class OneHopConnection(AsyncAdapt_aiosqlite_connection):
    """Also defers BEGIN: it travels with the transaction's first statement, saving a hop."""

    __slots__ = ("_held_lock", "_pending_begin", "_pending_lock")
    _cursor_cls = OneHopCursor

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self._pending_begin: str | None = None
        self._pending_lock: WriterQueue | None = None
        self._held_lock: WriterQueue | None = None

    def defer_begin(self, statement: str, writer_lock: WriterQueue | None = None) -> None:
        self._pending_begin = statement
        self._pending_lock = writer_lock

    async def take_writer_lock(self) -> None:
        lock, self._pending_lock = self._pending_lock, None
        assert lock is not None
        try:
            await asyncio.wait_for(lock.acquire(), WRITER_LOCK_WAIT_S)
        except TimeoutError:
            raise sqlite3.OperationalError(
                "database is locked (this process's other writers held it too long)") from None
        self._held_lock = lock

    def _end(self) -> bool:
        """True when a transaction really began (a statement ran) and must be ended."""
        began = self._pending_begin is None
        self._pending_begin = self._pending_lock = None
        return began

    def _release_writer_lock(self) -> None:
        lock, self._held_lock = self._held_lock, None
        if lock is not None:
            lock.release()

    def commit(self) -> None:
        # A transaction that ran no statement never began: nothing to commit.
        try:
            if self._end():
                super().commit()
        finally:
            self._release_writer_lock()

    def rollback(self) -> None:
        try:
            if self._end():
                super().rollback()
        finally:
            self._release_writer_lock()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._release_writer_lock()

    def terminate(self) -> None:
        # SQLite has no server to say goodbye to: closing the file on the connection's own
        # thread is the whole of a terminate, and its queue runs that close after whatever
        # is in flight. SQLAlchemy's graceful terminate instead awaits the close in a
        # shielded task that outlives its cancelled caller; when the event loop ends first
        # (a server stopping, a test ending) that task is left suspended and collected later
        # mid-await (or waits forever on a thread that already stopped). So the close is
        # queued here with no future to answer, and nothing waits for it.
        try:
            raw = self._connection._connection
            if raw is not None:
                raw.interrupt()  # the statement in flight, if any, ends now (thread-safe)
            _stop_without_answer(self._connection)
        finally:
            self._release_writer_lock()


def _stop_without_answer(connection: Any) -> None:
    """aiosqlite's `Connection.stop`, less the future it answers on the caller's loop."""
    connection._running = False

    def close_and_stop() -> object:
        raw, connection._connection = connection._connection, None
        # The thread must end whatever the close did, so no error leaves this function.
        with contextlib.suppress(sqlite3.Error):
            if raw is not None:
                raw.close()
        return _STOP_RUNNING_SENTINEL

    connection._tx.put_nowait((None, close_and_stop))


class OneHopDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> OneHopConnection:
        connection = self.aiosqlite.connect(*arg, **kw)
        thread = connection if isinstance(connection, Thread) else connection._thread
        thread.daemon = True
        try:
            opened = await_(connection)
        except BaseException:
            # aiosqlite tells the thread of a connection it could not open to stop, but does
            # not wait for it. Left alone, that thread may call back into the event loop after
            # the loop has closed (a server shutting down, a test ending) and die there with
            # "Event loop is closed"; so it is waited for here, off the loop.
            if thread.is_alive():
                await_(asyncio.get_running_loop().run_in_executor(None, thread.join))
            raise
        return OneHopConnection(self, opened)


class DutylineSQLiteDialect(SQLiteDialect_aiosqlite):
    driver = "dutyline"
    # Compilation is the parent's; only the cursor differs, so the statement cache applies.
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> OneHopDBAPI:
        return OneHopDBAPI(__import__("aiosqlite"), __import__("sqlite3"))


registry.register("sqlite.dutyline", "dutyline.db.sqlite_driver", "DutylineSQLiteDialect")
