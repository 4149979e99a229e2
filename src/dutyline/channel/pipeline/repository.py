"""Every query of alert pipelines: one rule list per integration, scoped by account."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db import per_integration
from dutyline.db.tables.channel import alert_pipeline

# -- reads (sync: a read operation's one unit of database work, api/operation.py) --------

_t = alert_pipeline
_GET = select(_t).where(_t.c.account_id == bindparam("account_id"),
                        _t.c.integration_id == bindparam("integration_id"))
_LIST_FOR = (select(_t)
             .where(_t.c.account_id == bindparam("account_id"),
                    _t.c.integration_id.in_(bindparam("integration_ids", expanding=True)))
             .order_by(_t.c.integration_id))


def get_sync(conn: Connection, account_id: int, integration_id: int) -> Row[Any] | None:
    """The integration's row, unlocked (a read)."""
    return conn.execute(_GET, {"account_id": account_id,
                               "integration_id": integration_id}).first()


def list_for_sync(conn: Connection, account_id: int,
                  integration_ids: Sequence[int]) -> list[Row[Any]]:
    """The rows of these integrations of the account, by integration id."""
    if not integration_ids:
        return []
    return list(conn.execute(_LIST_FOR, {"account_id": account_id,
                                         "integration_ids": list(integration_ids)}).all())


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
