"""An integration's per-integration config row (alert pipeline, route, enrichment setting:
the channel and enrichment domains share the shape): at most one row per integration, read
scoped by account, saved with who changed it and when, and a `version` counter that every
save bumps (ingestion caches a row's compiled form per version)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import Table, insert, select, update
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


async def get(conn: AsyncConnection, table: Table, account_id: int, integration_id: int, *,
              for_update: bool = False) -> Row[Any] | None:
    """The integration's row; `for_update` locks it on PostgreSQL (SQLite's writer holds
    the whole database already)."""
    stmt = select(table).where(table.c.account_id == account_id,
                               table.c.integration_id == integration_id)
    if for_update and conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).first()


async def list_for(conn: AsyncConnection, table: Table, account_id: int,
                   integration_ids: Sequence[int]) -> list[Row[Any]]:
    stmt = (select(table)
            .where(table.c.account_id == account_id,
                   table.c.integration_id.in_(list(integration_ids)))
            .order_by(table.c.integration_id))
    return list((await conn.execute(stmt)).all())


async def save(conn: AsyncConnection, table: Table, *, exists: bool, integration_id: int,
               values: dict[str, Any]) -> None:
    """Insert the row, or update it and bump its version (values from `saved_values`)."""
    if exists:
        await conn.execute(update(table).where(table.c.integration_id == integration_id)
                           .values(version=table.c.version + 1, **values))
    else:
        await conn.execute(insert(table).values(integration_id=integration_id, **values))
