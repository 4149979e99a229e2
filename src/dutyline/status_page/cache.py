"""Invalidation hook for the public page cache.

Every write that changes what a page's visitors see (the page, its sections and components,
its changes and their timelines) calls `invalidate(page_id)`. The counter is in-process: a
renderer caches under `version(page_id)` and re-renders when it moves.

Across processes, and to close the window between this call (made inside the writer's
transaction) and the commit, the same writes bump `status_page.updated_at`; a renderer that
keys its cache on (version, updated_at) re-renders whenever either moves."""

from __future__ import annotations

_versions: dict[int, int] = {}


def version(page_id: int) -> int:
    """The page's current cache version in this process (0 until its first write)."""
    return _versions.get(page_id, 0)


def invalidate(page_id: int) -> None:
    """Mark every cached rendering of the page stale in this process."""
    _versions[page_id] = _versions.get(page_id, 0) + 1
