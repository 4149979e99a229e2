"""Every query of integration routes: one per integration, scoped by account."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.enrichment import integration_route


async def get(conn: AsyncConnection, account_id: int, integration_id: int) -> Row[Any] | None:
    stmt = select(integration_route).where(
        integration_route.c.account_id == account_id,
        integration_route.c.integration_id == integration_id)
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).first()


async def list_for(conn: AsyncConnection, account_id: int,
                   integration_ids: Sequence[int]) -> list[Row[Any]]:
    stmt = (select(integration_route)
            .where(integration_route.c.account_id == account_id,
                   integration_route.c.integration_id.in_(list(integration_ids)))
            .order_by(integration_route.c.integration_id))
    return list((await conn.execute(stmt)).all())


async def save(conn: AsyncConnection, *, exists: bool, integration_id: int,
               values: dict[str, Any]) -> None:
    if exists:
        await conn.execute(update(integration_route)
                           .where(integration_route.c.integration_id == integration_id)
                           .values(version=integration_route.c.version + 1, **values))
    else:
        await conn.execute(insert(integration_route).values(integration_id=integration_id,
                                                            **values))


# -- hot path (sync: ingestion runs on the database thread, see Database.run_sync) -------------

_CONFIG = select(integration_route.c.version, integration_route.c.config).where(
    integration_route.c.integration_id == bindparam("integration_id"))


def config_sync(conn: Connection, integration_id: int) -> Any:
    return conn.execute(_CONFIG, {"integration_id": integration_id}).first()
