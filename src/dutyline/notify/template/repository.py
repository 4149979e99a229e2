"""Every notification-template query; each is scoped by account_id (the visibility rule)."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Connection, Select, bindparam, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.notify import notify_template as t


async def insert_template(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(t).values(**values))


_LIVE = select(t).where(t.c.account_id == bindparam("account_id"),
                        t.c.template_id == bindparam("template_id"), t.c.deleted_at == 0)


def get_live_sync(conn: Connection, account_id: int, template_id: str) -> Row[Any] | None:
    return conn.execute(_LIVE, {"account_id": account_id, "template_id": template_id}).first()


async def get_live(conn: AsyncConnection, account_id: int, template_id: str) -> Row[Any] | None:
    return await conn.run_sync(get_live_sync, account_id, template_id)


async def name_taken(conn: AsyncConnection, account_id: int, name_key: str,
                     except_id: str = "") -> bool:
    stmt = select(t.c.template_id).where(t.c.account_id == account_id,
                                         t.c.name_key == name_key,
                                         t.c.template_id != except_id)
    return (await conn.execute(stmt)).first() is not None


@functools.cache
def _live_statement(by_team: bool, by_creator: bool, orderby: str, asc: bool) -> Select[Any]:
    stmt = select(t).where(t.c.account_id == bindparam("account_id"), t.c.deleted_at == 0)
    if by_team:
        stmt = stmt.where(t.c.team_id.in_(bindparam("team_ids", expanding=True)))
    if by_creator:
        stmt = stmt.where(t.c.creator_id == bindparam("creator_id"))
    column = t.c.updated_at if orderby == "updated_at" else t.c.created_at
    return stmt.order_by(*((column.asc(), t.c.template_id.asc()) if asc
                           else (column.desc(), t.c.template_id.desc())))


def list_live_sync(conn: Connection, account_id: int, *, team_ids: list[int] | None,
                   creator_id: int | None, orderby: str, asc: bool) -> list[Row[Any]]:
    """The account's live templates matching the SQL-side filters, in page order (the name
    filter, a regular expression, is applied by the service)."""
    params: dict[str, Any] = {"account_id": account_id}
    if team_ids is not None:
        params["team_ids"] = team_ids
    if creator_id is not None:
        params["creator_id"] = creator_id
    stmt = _live_statement(team_ids is not None, creator_id is not None,
                           "updated_at" if orderby == "updated_at" else "created_at", asc)
    return list(conn.execute(stmt, params).all())


async def update_template(conn: AsyncConnection, account_id: int, template_id: str,
                          values: dict[str, Any]) -> None:
    await conn.execute(update(t).where(t.c.account_id == account_id,
                                       t.c.template_id == template_id).values(**values))
