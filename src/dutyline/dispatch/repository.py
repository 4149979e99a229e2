"""Every query of the dispatch domain: escalation rules and the per-incident dispatch state."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.dispatch import dispatch_state, escalate_rule

# --- rules -------------------------------------------------------------------------------


async def insert_rule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(escalate_rule).values(**values))


async def get_rule(conn: AsyncConnection, account_id: int, channel_id: int,
                   rule_id: str) -> Row[Any] | None:
    return (await conn.execute(select(escalate_rule).where(
        escalate_rule.c.account_id == account_id, escalate_rule.c.channel_id == channel_id,
        escalate_rule.c.rule_id == rule_id))).first()


async def get_rule_by_id(conn: AsyncConnection, account_id: int,
                         rule_id: str) -> Row[Any] | None:
    return (await conn.execute(select(escalate_rule).where(
        escalate_rule.c.account_id == account_id,
        escalate_rule.c.rule_id == rule_id))).first()


async def list_rules(conn: AsyncConnection, account_id: int, channel_id: int,
                     *, enabled_only: bool = False) -> list[Row[Any]]:
    stmt = select(escalate_rule).where(escalate_rule.c.account_id == account_id,
                                       escalate_rule.c.channel_id == channel_id)
    if enabled_only:
        stmt = stmt.where(escalate_rule.c.status == "enabled")
    stmt = stmt.order_by(escalate_rule.c.priority, escalate_rule.c.created_at,
                         escalate_rule.c.rule_id)
    return list((await conn.execute(stmt)).all())


async def update_rule(conn: AsyncConnection, account_id: int, rule_id: str,
                      values: dict[str, Any]) -> None:
    await conn.execute(update(escalate_rule).where(
        escalate_rule.c.account_id == account_id, escalate_rule.c.rule_id == rule_id,
    ).values(**values))


async def delete_rule(conn: AsyncConnection, account_id: int, rule_id: str) -> None:
    await conn.execute(delete(escalate_rule).where(
        escalate_rule.c.account_id == account_id, escalate_rule.c.rule_id == rule_id))


# --- dispatch state ------------------------------------------------------------------------


async def lock_state(conn: AsyncConnection, incident_id: str) -> Row[Any] | None:
    """The incident's dispatch state, locked for this transaction (PostgreSQL row lock; on
    SQLite the job's write transaction already holds the only writer)."""
    return (await lock_states(conn, [incident_id])).get(incident_id)


async def lock_states(conn: AsyncConnection, incident_ids: list[str]) -> dict[str, Row[Any]]:
    """lock_state for several incidents; PostgreSQL locks them in incident order, the same
    order for every batch, so two batches that share incidents wait on each other rather
    than deadlock."""
    stmt = (select(dispatch_state).where(dispatch_state.c.incident_id.in_(incident_ids))
            .order_by(dispatch_state.c.incident_id))
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return {row.incident_id: row for row in (await conn.execute(stmt)).all()}


async def insert_state(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(dispatch_state).values(**values))


async def update_state(conn: AsyncConnection, incident_id: str, values: dict[str, Any]) -> None:
    await conn.execute(update(dispatch_state).where(
        dispatch_state.c.incident_id == incident_id).values(**values))
