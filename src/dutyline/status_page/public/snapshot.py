"""What the public pages show, read through the page, change and subscriber repositories.
They read by the page's public address, never by account: the page itself is what is
public, and nothing here reaches another page's rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.status_page.change import repository as change_repo
from dutyline.status_page.page import repository as page_repo

HISTORY_DAYS = 90
RECENT_CHANGES = 20
FEED_ITEMS = 50


@dataclass(frozen=True)
class PageHead:
    """What a view needs before deciding whether a cached rendering still holds."""

    page_id: int
    account_id: int
    url_name: str
    page_type: str
    status: str
    access_token_hash: str
    updated_at: int
    row: Row[Any]


@dataclass
class Snapshot:
    page: Row[Any]
    sections: list[Row[Any]]
    components: list[Row[Any]]
    active: list[Row[Any]]
    recent: list[Row[Any]]
    # change_id -> its timeline, newest first
    updates: dict[int, list[Row[Any]]]
    # (start_at_seconds, type) of every change that started in the history window
    history: list[tuple[int, str]]


async def page_head(conn: AsyncConnection, url_name: str) -> PageHead | None:
    # The whole row (a few hundred bytes): a cold render then needs no second look at it.
    row = await page_repo.page_by_url_name(conn, url_name)
    if row is None:
        return None
    return PageHead(int(row.page_id), int(row.account_id), row.url_name, row.page_type,
                    row.status, row.access_token_hash, int(row.updated_at), row)


async def _page(conn: AsyncConnection, page_id: int) -> Row[Any]:
    page = await page_repo.page_by_id(conn, page_id)
    if page is None:  # deleted since its head was read: the view fails (500), as any race
        raise LookupError(f"status page {page_id} is gone")
    return page


async def _timelines(conn: AsyncConnection, changes: list[Row[Any]]
                     ) -> dict[int, list[Row[Any]]]:
    """Each change's timeline entries, newest first (the repository's order, reversed)."""
    entries = await change_repo.entries(conn, [int(c.change_id) for c in changes])
    return {int(cid): es[::-1] for cid, es in entries.items()}


async def snapshot(
    conn: AsyncConnection, page_id: int, *, now_s: int, page: Row[Any] | None = None
) -> Snapshot:
    """Everything the page shows, in six indexed queries whatever the page's size (five when
    the caller already holds the page's row)."""
    if page is None:
        page = await _page(conn, page_id)
    sections = await page_repo.sections(conn, page_id)
    components = [c for c in await page_repo.components(conn, page_id) if not c.hide_all]
    active = await change_repo.open_changes_of_page(conn, page_id)
    since = now_s - HISTORY_DAYS * 86_400
    history = await change_repo.starts_between(conn, page_id, since, now_s)
    recent = await change_repo.recent_closed_changes(conn, page_id, since, RECENT_CHANGES)
    return Snapshot(
        page=page, sections=sections, components=components, active=active, recent=recent,
        updates=await _timelines(conn, [*active, *recent]), history=history,
    )


async def feed_items(
    conn: AsyncConnection, page_id: int
) -> tuple[Row[Any], list[Row[Any]], dict[int, list[Row[Any]]]]:
    page = await _page(conn, page_id)
    changes = await change_repo.latest_changes(conn, page_id, FEED_ITEMS)
    return page, changes, await _timelines(conn, changes)
