"""The in-process cache of public pages: each page's head row by address, and the rendered
page and feeds, so that a view of a cached page touches no database.

Every entry remembers the version of its page's change signal (db/signals.py), read before
the data it holds, and holds only while that version is unchanged: a write to the page, its
components or its changes bumps it in every process within a second. While the process
cannot vouch for the signal (its watcher not yet, or no longer, following it), the version
is None and nothing is kept: every view reads the database, as with no cache.

What a page shows also moves with time alone (the 90-day window, today's bar, the time it
was generated), so rendered entries expire after MAX_AGE_S whatever the signal says.

When an entry goes stale under a flood of views, every view in flight misses at once: they
share one read and rendering per page and version (`SingleFlight`) instead of each making
its own.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from email.utils import formatdate
from typing import Generic, TypeVar

from dutyline.db.signals import Version

MAX_AGE_S = 60
MAX_ENTRIES = 512
MAX_HEADS = 4096

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class Rendered:
    body: bytes
    etag: str
    version: Version
    rendered_at: int
    # Unix seconds for Last-Modified: never the same for two different bodies of the page
    # in this process, so If-Modified-Since cannot hide a change made within one second.
    last_modified: int
    # The same as an HTTP date, made once (formatting it costs a third of a cached hit).
    last_modified_http: str


class _Bounded(Generic[K, V]):
    """At most `size` entries, the least recently used dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def put(self, key: K, value: V) -> None:
        self.entries[key] = value
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


class RenderCache:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._rendered: _Bounded[tuple[int, str], Rendered] = _Bounded(max_entries)
        self.hits = 0
        self.misses = 0

    def get(self, page_id: int, what: str, *, version: Version | None,
            now_s: int) -> Rendered | None:
        entry = self.peek(page_id, what, version=version, now_s=now_s)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def peek(self, page_id: int, what: str, *, version: Version | None,
             now_s: int) -> Rendered | None:
        """`get` without counting (the caller counts what it serves)."""
        entry = self._rendered.get((page_id, what))
        if (
            entry is None
            or version is None
            or entry.version != version
            or now_s - entry.rendered_at >= MAX_AGE_S
        ):
            return None
        return entry

    def put(
        self, page_id: int, what: str, body: bytes, *, version: Version | None, now_s: int
    ) -> Rendered:
        etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
        before = self._rendered.entries.get((page_id, what))
        if before is not None and before.etag == etag:
            last_modified = before.last_modified
        elif before is not None and before.last_modified >= now_s:
            last_modified = before.last_modified + 1
        else:
            last_modified = now_s
        entry = Rendered(body, etag, version or (-1, -1), now_s, last_modified,
                         formatdate(last_modified, usegmt=True))
        if version is not None:
            self._rendered.put((page_id, what), entry)
        return entry

    def clear(self) -> None:
        self._rendered.entries.clear()


class HeadCache(Generic[V]):
    """Page head rows by address, each under its page's signal version."""

    def __init__(self, size: int = MAX_HEADS) -> None:
        self._heads: _Bounded[str, tuple[Version | None, V]] = _Bounded(size)

    def get(self, url_name: str) -> tuple[Version | None, V] | None:
        return self._heads.get(url_name)

    def put(self, url_name: str, version: Version | None, head: V) -> None:
        """`version` None: the head's page is known, but not a version read before it."""
        self._heads.put(url_name, (version, head))


class SingleFlight(Generic[V]):
    """Concurrent calls with the same key share one run of the first caller's function. A
    key names what is read and the version read before it, so that a call made after a
    change seen here never gets a read begun before it; without a version (None), a call
    gets a read begun at most one read's time earlier, and the next call reads again."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Task[V]] = {}
        self.shared = 0  # calls answered by another's run (for tests and diagnostics)

    async def run(self, key: Hashable, fn: Callable[[], Awaitable[V]]) -> V:
        task = self._running.get(key)
        if task is None:
            task = asyncio.ensure_future(fn())
            self._running[key] = task
            task.add_done_callback(lambda done: self._done(key, done))
        else:
            self.shared += 1
        # One caller going away (a closed connection) does not cancel the others' answer.
        return await asyncio.shield(task)

    def _done(self, key: Hashable, task: asyncio.Task[V]) -> None:
        if self._running.get(key) is task:
            del self._running[key]
        if not task.cancelled():
            task.exception()  # retrieved here: a failure is raised to each caller
