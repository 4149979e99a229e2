"""Every notification-template query; each is scoped by account_id (the visibility rule)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.notify import notify_template as t


async def insert_template(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(t).values(**values))


async def get_live(conn: AsyncConnection, account_id: int, template_id: str) -> Row[Any] | None:
    stmt = select(t).where(t.c.account_id == account_id, t.c.template_id == template_id,
                           t.c.deleted_at == 0)
    return (await conn.execute(stmt)).first()


async def name_taken(conn: AsyncConnection, account_id: int, name_key: str,
                     except_id: str = "") -> bool:
    stmt = select(t.c.template_id).where(t.c.account_id == account_id,
                                         t.c.name_key == name_key,
                                         t.c.template_id != except_id)
    return (await conn.execute(stmt)).first() is not None


async def list_live(conn: AsyncConnection, account_id: int, *, team_ids: list[int] | None,
                    creator_id: int | None, orderby: str, asc: bool) -> list[Row[Any]]:
    """The account's live templates matching the SQL-side filters, in page order (the name
    filter, a regular expression, is applied by the service)."""
    stmt = select(t).where(t.c.account_id == account_id, t.c.deleted_at == 0)
    if team_ids is not None:
        stmt = stmt.where(t.c.team_id.in_(team_ids))
    if creator_id is not None:
        stmt = stmt.where(t.c.creator_id == creator_id)
    column = t.c.updated_at if orderby == "updated_at" else t.c.created_at
    stmt = stmt.order_by(*((column.asc(), t.c.template_id.asc()) if asc
                           else (column.desc(), t.c.template_id.desc())))
    return list((await conn.execute(stmt)).all())


async def update_template(conn: AsyncConnection, account_id: int, template_id: str,
                          values: dict[str, Any]) -> None:
    await conn.execute(update(t).where(t.c.account_id == account_id,
                                       t.c.template_id == template_id).values(**values))
