"""Every query of subscribers, scoped by page (whose account the caller already proved, or
whose public address the visitor named)."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Connection, Select, bindparam, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.status_page import status_subscriber

CONFIRMED = "confirmed"


@cache
def _confirmed_statements(components: int) -> tuple[Select[Any], Select[Any]]:
    """The (count, page) queries of confirmed subscribers following every component or one
    of `components` ids (bound as patterns "c0", "c1", ...), built once per count."""
    conditions = [status_subscriber.c.page_id == bindparam("page_id"),
                  status_subscriber.c.status == CONFIRMED]
    if components:
        conditions.append(or_(
            status_subscriber.c.component_ids == "[]",
            *(status_subscriber.c.component_ids.like(bindparam(f"c{i}"))
              for i in range(components))))
    count = select(func.count()).select_from(status_subscriber).where(*conditions)
    page = (select(status_subscriber).where(*conditions).order_by(status_subscriber.c.email)
            .offset(bindparam("offset")).limit(bindparam("limit")))
    return count, page


def confirmed_page_sync(
    conn: Connection, page_id: int, *, component_ids: list[str], offset: int, limit: int
) -> tuple[int, list[Row[Any]]]:
    count, page = _confirmed_statements(len(component_ids))
    params: dict[str, Any] = {"page_id": page_id, "offset": offset, "limit": limit}
    # Component ids are [0-9a-f]: the LIKE pattern needs no escape.
    params.update({f"c{i}": f'%"{cid}"%' for i, cid in enumerate(component_ids)})
    total = conn.execute(count, params).scalar_one()
    rows = conn.execute(page, params)
    return int(total), list(rows.all())


async def confirmed_page(
    conn: AsyncConnection, page_id: int, *, component_ids: list[str], offset: int, limit: int
) -> tuple[int, list[Row[Any]]]:
    return await conn.run_sync(lambda sync: confirmed_page_sync(
        sync, page_id, component_ids=component_ids, offset=offset, limit=limit))


async def confirmed_after(
    conn: AsyncConnection, page_id: int, after: str, limit: int
) -> list[Row[Any]]:
    """The next batch of confirmed subscribers by id (keyset: stable while rows change)."""
    rows = await conn.execute(
        select(status_subscriber)
        .where(status_subscriber.c.page_id == page_id,
               status_subscriber.c.status == CONFIRMED,
               status_subscriber.c.subscriber_id > after)
        .order_by(status_subscriber.c.subscriber_id).limit(limit)
    )
    return list(rows.all())


async def existing_emails(conn: AsyncConnection, page_id: int, emails: list[str]) -> set[str]:
    if not emails:
        return set()
    rows = await conn.execute(
        select(status_subscriber.c.email).where(
            status_subscriber.c.page_id == page_id, status_subscriber.c.email.in_(emails))
    )
    return set(rows.scalars())


async def insert_subscribers(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(insert(status_subscriber), rows)


async def by_email(conn: AsyncConnection, page_id: int, email: str) -> Row[Any] | None:
    return (await conn.execute(
        select(status_subscriber)
        .where(status_subscriber.c.page_id == page_id, status_subscriber.c.email == email)
    )).first()


async def by_id(conn: AsyncConnection, subscriber_id: str) -> Row[Any] | None:
    return (await conn.execute(
        select(status_subscriber).where(status_subscriber.c.subscriber_id == subscriber_id)
    )).first()


async def by_confirm_hash(conn: AsyncConnection, page_id: int, token_hash: str
                          ) -> Row[Any] | None:
    return (await conn.execute(select(status_subscriber).where(
        status_subscriber.c.page_id == page_id,
        status_subscriber.c.confirm_token_hash == token_hash))).first()


async def by_unsubscribe_hash(conn: AsyncConnection, page_id: int, token_hash: str
                              ) -> Row[Any] | None:
    return (await conn.execute(select(status_subscriber).where(
        status_subscriber.c.page_id == page_id,
        status_subscriber.c.unsubscribe_token_hash == token_hash))).first()


async def update_subscriber(
    conn: AsyncConnection, subscriber_id: str, values: dict[str, Any]
) -> None:
    await conn.execute(
        update(status_subscriber)
        .where(status_subscriber.c.subscriber_id == subscriber_id).values(**values)
    )
