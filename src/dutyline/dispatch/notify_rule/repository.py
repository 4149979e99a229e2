"""Every query of channel notification rules: the rules, and the (rule, event) pairs each
rule has notified."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.dispatch import channel_notify_rule as rule
from dutyline.db.tables.dispatch import channel_notify_sent as sent
from dutyline.db.upsert import insert_for


async def insert_rule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(rule).values(**values))


async def get_rule(conn: AsyncConnection, account_id: int, channel_id: int,
                   rule_id: str) -> Row[Any] | None:
    return (await conn.execute(select(rule).where(
        rule.c.account_id == account_id, rule.c.channel_id == channel_id,
        rule.c.rule_id == rule_id))).first()


async def count_rules(conn: AsyncConnection, account_id: int, channel_id: int) -> int:
    return int((await conn.execute(select(func.count()).select_from(rule).where(
        rule.c.account_id == account_id, rule.c.channel_id == channel_id))).scalar_one())


_RULES_OF_CHANNEL = (select(rule)
                     .where(rule.c.account_id == bindparam("account_id"),
                            rule.c.channel_id == bindparam("channel_id"))
                     .order_by(rule.c.created_at, rule.c.rule_id))
_ENABLED_RULES_OF_CHANNEL = _RULES_OF_CHANNEL.where(rule.c.status == "enabled")


def list_rules_sync(conn: Connection, account_id: int, channel_id: int, *,
                    enabled_only: bool = False) -> list[Row[Any]]:
    stmt = _ENABLED_RULES_OF_CHANNEL if enabled_only else _RULES_OF_CHANNEL
    return list(conn.execute(stmt, {"account_id": account_id, "channel_id": channel_id}).all())


async def list_rules(conn: AsyncConnection, account_id: int, channel_id: int, *,
                     enabled_only: bool = False) -> list[Row[Any]]:
    return await conn.run_sync(lambda sync: list_rules_sync(
        sync, account_id, channel_id, enabled_only=enabled_only))


async def update_rule(conn: AsyncConnection, account_id: int, rule_id: str,
                      values: dict[str, Any]) -> None:
    await conn.execute(update(rule).where(
        rule.c.account_id == account_id, rule.c.rule_id == rule_id).values(**values))


async def delete_rule(conn: AsyncConnection, account_id: int, rule_id: str) -> None:
    await conn.execute(delete(sent).where(sent.c.rule_id == rule_id))
    await conn.execute(delete(rule).where(
        rule.c.account_id == account_id, rule.c.rule_id == rule_id))


async def claim_event(conn: AsyncConnection, rule_id: str, event_id: int, incident_id: str,
                      now_s: int) -> bool:
    """Note that the rule notifies this event; False when it did already."""
    result = await conn.execute(insert_for(conn)(sent).values(
        rule_id=rule_id, event_id=event_id, incident_id=incident_id, created_at=now_s,
    ).on_conflict_do_nothing().returning(sent.c.rule_id))
    return result.first() is not None


# --- hot sync helpers ------------------------------------------------------------------------
# Asked in the transaction that emits an incident event (ingestion's sync connection): does
# the account have any enabled rule there at all? Most accounts have none: no job is queued.

_ANY_ENABLED = (select(rule.c.rule_id)
                .where(rule.c.account_id == bindparam("notify_account_id"),
                       rule.c.status == "enabled")
                .limit(1))
_ANY_ENABLED_IN_CHANNEL = _ANY_ENABLED.where(rule.c.channel_id == bindparam("notify_channel_id"))


def any_enabled_sync(conn: Connection, account_id: int, channel_id: int) -> bool:
    """Whether the account (its channel `channel_id`; 0: any channel) has an enabled rule."""
    if channel_id:
        return conn.execute(_ANY_ENABLED_IN_CHANNEL, {
            "notify_account_id": account_id, "notify_channel_id": channel_id}).first() is not None
    return conn.execute(_ANY_ENABLED, {"notify_account_id": account_id}).first() is not None
