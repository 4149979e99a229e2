"""Every A2A agent query. Each one is scoped by account_id; the reads that answer a caller
take its TeamScope (aisre/scope.py, the rule MCP servers share), so a caller never sees
another team's agents."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from dutyline.aisre.scope import TeamScope, visible
from dutyline.db.like import any_contains
from dutyline.db.paging import counted_page, ordered
from dutyline.db.tables.aisre import a2a_agent


async def get(conn: AsyncConnection, account_id: int, agent_id: str) -> Row[Any] | None:
    stmt = select(a2a_agent).where(
        a2a_agent.c.account_id == account_id, a2a_agent.c.agent_id == agent_id
    )
    return (await conn.execute(stmt)).first()


async def find_visible(conn: AsyncConnection, scope: TeamScope, agent_id: str
                       ) -> Row[Any] | None:
    """The agent when `scope` sees it (aisre/scope.py); else None, as another account's."""
    stmt = select(a2a_agent).where(
        a2a_agent.c.agent_id == agent_id,
        visible(scope, a2a_agent.c.account_id, a2a_agent.c.team_id))
    return (await conn.execute(stmt)).first()


def _kinds(*, include_account: bool, only_teams: list[int] | None) -> ColumnElement[bool]:
    """Account-level agents (when asked for) and team agents (of `only_teams` if given)."""
    parts: list[ColumnElement[bool]] = []
    if include_account:
        parts.append(a2a_agent.c.team_id == 0)
    team_part: ColumnElement[bool] = a2a_agent.c.team_id != 0
    if only_teams is not None:
        team_part = and_(team_part, a2a_agent.c.team_id.in_(only_teams))
    parts.append(team_part)
    return or_(*parts)


async def list_page(
    conn: AsyncConnection,
    scope: TeamScope,
    *,
    include_account: bool,
    only_teams: list[int] | None,
    query: str,
    offset: int,
    limit: int,
) -> tuple[int, list[Row[Any]]]:
    conditions: list[ColumnElement[bool]] = [
        visible(scope, a2a_agent.c.account_id, a2a_agent.c.team_id),
        _kinds(include_account=include_account, only_teams=only_teams),
    ]
    if query:
        conditions.append(any_contains(query, a2a_agent.c.agent_name))
    total, rows = await counted_page(
        conn, select(func.count()).select_from(a2a_agent).where(*conditions),
        select(a2a_agent).where(*conditions)
        .order_by(*ordered(a2a_agent.c.created_at, a2a_agent.c.agent_id, asc=False)),
        offset=offset, limit=limit)
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
