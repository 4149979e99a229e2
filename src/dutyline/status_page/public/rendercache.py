"""The in-process cache of rendered public pages and feeds.

An entry is keyed by (page_id, what) and remembers the page's cache version in this process
(`status_page.cache.version`, moved by every write here) and the page's `updated_at` (bumped by
every write anywhere), as read before the data it shows. A view reads the page's head row
(one indexed lookup), and the entry holds only while both still match. So a change shows on the
next view, in this process at once and in every other process as soon as its commit is visible.

Two edges need more than that:
- `updated_at` has one-second steps and a write never moves it backwards, so a second write
  within the same second as the first leaves it unchanged. An entry rendered in that same
  second could miss it, so it is not trusted: it is only served when it was rendered in a
  later second than the `updated_at` it saw.
- What a page shows also moves with time alone (the 90-day window, today's bar), so entries
  expire after MAX_AGE_S.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from dutyline.status_page import cache as page_cache

MAX_AGE_S = 60
MAX_ENTRIES = 512


@dataclass(frozen=True)
class Rendered:
    body: bytes
    etag: str
    version: int
    updated_at: int
    rendered_at: int


class RenderCache:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[int, str], Rendered] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, page_id: int, what: str, *, updated_at: int, now_s: int) -> Rendered | None:
        key = (page_id, what)
        entry = self._entries.get(key)
        if (
            entry is None
            or entry.version != page_cache.version(page_id)
            or entry.updated_at != updated_at
            or entry.rendered_at <= entry.updated_at
            or now_s - entry.rendered_at >= MAX_AGE_S
        ):
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def put(
        self, page_id: int, what: str, body: bytes, *, version: int, updated_at: int, now_s: int
    ) -> Rendered:
        etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
        entry = Rendered(body, etag, version, updated_at, now_s)
        key = (page_id, what)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return entry

    def clear(self) -> None:
        self._entries.clear()
