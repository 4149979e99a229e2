"""Every channel query. Each is scoped by account_id, and the reads a person makes also by
`visible_to`: the one place private channels are hidden, so a channel another team keeps
private, or another account's, is not found."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    bindparam,
    false,
    func,
    insert,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.like import any_contains
from dutyline.db.paging import counted_windowed_page_sync, ordered, windowed_page
from dutyline.db.tables.channel import channel

_ORDER_COLUMNS = {
    # No usage ranking is kept: the channel with the latest incident ranks first.
    "ranking": channel.c.last_incident_at,
    "created_at": channel.c.created_at,
    "updated_at": channel.c.updated_at,
    "channel_name": channel.c.name_key,
    "last_incident_at": channel.c.last_incident_at,
}


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who reads: owners and admins see every channel, others the public ones and the
    private ones of their teams (owning or managing)."""

    is_admin: bool
    team_ids: frozenset[int]


def _managing_contains(team_ids: frozenset[int]) -> ColumnElement[bool]:
    """managing_team_ids is a compact JSON array (`[1,2]`); with its brackets turned into
    commas every id sits between two commas, so a LIKE finds it on both databases."""
    if not team_ids:
        return false()
    wrapped = func.replace(func.replace(channel.c.managing_team_ids, "[", ","), "]", ",")
    return or_(*(wrapped.like(literal(f"%,{t},%")) for t in sorted(team_ids)))


def of_teams(team_ids: frozenset[int]) -> ColumnElement[bool]:
    """Channels a team owns or manages."""
    if not team_ids:
        return false()
    return or_(channel.c.team_id.in_(sorted(team_ids)), _managing_contains(team_ids))


def visible_to(viewer: Viewer) -> ColumnElement[bool]:
    if viewer.is_admin:
        return true()
    return or_(channel.c.is_private == false(), of_teams(viewer.team_ids))


def visible_ids(account_id: int, viewer: Viewer) -> Select[tuple[int]]:
    """Ids of the account's channels the viewer sees, deleted ones included (their incidents
    and alerts stay readable), as a subquery for other domains' reads to filter by."""
    return select(channel.c.channel_id).where(channel.c.account_id == account_id,
                                              visible_to(viewer))


def get_sync(conn: Connection, account_id: int, channel_id: int) -> Any:
    """`get` on a sync connection (ingestion routing an alert to another channel)."""
    stmt = select(channel).where(channel.c.account_id == account_id,
                                 channel.c.channel_id == channel_id)
    return conn.execute(stmt).first()


@functools.cache
def _touch_last_incident(dialect: str) -> Any:
    # A soft stamp for ordering, written inside incident creation: it must never make two
    # ingestions wait for each other (or deadlock, when a batch opens incidents in several
    # channels in another order). So on PostgreSQL a row another transaction is stamping
    # right now is skipped, and `<` skips the write for the same second.
    stale = select(channel.c.channel_id).where(
        channel.c.account_id == bindparam("touch_account_id"),
        channel.c.channel_id == bindparam("touch_channel_id"),
        channel.c.last_incident_at < bindparam("touch_now_s"))
    if dialect == "postgresql":
        stale = stale.with_for_update(skip_locked=True)
    return (update(channel).where(channel.c.channel_id.in_(stale.scalar_subquery()))
            .values(last_incident_at=bindparam("touch_now_s")))


def touch_last_incident_sync(conn: Connection, account_id: int, channel_id: int,
                             now_s: int) -> None:
    conn.execute(_touch_last_incident(conn.dialect.name), {
        "touch_account_id": account_id, "touch_channel_id": channel_id, "touch_now_s": now_s})


async def get(conn: AsyncConnection, account_id: int, channel_id: int) -> Row[Any] | None:
    """Any channel of the account, whatever its status and privacy."""
    stmt = select(channel).where(channel.c.account_id == account_id,
                                 channel.c.channel_id == channel_id)
    return (await conn.execute(stmt)).first()


def get_visible_sync(
    conn: Connection, account_id: int, channel_id: int, viewer: Viewer, *,
    include_deleted: bool = False,
) -> Row[Any] | None:
    stmt = select(channel).where(
        channel.c.account_id == account_id, channel.c.channel_id == channel_id,
        visible_to(viewer),
    )
    if not include_deleted:
        stmt = stmt.where(channel.c.deleted_at == 0)
    return conn.execute(stmt).first()


async def name_taken(conn: AsyncConnection, account_id: int, name_key: str,
                     except_id: int = 0) -> bool:
    stmt = select(channel.c.channel_id).where(
        channel.c.account_id == account_id, channel.c.name_key == name_key,
        channel.c.deleted_at == 0, channel.c.channel_id != except_id,
    ).limit(1)
    return (await conn.execute(stmt)).first() is not None


def list_page_sync(
    conn: Connection, account_id: int, viewer: Viewer, *, mine: frozenset[int] | None,
    managed_by: frozenset[int] | None, team_ids: list[int], channel_ids: list[int],
    channel_name: str, query: str, orderby: str, asc: bool, offset: int, limit: int,
) -> tuple[int, list[Row[Any]]]:
    """A page of live channels and the total. `mine`: owned by these teams;
    `managed_by`: owned or managed by these teams."""
    conditions: list[ColumnElement[bool]] = [
        channel.c.account_id == account_id, channel.c.deleted_at == 0, visible_to(viewer),
    ]
    if mine is not None:
        conditions.append(channel.c.team_id.in_(sorted(mine)) if mine else false())
    if managed_by is not None:
        conditions.append(of_teams(managed_by))
    if team_ids:
        conditions.append(channel.c.team_id.in_(team_ids))
    if channel_ids:
        conditions.append(channel.c.channel_id.in_(channel_ids))
    if channel_name:
        conditions.append(channel.c.name_key == channel_name.lower())
    elif query:
        conditions.append(any_contains(query, channel.c.name_key, channel.c.description))
    total, rows = counted_windowed_page_sync(
        conn, select(func.count()).select_from(channel).where(*conditions),
        windowed_page(select(channel).where(*conditions).order_by(
            *ordered(_ORDER_COLUMNS[orderby], channel.c.channel_id, asc=asc))),
        params={"offset": offset, "limit": limit})
    return total, list(rows)


def find_many_visible_sync(conn: Connection, account_id: int, channel_ids: list[int],
                           viewer: Viewer) -> list[Any]:
    stmt = (
        select(channel.c.channel_id, channel.c.channel_name, channel.c.status,
               channel.c.team_id, channel.c.creator_id)
        .where(channel.c.account_id == account_id, channel.c.channel_id.in_(channel_ids),
               channel.c.deleted_at == 0, visible_to(viewer))
        .order_by(channel.c.channel_id)
    )
    return list(conn.execute(stmt).all())


_NAMES = select(channel.c.channel_id, channel.c.channel_name, channel.c.status).where(
    channel.c.account_id == bindparam("account_id"),
    channel.c.channel_id.in_(bindparam("channel_ids", expanding=True)))


def names_sync(conn: Connection, account_id: int,
               channel_ids: list[int]) -> dict[int, tuple[str, str]]:
    """{channel_id: (channel_name, status)}, deleted channels included."""
    if not channel_ids:
        return {}
    rows = conn.execute(_NAMES, {"account_id": account_id, "channel_ids": channel_ids})
    return {r[0]: (r[1], r[2]) for r in rows}


async def insert_channel(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(channel).values(**values))


async def update_channel(conn: AsyncConnection, account_id: int, channel_id: int,
                         values: dict[str, Any]) -> None:
    await conn.execute(
        update(channel)
        .where(channel.c.account_id == account_id, channel.c.channel_id == channel_id)
        .values(**values)
    )
