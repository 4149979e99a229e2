"""Every query the public pages make. They read by the page's public address, never by
account: the page itself is what is public, and nothing here reaches another page's rows."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.status_page import (
    status_change,
    status_change_update,
    status_component,
    status_page,
    status_section,
    status_subscriber,
)

ACTIVE_STATUSES = ("investigating", "identified", "monitoring", "scheduled", "ongoing")
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
    row = (await conn.execute(
        select(status_page).where(status_page.c.url_name == url_name)
    )).first()
    if row is None:
        return None
    return PageHead(int(row.page_id), int(row.account_id), row.url_name, row.page_type,
                    row.status, row.access_token_hash, int(row.updated_at), row)


async def _updates_of(conn: AsyncConnection, change_ids: list[int]) -> dict[int, list[Row[Any]]]:
    by_change: dict[int, list[Row[Any]]] = defaultdict(list)
    if not change_ids:
        return by_change
    rows = await conn.execute(
        select(status_change_update)
        .where(status_change_update.c.change_id.in_(change_ids))
        .order_by(status_change_update.c.change_id, status_change_update.c.at_seconds.desc(),
                  status_change_update.c.seq.desc())
    )
    for row in rows:
        by_change[int(row.change_id)].append(row)
    return by_change


async def snapshot(
    conn: AsyncConnection, page_id: int, *, now_s: int, page: Row[Any] | None = None
) -> Snapshot:
    """Everything the page shows, in six indexed queries whatever the page's size (five when
    the caller already holds the page's row)."""
    if page is None:
        page = (await conn.execute(
            select(status_page).where(status_page.c.page_id == page_id)
        )).one()
    sections = list((await conn.execute(
        select(status_section).where(status_section.c.page_id == page_id)
        .order_by(status_section.c.order_id, status_section.c.created_at)
    )).all())
    components = list((await conn.execute(
        select(status_component)
        .where(status_component.c.page_id == page_id, status_component.c.hide_all.is_(False))
        .order_by(status_component.c.order_id, status_component.c.created_at)
    )).all())
    active = list((await conn.execute(
        select(status_change)
        .where(status_change.c.page_id == page_id,
               status_change.c.status.in_(ACTIVE_STATUSES))
        .order_by(status_change.c.start_at_seconds.desc())
    )).all())
    since = now_s - HISTORY_DAYS * 86_400
    history_rows = (await conn.execute(
        select(status_change.c.start_at_seconds, status_change.c.type)
        .where(status_change.c.page_id == page_id, status_change.c.start_at_seconds >= since,
               status_change.c.start_at_seconds <= now_s)
    )).all()
    recent = list((await conn.execute(
        select(status_change)
        .where(status_change.c.page_id == page_id,
               status_change.c.status.not_in(ACTIVE_STATUSES),
               status_change.c.start_at_seconds >= since)
        .order_by(status_change.c.start_at_seconds.desc())
        .limit(RECENT_CHANGES)
    )).all())
    updates = await _updates_of(conn, [int(c.change_id) for c in (*active, *recent)])
    return Snapshot(
        page=page, sections=sections, components=components, active=active, recent=recent,
        updates=updates,
        history=[(int(r.start_at_seconds), str(r.type)) for r in history_rows],
    )


async def feed_items(
    conn: AsyncConnection, page_id: int
) -> tuple[Row[Any], list[Row[Any]], dict[int, list[Row[Any]]]]:
    page = (await conn.execute(
        select(status_page).where(status_page.c.page_id == page_id)
    )).one()
    changes = list((await conn.execute(
        select(status_change).where(status_change.c.page_id == page_id)
        .order_by(status_change.c.start_at_seconds.desc()).limit(FEED_ITEMS)
    )).all())
    return page, changes, await _updates_of(conn, [int(c.change_id) for c in changes])


# --- subscribers ------------------------------------------------------------------------

async def subscriber_by_email(
    conn: AsyncConnection, page_id: int, email: str
) -> Row[Any] | None:
    return (await conn.execute(
        select(status_subscriber)
        .where(status_subscriber.c.page_id == page_id, status_subscriber.c.email == email)
    )).first()


async def subscriber_by_id(conn: AsyncConnection, subscriber_id: str) -> Row[Any] | None:
    return (await conn.execute(
        select(status_subscriber).where(status_subscriber.c.subscriber_id == subscriber_id)
    )).first()


async def subscriber_by_token(
    conn: AsyncConnection, page_id: int, *, confirm_hash: str | None = None,
    unsubscribe_hash: str | None = None,
) -> Row[Any] | None:
    stmt = select(status_subscriber).where(status_subscriber.c.page_id == page_id)
    if confirm_hash is not None:
        stmt = stmt.where(status_subscriber.c.confirm_token_hash == confirm_hash)
    elif unsubscribe_hash is not None:
        stmt = stmt.where(status_subscriber.c.unsubscribe_token_hash == unsubscribe_hash)
    else:
        raise ValueError("a token hash is required")
    return (await conn.execute(stmt)).first()


async def insert_subscriber(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(status_subscriber).values(**values))


async def update_subscriber(
    conn: AsyncConnection, subscriber_id: str, values: dict[str, Any]
) -> None:
    await conn.execute(
        update(status_subscriber)
        .where(status_subscriber.c.subscriber_id == subscriber_id).values(**values)
    )


async def page_by_id(conn: AsyncConnection, page_id: int) -> Row[Any] | None:
    return (await conn.execute(
        select(status_page).where(status_page.c.page_id == page_id)
    )).first()
