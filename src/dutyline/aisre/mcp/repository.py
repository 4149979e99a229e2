"""Every MCP server query. Each is scoped by account_id, and reads that answer a caller take the
caller's TeamScope: the visibility rule of aisre/scope.py, inside the query."""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    bindparam,
    delete,
    false,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.scope import TeamScope, bound_scope, visible, visible_bound
from dutyline.db.like import any_contains_bound, contains_pattern
from dutyline.db.paging import counted_page_sync, ordered
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


@functools.cache
def _page(all_teams: bool, include_account: bool, include_team: bool, only_teams: bool,
          by_text: bool, by_status: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, ordered page) statements of one combination of filters."""
    conditions: list[ColumnElement[bool]] = [
        visible_bound(all_teams, mcp_server.c.account_id, mcp_server.c.team_id)]
    kinds: list[ColumnElement[bool]] = []
    if include_account:
        kinds.append(mcp_server.c.team_id == 0)
    if include_team:
        team_filter = mcp_server.c.team_id != 0
        if only_teams:
            team_filter = mcp_server.c.team_id.in_(bindparam("only_teams", expanding=True))
        kinds.append(team_filter)
    conditions.append(or_(*kinds) if kinds else false())
    if by_text:
        conditions.append(any_contains_bound("text_pattern", mcp_server.c.name_key,
                                             mcp_server.c.description))
    if by_status:
        conditions.append(mcp_server.c.status == bindparam("status"))
    return (select(func.count()).where(*conditions),
            select(*_RECORD_COLUMNS).where(*conditions)
            .order_by(*ordered(mcp_server.c.created_at, mcp_server.c.server_id, asc=False)))


def list_page_sync(
    conn: Connection, scope: TeamScope, *, include_account: bool, include_team: bool,
    only_team_ids: Collection[int] | None,
    query: str, status: str | None, offset: int, limit: int,
) -> tuple[int, list[Any]]:
    params = bound_scope(scope)
    if only_team_ids is not None:
        params["only_teams"] = list(only_team_ids)
    if query:
        params["text_pattern"] = contains_pattern(query.lower())
    if status is not None:
        params["status"] = status
    count, page = _page(scope.team_ids is None, include_account, include_team,
                        only_team_ids is not None, bool(query), status is not None)
    # Two statements on purpose: the count is read from the covering index, and the page
    # walks the same index newest first and stops after `limit` rows. A window count (one
    # statement) made SQLite materialize and sort every visible row: 10x slower at 1,000.
    total, rows = counted_page_sync(conn, count, page, offset=offset, limit=limit,
                                    params=params)
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
