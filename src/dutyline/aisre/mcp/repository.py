"""Every MCP server query. Each is scoped by account_id, and reads that answer a caller take the
caller's TeamScope: the visibility rule of aisre/scope.py, inside the query."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import ColumnElement, delete, false, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.scope import TeamScope, visible
from dutyline.db.like import any_contains
from dutyline.db.paging import counted_page, ordered
from dutyline.db.tables.aisre import mcp_server

# Everything a record shows; the sealed header values stay in the table unless asked for.
_RECORD_COLUMNS = [c for c in mcp_server.c if c.name != "headers_encrypted"]


def _visible(scope: TeamScope) -> ColumnElement[bool]:
    return visible(scope, mcp_server.c.account_id, mcp_server.c.team_id)


async def find_visible(
    conn: AsyncConnection, scope: TeamScope, server_id: str, *, with_secrets: bool = False,
) -> Row[Any] | None:
    columns = [*_RECORD_COLUMNS, mcp_server.c.headers_encrypted] if with_secrets else (
        _RECORD_COLUMNS)
    stmt = select(*columns).where(
        mcp_server.c.server_id == server_id, _visible(scope))
    return (await conn.execute(stmt)).first()


async def list_page(
    conn: AsyncConnection, scope: TeamScope, *, include_account: bool, include_team: bool,
    only_team_ids: Collection[int] | None,
    query: str, status: str | None, offset: int, limit: int,
) -> tuple[int, list[Any]]:
    conditions: list[ColumnElement[bool]] = [_visible(scope)]
    kinds: list[ColumnElement[bool]] = []
    if include_account:
        kinds.append(mcp_server.c.team_id == 0)
    if include_team:
        team_filter = mcp_server.c.team_id != 0
        if only_team_ids is not None:
            team_filter = mcp_server.c.team_id.in_(list(only_team_ids))
        kinds.append(team_filter)
    conditions.append(or_(*kinds) if kinds else false())
    if query:
        conditions.append(any_contains(query, mcp_server.c.name_key, mcp_server.c.description))
    if status is not None:
        conditions.append(mcp_server.c.status == status)
    # Two statements on purpose: the count is read from the covering index, and the page
    # walks the same index newest first and stops after `limit` rows. A window count (one
    # statement) made SQLite materialize and sort every visible row: 10x slower at 1,000.
    total, rows = await counted_page(
        conn, select(func.count()).where(*conditions),
        select(*_RECORD_COLUMNS).where(*conditions)
        .order_by(*ordered(mcp_server.c.created_at, mcp_server.c.server_id, asc=False)),
        offset=offset, limit=limit)
    return total, list(rows)


async def name_taken(
    conn: AsyncConnection, account_id: int, name_key: str, *, except_id: str = ""
) -> bool:
    stmt = select(mcp_server.c.server_id).where(
        mcp_server.c.account_id == account_id,
        mcp_server.c.name_key == name_key,
        mcp_server.c.server_id != except_id,
    )
    return (await conn.execute(stmt)).first() is not None


async def insert_server(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(mcp_server).values(**values))


async def update_server(
    conn: AsyncConnection, account_id: int, server_id: str, values: dict[str, Any],
    *, only_status: str | None = None,
) -> int:
    """Returns the rows changed; `only_status` makes a status flip atomic (compare and set)."""
    stmt = update(mcp_server).where(
        mcp_server.c.account_id == account_id, mcp_server.c.server_id == server_id
    )
    if only_status is not None:
        stmt = stmt.where(mcp_server.c.status == only_status)
    result = await conn.execute(stmt.values(**values))
    return int(result.rowcount)


async def delete_server(conn: AsyncConnection, account_id: int, server_id: str) -> None:
    await conn.execute(
        delete(mcp_server).where(
            mcp_server.c.account_id == account_id, mcp_server.c.server_id == server_id
        )
    )


async def enabled_in_scope(
    conn: AsyncConnection, account_id: int, team_ids: Collection[int]
) -> list[Any]:
    """Enabled servers an automation run may use: account-level plus the given teams'."""
    stmt = select(*_RECORD_COLUMNS, mcp_server.c.headers_encrypted).where(
        _visible(TeamScope.run(account_id, frozenset(team_ids))),
        mcp_server.c.status == "enabled",
    ).order_by(mcp_server.c.created_at, mcp_server.c.server_id)
    return list((await conn.execute(stmt)).all())
