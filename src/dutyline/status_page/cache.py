"""Invalidation of the public page cache.

Every write that changes what a page's visitors see (the page, its sections and components,
its changes and their timelines) calls `invalidate(conn, page_id)` inside its transaction:
it bumps the page's change signal (db/signals.py), so every process's rendering of the page,
and the page's address lookup, is stale within a second of the commit."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db import signals


def version(page_id: int) -> int:
    """How many committed transactions of this process invalidated the page."""
    return signals.committed_here(signals.page_signal(page_id))


async def invalidate(conn: AsyncConnection, page_id: int) -> None:
    """Mark every cached rendering of the page stale, in every process, once `conn` commits."""
    await signals.bump(conn, signals.page_signal(page_id))
