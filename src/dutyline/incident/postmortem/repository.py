"""Every post-mortem query. Reads are scoped like incidents (incident/visibility.py): the
account's rows, and none of a private channel the caller cannot see, so a hidden report
answers exactly like an unknown id."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Connection, delete, func, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.incident_postmortem import post_mortem
from dutyline.db.upsert import insert_for
from dutyline.incident import visibility
from dutyline.incident.visibility import Scope

ORDER_COLUMNS = {"created_at_seconds": post_mortem.c.created_at,
                 "updated_at_seconds": post_mortem.c.updated_at}


@dataclass
class ListFilter:
    status: str
    team_ids: list[int] = field(default_factory=list)
    channel_ids: list[int] = field(default_factory=list)
    created_from: int = 0  # 0: no bound
    created_to: int = 0


def _visible(scope: Scope) -> list[ColumnElement[bool]]:
    return [post_mortem.c.account_id == scope.account_id,
            *visibility.channel_visible(post_mortem.c.channel_id, scope)]


def find_sync(conn: Connection, scope: Scope, post_mortem_id: str) -> Row[Any] | None:
    stmt = select(post_mortem).where(post_mortem.c.post_mortem_id == post_mortem_id,
                                     *_visible(scope))
    return conn.execute(stmt).first()


async def find(conn: AsyncConnection, scope: Scope, post_mortem_id: str) -> Row[Any] | None:
    return await conn.run_sync(find_sync, scope, post_mortem_id)


async def exists(conn: AsyncConnection, post_mortem_id: str) -> bool:
    stmt = select(post_mortem.c.post_mortem_id).where(
        post_mortem.c.post_mortem_id == post_mortem_id)
    return (await conn.execute(stmt)).first() is not None


def _conditions(scope: Scope, f: ListFilter) -> list[ColumnElement[bool]]:
    where = [*_visible(scope), post_mortem.c.status == f.status]
    if f.team_ids:
        where.append(post_mortem.c.team_id.in_(f.team_ids))
    if f.channel_ids:
        where.append(post_mortem.c.channel_id.in_(f.channel_ids))
    if f.created_from:
        where.append(post_mortem.c.created_at >= f.created_from)
    if f.created_to:
        where.append(post_mortem.c.created_at <= f.created_to)
    return where


def count_sync(conn: Connection, scope: Scope, f: ListFilter) -> int:
    stmt = select(func.count()).select_from(post_mortem).where(*_conditions(scope, f))
    return int(conn.execute(stmt).scalar_one())


def page_sync(
    conn: Connection, scope: Scope, f: ListFilter, *, order_by: str, asc: bool,
    offset: int, limit: int, after: tuple[int, str] | None,
) -> list[Row[Any]]:
    """A page ordered by `order_by` then id (both the same direction); `after`: the
    (order value, id) of the previous page's last row, for keyset paging."""
    column = ORDER_COLUMNS[order_by]
    key = post_mortem.c.post_mortem_id
    stmt = select(post_mortem).where(*_conditions(scope, f))
    if after is not None:
        value, last_id = after
        if asc:
            stmt = stmt.where(or_(column > value, (column == value) & (key > last_id)))
        else:
            stmt = stmt.where(or_(column < value, (column == value) & (key < last_id)))
    order = (column.asc(), key.asc()) if asc else (column.desc(), key.desc())
    stmt = stmt.order_by(*order).offset(offset).limit(limit)
    return list(conn.execute(stmt).all())


async def insert_post_mortem(conn: AsyncConnection, values: dict[str, Any]) -> bool:
    """False when a report of the same id exists (made meanwhile by another request)."""
    stmt = insert_for(conn)(post_mortem).values(**values).on_conflict_do_nothing(
        index_elements=[post_mortem.c.post_mortem_id])
    return (await conn.execute(stmt)).rowcount > 0


async def update_post_mortem(conn: AsyncConnection, post_mortem_id: str, values: dict[str, Any],
                             *, revision: int | None = None) -> bool:
    """Change a report; with `revision`, only while it is still at that revision."""
    stmt = update(post_mortem).where(post_mortem.c.post_mortem_id == post_mortem_id)
    if revision is not None:
        stmt = stmt.where(post_mortem.c.revision == revision)
    return (await conn.execute(stmt.values(**values))).rowcount > 0


async def delete_post_mortem(conn: AsyncConnection, post_mortem_id: str) -> None:
    await conn.execute(delete(post_mortem).where(post_mortem.c.post_mortem_id == post_mortem_id))
