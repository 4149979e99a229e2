"""Every query of alert pipelines: one rule list per integration, scoped by account."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.enrichment import alert_pipeline


async def get(conn: AsyncConnection, account_id: int, integration_id: int) -> Row[Any] | None:
    stmt = select(alert_pipeline).where(alert_pipeline.c.account_id == account_id,
                                        alert_pipeline.c.integration_id == integration_id)
    return (await conn.execute(stmt)).first()


async def list_for(conn: AsyncConnection, account_id: int,
                   integration_ids: Sequence[int]) -> list[Row[Any]]:
    stmt = (select(alert_pipeline)
            .where(alert_pipeline.c.account_id == account_id,
                   alert_pipeline.c.integration_id.in_(list(integration_ids)))
            .order_by(alert_pipeline.c.integration_id))
    return list((await conn.execute(stmt)).all())


async def save(conn: AsyncConnection, *, exists: bool, integration_id: int,
               values: dict[str, Any]) -> None:
    if exists:
        await conn.execute(update(alert_pipeline)
                           .where(alert_pipeline.c.integration_id == integration_id)
                           .values(version=alert_pipeline.c.version + 1, **values))
    else:
        await conn.execute(insert(alert_pipeline).values(integration_id=integration_id,
                                                         **values))


# -- hot path (sync: ingestion runs on the database thread, see Database.run_sync) -------------

_RULES = select(alert_pipeline.c.version, alert_pipeline.c.rules).where(
    alert_pipeline.c.integration_id == bindparam("integration_id"))


def rules_sync(conn: Connection, integration_id: int) -> Any:
    return conn.execute(_RULES, {"integration_id": integration_id}).first()
