"""Change signals: how a per-process cache learns, within a second, that a write made it stale.

A cache that keeps something read from the database (resolved app keys, rendered status
pages) keys each entry with the version of a *name* ("auth", "status_page:<id>") read before
the data, and trusts the entry only while that version is unchanged. Every write that changes
what such an entry shows calls `bump(conn, name)` inside its own transaction:

- in this process, the name's version moves when the transaction commits (db/commit_hooks.py,
  never for a rollback);
- on PostgreSQL, the transaction sends `NOTIFY dutyline_signal, '<name>'`; PostgreSQL delivers
  it only after the commit, to every process's listener (its own included, which closes the
  gap between the commit hook, run just before the commit, and the commit itself);
- on SQLite, the transaction increments the name's row of `change_signal`, and the row "*"
  with it; each process reads "*" (one primary-key lookup) every `POLL_S` and, when it moved,
  the rows, and bumps the names whose version changed.

A version is None while the process cannot vouch for it: before the first poll or listen,
while the listener's connection is lost, or when the last successful poll is older than
`STALE_AFTER_S` (an event loop too busy to poll). Caches then read through and keep nothing.
Whenever the watcher comes back, every name moves at once (the epoch): whatever it may have
missed meanwhile is treated as changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from sqlalchemy import Connection, Engine, bindparam, event, select, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Insert, UpdateBase

from dutyline.db import commit_hooks
from dutyline.db.tables.signals import change_signal

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    class Database(Protocol):
        """What the watcher needs of db/engine.py's Database (which installs this module's
        statement hook, so it is not imported here)."""

        @property
        def is_postgres(self) -> bool: ...

        def connect(self) -> AbstractAsyncContextManager[AsyncConnection]: ...

log = structlog.get_logger("dutyline.signals")

CHANNEL = "dutyline_signal"
TOPIC = "change_signal"
ANY = "*"
AUTH = "auth"
POLL_S = 0.25
STALE_AFTER_S = 1.0
RELISTEN_S = 0.5
_NAMES = "dutyline.signal_names"

Version = tuple[int, int]

_SQLITE_BUMP = text(
    "INSERT INTO change_signal (name, version) VALUES (:name, 1) "
    "ON CONFLICT (name) DO UPDATE SET version = change_signal.version + 1"
)
_PG_NOTIFY = text("SELECT pg_notify(:channel, :name)")
_POLL_ANY = select(change_signal.c.version).where(change_signal.c.name == bindparam("name"))
_POLL_ALL = select(change_signal.c.name, change_signal.c.version)


def page_signal(page_id: int) -> str:
    return f"status_page:{page_id}"


class ChangeSignals:
    """This process's view of the versions, for one database."""

    def __init__(self) -> None:
        self._epoch = 0
        self._counts: dict[str, int] = {}
        self._live_flag = False
        self._became_live = asyncio.Event()
        self._polled_at = 0.0  # monotonic; 0 when the watcher does not poll (PostgreSQL)
        _ALL.add(self)

    @property
    def _live(self) -> bool:
        return self._live_flag

    @_live.setter
    def _live(self, value: bool) -> None:
        self._live_flag = value
        if value:
            self._became_live.set()
        else:
            self._became_live.clear()

    async def until_live(self) -> None:
        """Until the watcher follows the signals (caches keep nothing before)."""
        await self._became_live.wait()

    def version(self, name: str) -> Version | None:
        if not self._live_flag:
            return None
        if self._polled_at and time.monotonic() - self._polled_at > STALE_AFTER_S:
            return None
        return (self._epoch, self._counts.get(name, 0))

    def moved(self, name: str) -> None:
        self._counts[name] = self._counts.get(name, 0) + 1

    def drop_all(self) -> None:
        self._epoch += 1

    # --- the watcher: one background task per process and database -------------------

    async def watch(self, db: Database) -> None:
        """Until cancelled: follow other processes' bumps (LISTEN or polling)."""
        try:
            if db.is_postgres:
                await self._listen(db)
            else:
                await self._poll(db)
        finally:
            self._live = False

    async def _poll(self, db: Database) -> None:
        seen_any: int | None = None  # None: nothing seen yet (or lost): take all rows
        seen: dict[str, int] = {}
        while True:
            try:
                rows: list[Any] = []
                async with db.connect() as conn:
                    now_any = int((await conn.execute(_POLL_ANY, {"name": ANY})).scalar() or 0)
                    if now_any != seen_any:
                        rows = list((await conn.execute(_POLL_ALL)).all())
                if seen_any is None:
                    seen = {r.name: int(r.version) for r in rows}
                    self.drop_all()
                elif now_any != seen_any:
                    for row in rows:
                        if seen.get(row.name) != int(row.version):
                            self.moved(row.name)
                            seen[row.name] = int(row.version)
                seen_any = now_any
                if not self._live:
                    self.drop_all()
                self._polled_at = time.monotonic()
                self._live = True
            except Exception as exc:  # the next poll tries again; caches read through
                if self._live:
                    log.warning("change signals unreadable; caches read through",
                                cause=repr(exc))
                self._live = False
                seen_any = None
            await asyncio.sleep(POLL_S)

    async def _listen(self, db: Database) -> None:
        while True:
            try:
                await self._listen_once(db)
            except Exception as exc:
                log.warning("change signal listener lost; caches read through",
                            cause=repr(exc))
            self._live = False
            await asyncio.sleep(RELISTEN_S)

    async def _listen_once(self, db: Database) -> None:
        async with db.connect() as conn:
            raw = await conn.get_raw_connection()
            pg = raw.driver_connection
            assert pg is not None
            lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def on_notify(_conn: Any, _pid: int, _channel: str, name: str) -> None:
                self.moved(name)

            def on_lost(*_: Any) -> None:
                if not lost.done():
                    lost.set_result(None)

            await pg.add_listener(CHANNEL, on_notify)
            pg.add_termination_listener(on_lost)
            try:
                # Anything committed while nobody listened is unknown: all of it moved.
                self.drop_all()
                self._live = True
                await lost
            finally:
                self._live = False
                pg.remove_termination_listener(on_lost)
                if not lost.done():
                    with contextlib.suppress(Exception):
                        await pg.remove_listener(CHANNEL, on_notify)


_ALL: weakref.WeakSet[ChangeSignals] = weakref.WeakSet()


async def bump(conn: AsyncConnection, name: str) -> None:
    """Inside the writer's transaction: `name`'s cached entries are stale once it commits,
    in every process. Once per name and transaction, however often it is called."""
    sync = conn.sync_connection
    assert sync is not None
    # The connection's sync side runs on the event loop's greenlet: the statements it sends
    # here are awaited like any other.
    await conn.run_sync(bump_sync, name)


def bump_sync(conn: Connection, name: str) -> None:
    """`bump` for a sync connection (the SQLite writer thread, statement hooks)."""
    names: set[str] = conn.info.setdefault(_NAMES, set())
    if name in names:
        return
    names.add(name)
    if conn.dialect.name == "postgresql":
        conn.execute(_PG_NOTIFY, {"channel": CHANNEL, "name": name})
    elif _has_signal_table(conn):
        conn.execute(_SQLITE_BUMP, {"name": name})
        conn.execute(_SQLITE_BUMP, {"name": ANY})
    commit_hooks.mark(conn, TOPIC)


_with_table: weakref.WeakSet[Engine] = weakref.WeakSet()


def _has_signal_table(conn: Connection) -> bool:
    """False on a database not migrated this far (a migration test writing old rows): no
    process can watch it then either, so every watcher reads through. Only a yes is kept."""
    if conn.engine in _with_table:
        return True
    found = conn.execute(text(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'change_signal'")).first()
    if found is not None:
        _with_table.add(conn.engine)
    return found is not None


# What an app key resolves to is read from these tables (platform/app_key/repository.py,
# the caller query): any insert, update or delete of them, by any code path, bumps "auth".
# Found by statement rather than listed at each writer, so a new writer cannot forget it.
AUTH_TABLES = frozenset({"app_key", "member", "member_role", "role", "role_permission",
                         "account"})
# A console session resolves to its row of this table, then to its member as a key does: its
# cached entries are kept under both "auth" and "session" (web/session_cache.py).
SESSION = "session"
SESSION_TABLES = frozenset({"console_session"})
_SIGNAL_OF = {**dict.fromkeys(AUTH_TABLES, AUTH), **dict.fromkeys(SESSION_TABLES, SESSION)}
# Columns whose writes change nothing an entry resolves to: the batched last-use times of
# keys, and the sliding end of a session seen again (it only ever moves later, so an entry
# holding the earlier end is read again when that passes, never trusted past the real one).
_QUIET_COLUMNS = {AUTH: frozenset({"last_used_at"}),
                  SESSION: frozenset({"last_seen_at", "expires_at"})}
# A new session row makes no kept session stale (only positive lookups are kept), so a
# sign-in leaves every process's sessions in place.
_QUIET_INSERTS = frozenset({SESSION})


def _after_execute(conn: Connection, clause: Any, *args: Any) -> None:
    if not isinstance(clause, UpdateBase):
        return
    result = args[-1] if args else None
    if getattr(result, "rowcount", -1) == 0:
        return  # no row written (ending a person's expired sessions when there are none)
    table = getattr(clause, "table", None)
    name = _SIGNAL_OF.get(getattr(table, "name", None) or "") if table is not None else None
    if name is None:
        return
    if (name in _QUIET_INSERTS and isinstance(clause, Insert)
            and getattr(clause, "_post_values_clause", None) is None):  # not an upsert
        return
    values = getattr(clause, "_values", None)
    if values and {getattr(c, "key", c) for c in values} <= _QUIET_COLUMNS[name]:
        return
    bump_sync(conn, name)


def install(engine: Engine) -> None:
    """Watch `engine`'s statements for writes to the tables of a signal (once per engine)."""
    event.listen(engine, "after_execute", _after_execute)


# name -> how many transactions of this process committed a bump of it (for tests and
# diagnostics: what a write here did, whether or not a watcher is running).
_committed_here: dict[str, int] = {}


def committed_here(name: str) -> int:
    return _committed_here.get(name, 0)


def _committed(conn: Connection) -> None:
    names: set[str] = conn.info.pop(_NAMES, set())
    for name in names:
        _committed_here[name] = _committed_here.get(name, 0) + 1
    for signals in list(_ALL):
        for name in names:
            signals.moved(name)


def _rolled_back(conn: Connection) -> None:
    conn.info.pop(_NAMES, None)


commit_hooks.subscribe_with_connection(TOPIC, _committed, _rolled_back)
