"""Every A2A agent query. Each one is scoped by account_id; the reads that answer a caller
take its TeamScope (aisre/scope.py, the rule MCP servers share), so a caller never sees
another team's agents."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Select, and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from dutyline.aisre.scope import TeamScope, bound_scope, visible_bound
from dutyline.db.like import any_contains_bound, contains_pattern
from dutyline.db.paging import counted_page_sync, ordered
from dutyline.db.tables.aisre import a2a_agent


async def get(conn: AsyncConnection, account_id: int, agent_id: str) -> Row[Any] | None:
    stmt = select(a2a_agent).where(
        a2a_agent.c.account_id == account_id, a2a_agent.c.agent_id == agent_id
    )
    return (await conn.execute(stmt)).first()


@functools.cache
def _visible_agent(all_teams: bool) -> Select[Any]:
    return select(a2a_agent).where(
        a2a_agent.c.agent_id == bindparam("agent_id"),
        visible_bound(all_teams, a2a_agent.c.account_id, a2a_agent.c.team_id))


def find_visible_sync(conn: Connection, scope: TeamScope, agent_id: str) -> Row[Any] | None:
    """The agent when `scope` sees it (aisre/scope.py); else None, as another account's."""
    return conn.execute(_visible_agent(scope.team_ids is None),
                        {**bound_scope(scope), "agent_id": agent_id}).first()


def _kinds(*, include_account: bool, only_teams: bool) -> ColumnElement[bool]:
    """Account-level agents (when asked for) and team agents (of the teams bound as
    `only_teams` when given)."""
    parts: list[ColumnElement[bool]] = []
    if include_account:
        parts.append(a2a_agent.c.team_id == 0)
    team_part: ColumnElement[bool] = a2a_agent.c.team_id != 0
    if only_teams:
        team_part = and_(team_part,
                         a2a_agent.c.team_id.in_(bindparam("only_teams", expanding=True)))
    parts.append(team_part)
    return or_(*parts)


@functools.cache
def _page(all_teams: bool, include_account: bool, only_teams: bool,
          by_name: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, ordered page) statements of one combination of filters."""
    conditions: list[ColumnElement[bool]] = [
        visible_bound(all_teams, a2a_agent.c.account_id, a2a_agent.c.team_id),
        _kinds(include_account=include_account, only_teams=only_teams),
    ]
    if by_name:
        conditions.append(any_contains_bound("name_pattern", a2a_agent.c.agent_name))
    return (select(func.count()).select_from(a2a_agent).where(*conditions),
            select(a2a_agent).where(*conditions)
            .order_by(*ordered(a2a_agent.c.created_at, a2a_agent.c.agent_id, asc=False)))


def list_page_sync(
    conn: Connection,
    scope: TeamScope,
    *,
    include_account: bool,
    only_teams: list[int] | None,
    query: str,
    offset: int,
    limit: int,
) -> tuple[int, list[Row[Any]]]:
    params = bound_scope(scope)
    if only_teams is not None:
        params["only_teams"] = list(only_teams)
    if query:
        params["name_pattern"] = contains_pattern(query.lower())
    count, page = _page(scope.team_ids is None, include_account, only_teams is not None,
                        bool(query))
    total, rows = counted_page_sync(conn, count, page, offset=offset, limit=limit,
                                    params=params)
    return total, list(rows)


async def insert_agent(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(a2a_agent).values(**values))


async def update_agent(
    conn: AsyncConnection, account_id: int, agent_id: str, values: dict[str, Any]
) -> None:
    await conn.execute(
        update(a2a_agent)
        .where(a2a_agent.c.account_id == account_id, a2a_agent.c.agent_id == agent_id)
        .values(**values)
    )


async def delete_agent(conn: AsyncConnection, account_id: int, agent_id: str) -> None:
    await conn.execute(
        delete(a2a_agent).where(
            a2a_agent.c.account_id == account_id, a2a_agent.c.agent_id == agent_id
        )
    )


async def enabled_in_scope(
    conn: AsyncConnection, account_id: int, team_id: int
) -> list[Row[Any]]:
    """Enabled agents a run in this scope may call: account-level ones plus the team's own."""
    teams = [0] if team_id == 0 else [0, team_id]
    rows = await conn.execute(
        select(a2a_agent)
        .where(
            a2a_agent.c.account_id == account_id,
            a2a_agent.c.status == "enabled",
            a2a_agent.c.team_id.in_(teams),
        )
        .order_by(a2a_agent.c.created_at, a2a_agent.c.agent_id)
    )
    return list(rows.all())
