"""Live views of incidents (the console's list): learning, soon after it commits, that an
incident of an account changed, whichever process changed it.

Every change is an `incident_event` row written in the transaction of the change (events.py).
A live view reads the rows past the last one it saw (query/service.incident_changes); this
module only tells it when to look again:

- PostgreSQL: inserting an event also NOTIFYs `repository.LIVE_CHANNEL` with the account id,
  which PostgreSQL delivers to every listening process once the transaction commits (never
  for a rollback). Each process listens on one connection of its own, and only while some
  view watches.
- SQLite has no way to tell another process. While a view watches, one task per process reads
  the ids of the events past the last it saw every `POLL_S`: a range of the primary key, so
  nothing to read most of the time. It sees this process's own commits the same way (a hook
  run at commit would fire just before the rows are there for other connections).

A ring says "look", never what changed: a lost ring (a listener reconnecting) is made good by
the next one or by the view's own periodic look, and a view that looks for nothing reads an
empty range."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import structlog

from dutyline.db.engine import Database
from dutyline.incident import repository as repo

log = structlog.get_logger("dutyline.incident.live")

POLL_S = 0.25  # SQLite: other processes' events reach a view within this (and a read)
RELISTEN_S = 1.0
_POLL_BATCH = 1_000


class Watch:
    """One view's doorbell, for the incidents of one account."""

    def __init__(self, account_id: int) -> None:
        self.account_id = account_id
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def ring(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to wake
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self) -> None:
        """Until rung (callers bound it with a timeout); then ready for the next ring."""
        await self._event.wait()
        self._event.clear()


class EventWatch:
    """The process's watchers of incident events, and the one task that rings them while
    there are any."""

    def __init__(self, db: Database, *, poll_s: float = POLL_S) -> None:
        self.db = db
        self.poll_s = poll_s
        self._watches: set[Watch] = set()
        self._task: asyncio.Task[None] | None = None
        # Set once the task listens (or has read where its poll starts): what commits after
        # it rings. Tests wait on it; views need not, they read past their own cursor.
        self.ready = asyncio.Event()

    @contextlib.asynccontextmanager
    async def watch(self, account_id: int) -> AsyncIterator[Watch]:
        watch = Watch(account_id)
        self._watches.add(watch)
        self._start()
        try:
            yield watch
        finally:
            self._watches.discard(watch)
            if not self._watches:
                self._stop()

    @property
    def watching(self) -> int:
        return len(self._watches)

    def ring(self, account_id: int | None = None) -> None:
        """Ring the watchers of `account_id`, or all of them."""
        for watch in list(self._watches):
            if account_id is None or watch.account_id == account_id:
                watch.ring()

    def _start(self) -> None:
        if self._task is not None and not self._task.done():
            return
        run = self._listen if self.db.is_postgres else self._poll
        self._task = asyncio.get_running_loop().create_task(run())

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self.ready.clear()

    async def close(self) -> None:
        task = self._task
        self._stop()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _poll(self) -> None:
        last: int | None = None
        while True:
            try:
                async with self.db.connect() as conn:
                    if last is None:
                        last = await repo.last_event_id(conn)
                        self.ready.set()
                    while True:
                        rows = await repo.events_after(conn, last, limit=_POLL_BATCH)
                        for account_id in {r.account_id for r in rows}:
                            self.ring(account_id)
                        if rows:
                            last = rows[-1].id
                        if len(rows) < _POLL_BATCH:
                            break
            except Exception as exc:  # keep polling: a missed look only delays a view
                log.warning("incident event poll failed", cause=repr(exc))
            await asyncio.sleep(self.poll_s)

    async def _listen(self) -> None:
        while True:
            try:
                await self._listen_once()
            except Exception as exc:
                log.warning("incident event listener failed; listening again",
                            cause=repr(exc))
            await asyncio.sleep(RELISTEN_S)

    async def _listen_once(self) -> None:
        async with self.db.connect() as conn:
            raw = await conn.get_raw_connection()
            pg = raw.driver_connection
            assert pg is not None
            lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def on_notify(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
                self.ring(int(payload) if payload.isdigit() else None)

            def on_lost(*_: Any) -> None:
                if not lost.done():
                    lost.set_result(None)

            await pg.add_listener(repo.LIVE_CHANNEL, on_notify)
            pg.add_termination_listener(on_lost)
            self.ready.set()
            try:
                self.ring()  # whatever committed while nobody listened
                await lost
            finally:
                pg.remove_termination_listener(on_lost)
                if not lost.done():
                    with contextlib.suppress(Exception):
                        await pg.remove_listener(repo.LIVE_CHANNEL, on_notify)


# On PostgreSQL an event's id is taken when it is inserted, not when it commits: a view that
# read up to id 120 can still see 118 commit after. So a view reads again this many ids back
# and skips the ones it has seen. On SQLite writers take turns, ids commit in order.
LOOKBACK_IDS = 1_000


class LiveCursor:
    """Where a live view has read the event stream up to, and the recent events it saw."""

    def __init__(self, last_id: int, *, lookback: int = 0) -> None:
        self.last_id = last_id
        self.lookback = lookback
        self._seen: set[int] = set()

    def since(self) -> int:
        return max(0, self.last_id - self.lookback)

    def take(self, rows: list[Any]) -> list[Any]:
        """The rows (read past `since()`, oldest first) not seen before; moves past them."""
        fresh = [r for r in rows if r.id not in self._seen and
                 (self.lookback or r.id > self.last_id)]
        if rows:
            self.last_id = max(self.last_id, rows[-1].id)
        if self.lookback:
            self._seen.update(r.id for r in fresh)
            floor = self.since()
            self._seen = {i for i in self._seen if i > floor}
        return fresh


_watches: weakref.WeakKeyDictionary[Database, EventWatch] = weakref.WeakKeyDictionary()


def for_database(db: Database) -> EventWatch:
    """The process's watch over `db`'s incident events (one per database, made when first
    asked for)."""
    found = _watches.get(db)
    if found is None:
        found = _watches[db] = EventWatch(db)
    return found


FEED_BATCH = 500  # events read at once by a feed
KEPT_BATCHES = 64  # a view further behind than this starts again (the browser reconnects)


@dataclass(eq=False)
class Batch:
    """Changes read once for every live view of an account in this process."""

    seq: int
    rows: list[Any]  # event rows (id, incident_id, kind), oldest first
    last_id: int  # the feed's position after them
    # What the views compute once from this batch (rows and counts per kind of reader):
    # dropped with the batch.
    shared: dict[Any, asyncio.Future[Any]] = field(default_factory=dict)


class AccountFeed:
    """One task per account and process that reads the account's new events once per ring and
    keeps the last KEPT_BATCHES batches for the views following it."""

    def __init__(self, events: EventWatch, account_id: int, *, recheck_s: float) -> None:
        self.events = events
        self.account_id = account_id
        self.recheck_s = recheck_s
        self.cursor: LiveCursor | None = None
        self.batches: deque[Batch] = deque(maxlen=KEPT_BATCHES)
        self.seq = 0
        self.followers = 0
        self.ready = asyncio.Event()
        self._news = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def since(self, seq: int) -> list[Batch] | None:
        """The batches after `seq`; None when some of them are no longer kept."""
        if seq >= self.seq:
            return []
        if not self.batches or self.batches[0].seq > seq + 1:
            return None
        return [b for b in self.batches if b.seq > seq]

    async def wait(self, seq: int, within_s: float) -> None:
        """Until a batch past `seq` is read, at most `within_s` seconds."""
        news = self._news
        if self.seq > seq:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, within_s)):
                await news.wait()

    async def _run(self) -> None:
        async with self.events.watch(self.account_id) as bell:
            while True:
                try:
                    await self._read()
                except Exception as exc:  # read again at the next ring or recheck
                    log.warning("incident feed read failed", cause=repr(exc))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.recheck_s):
                        await bell.wait()

    async def _read(self) -> None:
        async with self.events.db.transaction(write=False) as conn:
            if self.cursor is None:
                lookback = LOOKBACK_IDS if self.events.db.is_postgres else 0
                self.cursor = LiveCursor(await repo.last_event_id(conn), lookback=lookback)
                self.ready.set()
            cursor = self.cursor
            while True:
                rows = await repo.events_after(conn, cursor.since(),
                                               account_id=self.account_id,
                                               limit=cursor.lookback + FEED_BATCH)
                fresh = cursor.take(rows)
                if fresh:
                    self.seq += 1
                    self.batches.append(Batch(self.seq, fresh, cursor.last_id))
                    self._news.set()
                    self._news = asyncio.Event()
                if len(rows) < cursor.lookback + FEED_BATCH:
                    return


class Feeds:
    """The process's account feeds over one database, each running while some view
    follows it."""

    def __init__(self, events: EventWatch) -> None:
        self.events = events
        self._feeds: dict[int, AccountFeed] = {}

    @contextlib.asynccontextmanager
    async def follow(self, account_id: int, *, recheck_s: float) -> AsyncIterator[AccountFeed]:
        feed = self._feeds.get(account_id)
        if feed is None:
            feed = self._feeds[account_id] = AccountFeed(self.events, account_id,
                                                         recheck_s=recheck_s)
        feed.followers += 1
        feed.start()
        try:
            await feed.ready.wait()
            yield feed
        finally:
            feed.followers -= 1
            if not feed.followers:
                feed.stop()
                if self._feeds.get(account_id) is feed:
                    del self._feeds[account_id]


_feeds: weakref.WeakKeyDictionary[Database, Feeds] = weakref.WeakKeyDictionary()


def feeds_for(db: Database) -> Feeds:
    """The process's account feeds over `db`."""
    found = _feeds.get(db)
    if found is None:
        found = _feeds[db] = Feeds(for_database(db))
    return found
