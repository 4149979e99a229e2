"""Every query of the dispatch domain: escalation rules and the per-incident dispatch state."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.dispatch import dispatch_state, escalate_rule

# --- rules -------------------------------------------------------------------------------


async def insert_rule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(escalate_rule).values(**values))


_GET_RULE = select(escalate_rule).where(
    escalate_rule.c.account_id == bindparam("account_id"),
    escalate_rule.c.channel_id == bindparam("channel_id"),
    escalate_rule.c.rule_id == bindparam("rule_id"))


def get_rule_sync(conn: Connection, account_id: int, channel_id: int,
                  rule_id: str) -> Row[Any] | None:
    return conn.execute(_GET_RULE, {"account_id": account_id, "channel_id": channel_id,
                                    "rule_id": rule_id}).first()


async def get_rule_by_id(conn: AsyncConnection, account_id: int,
                         rule_id: str) -> Row[Any] | None:
    return (await conn.execute(select(escalate_rule).where(
        escalate_rule.c.account_id == account_id,
        escalate_rule.c.rule_id == rule_id))).first()


_RULES_OF_CHANNEL = (
    select(escalate_rule)
    .where(escalate_rule.c.account_id == bindparam("account_id"),
           escalate_rule.c.channel_id == bindparam("channel_id"))
    .order_by(escalate_rule.c.priority, escalate_rule.c.created_at, escalate_rule.c.rule_id))
_ENABLED_RULES_OF_CHANNEL = _RULES_OF_CHANNEL.where(escalate_rule.c.status == "enabled")


def list_rules_sync(conn: Connection, account_id: int, channel_id: int,
                    *, enabled_only: bool = False) -> list[Row[Any]]:
    stmt = _ENABLED_RULES_OF_CHANNEL if enabled_only else _RULES_OF_CHANNEL
    return list(conn.execute(stmt, {"account_id": account_id, "channel_id": channel_id}).all())


async def list_rules(conn: AsyncConnection, account_id: int, channel_id: int,
                     *, enabled_only: bool = False) -> list[Row[Any]]:
    return await conn.run_sync(lambda sync: list_rules_sync(
        sync, account_id, channel_id, enabled_only=enabled_only))


_RULES_OF_CHANNELS = (
    select(escalate_rule)
    .where(escalate_rule.c.account_id == bindparam("account_id"),
           escalate_rule.c.channel_id.in_(bindparam("channel_ids", expanding=True)))
    .order_by(escalate_rule.c.channel_id, escalate_rule.c.priority,
              escalate_rule.c.created_at, escalate_rule.c.rule_id))


def rules_of_channels_sync(conn: Connection, account_id: int,
                           channel_ids: list[int]) -> list[Row[Any]]:
    """The rules of these channels, by channel, then in the order they are tried."""
    if not channel_ids:
        return []
    return list(conn.execute(_RULES_OF_CHANNELS,
                             {"account_id": account_id, "channel_ids": channel_ids}).all())


async def rules_naming(conn: AsyncConnection, account_id: int, needle: str) -> list[Row[Any]]:
    """The account's rules whose time windows (compact JSON) contain `needle`."""
    return list(await conn.execute(
        select(escalate_rule.c.rule_id, escalate_rule.c.rule_name)
        .where(escalate_rule.c.account_id == account_id,
               escalate_rule.c.time_filters.contains(needle, autoescape=True))
        .order_by(escalate_rule.c.rule_id)))


async def update_rule(conn: AsyncConnection, account_id: int, rule_id: str,
                      values: dict[str, Any]) -> None:
    await conn.execute(update(escalate_rule).where(
        escalate_rule.c.account_id == account_id, escalate_rule.c.rule_id == rule_id,
    ).values(**values))


async def delete_rule(conn: AsyncConnection, account_id: int, rule_id: str) -> None:
    await conn.execute(delete(escalate_rule).where(
        escalate_rule.c.account_id == account_id, escalate_rule.c.rule_id == rule_id))


# --- dispatch state ------------------------------------------------------------------------
# The engine runs these for every step of every incident: built once, with the values bound
# when they run (building a statement with its values costs more CPU than running it here).

_STATES = (select(dispatch_state)
           .where(dispatch_state.c.incident_id.in_(bindparam("incident_ids", expanding=True)))
           .order_by(dispatch_state.c.incident_id))
_LOCK_STATES = {"postgresql": _STATES.with_for_update()}
_INSERT_STATE = insert(dispatch_state)
# Without .values(): the columns SET are the keys of the parameters it runs with.
_UPDATE_STATE = update(dispatch_state).where(
    dispatch_state.c.incident_id == bindparam("state_incident_id"))


async def lock_state(conn: AsyncConnection, incident_id: str) -> Row[Any] | None:
    """The incident's dispatch state, locked for this transaction (PostgreSQL row lock; on
    SQLite the job's write transaction already holds the only writer)."""
    return (await lock_states(conn, [incident_id])).get(incident_id)


async def lock_states(conn: AsyncConnection, incident_ids: list[str]) -> dict[str, Row[Any]]:
    """lock_state for several incidents; PostgreSQL locks them in incident order, the same
    order for every batch, so two batches that share incidents wait on each other rather
    than deadlock."""
    stmt = _LOCK_STATES.get(conn.dialect.name, _STATES)
    rows = (await conn.execute(stmt, {"incident_ids": incident_ids})).all()
    return {row.incident_id: row for row in rows}


async def insert_states(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(_INSERT_STATE, rows)


async def update_state(conn: AsyncConnection, incident_id: str, values: dict[str, Any]) -> None:
    await conn.execute(_UPDATE_STATE, {"state_incident_id": incident_id, **values})


async def update_states(conn: AsyncConnection, states: dict[str, dict[str, Any]]) -> None:
    """Several incidents' states ({incident_id: new values}): one executemany per set of
    columns written (a batch of steps writes one or two)."""
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for incident_id, values in states.items():
        by_columns.setdefault(tuple(sorted(values)), []).append(
            {"state_incident_id": incident_id, **values})
    for params in by_columns.values():
        await conn.execute(_UPDATE_STATE, params)
