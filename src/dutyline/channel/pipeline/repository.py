"""Every query of alert pipelines: one rule list per integration, scoped by account."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db import per_integration
from dutyline.db.tables.channel import alert_pipeline

# -- reads (sync: a read operation's one unit of database work, api/operation.py) --------

_reads = per_integration.Reads(alert_pipeline)
get_sync = _reads.get
list_for_sync = _reads.list_for


async def get(conn: AsyncConnection, account_id: int, integration_id: int) -> Row[Any] | None:
    return await conn.run_sync(get_sync, account_id, integration_id)


async def save(conn: AsyncConnection, *, exists: bool, integration_id: int,
               values: dict[str, Any]) -> None:
    await per_integration.save(conn, alert_pipeline, exists=exists,
                               integration_id=integration_id, values=values)


# -- hot path (sync: ingestion runs on the database thread, see Database.run_sync) -------------

_RULES = select(alert_pipeline.c.version, alert_pipeline.c.rules).where(
    alert_pipeline.c.integration_id == bindparam("integration_id"))


def rules_sync(conn: Connection, integration_id: int) -> Any:
    return conn.execute(_RULES, {"integration_id": integration_id}).first()
