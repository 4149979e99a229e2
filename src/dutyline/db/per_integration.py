"""An integration's per-integration config row (alert pipeline, route, enrichment setting:
the channel and enrichment domains share the shape): at most one row per integration, read
scoped by account, saved with who changed it and when, and a `version` counter that every
save bumps (ingestion caches a row's compiled form per version)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import Connection, Table, bindparam, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection


class Writer(Protocol):
    """Who saves a row (an api Actor): the database layer names only what it stamps."""

    @property
    def account_id(self) -> int: ...
    @property
    def person_id(self) -> int: ...
    @property
    def now_s(self) -> int: ...


def saved_values(actor: Writer, values: dict[str, Any], *, new: bool) -> dict[str, Any]:
    """`values` as saved: enabled, stamped with who changed them and when, and, the first
    time, who created the row and when."""
    now = actor.now_s
    stamped = {**values, "status": "enabled", "updated_by": actor.person_id, "updated_at": now}
    if new:
        stamped.update(account_id=actor.account_id, creator_id=actor.person_id, created_at=now)
    return stamped


class Reads:
    """A table's two reads, built once, for sync units of database work (a read operation's,
    api/operation.py): one integration's row, unlocked, and the rows of several."""

    def __init__(self, table: Table) -> None:
        self._get = select(table).where(table.c.account_id == bindparam("account_id"),
                                        table.c.integration_id == bindparam("integration_id"))
        self._list_for = (
            select(table)
            .where(table.c.account_id == bindparam("account_id"),
                   table.c.integration_id.in_(bindparam("integration_ids", expanding=True)))
            .order_by(table.c.integration_id))

    def get(self, conn: Connection, account_id: int, integration_id: int) -> Row[Any] | None:
        return conn.execute(self._get, {"account_id": account_id,
                                        "integration_id": integration_id}).first()

    def list_for(self, conn: Connection, account_id: int,
                 integration_ids: Sequence[int]) -> list[Row[Any]]:
        """The rows of these integrations of the account, by integration id."""
        if not integration_ids:
            return []
        return list(conn.execute(self._list_for, {
            "account_id": account_id, "integration_ids": list(integration_ids)}).all())


async def get(conn: AsyncConnection, table: Table, account_id: int, integration_id: int, *,
              for_update: bool = False) -> Row[Any] | None:
    """The integration's row; `for_update` locks it on PostgreSQL (SQLite's writer holds
    the whole database already)."""
    stmt = select(table).where(table.c.account_id == account_id,
                               table.c.integration_id == integration_id)
    if for_update and conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).first()


async def save(conn: AsyncConnection, table: Table, *, exists: bool, integration_id: int,
               values: dict[str, Any]) -> None:
    """Insert the row, or update it and bump its version (values from `saved_values`)."""
    if exists:
        await conn.execute(update(table).where(table.c.integration_id == integration_id)
                           .values(version=table.c.version + 1, **values))
    else:
        await conn.execute(insert(table).values(integration_id=integration_id, **values))
