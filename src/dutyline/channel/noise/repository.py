"""Every query of inhibit, silence and drop rules. Scoped by account and channel: another
account's rule id is simply not found."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.channel import channel
from dutyline.db.tables.channel_noise import noise_rule

MAX_RULES_PER_KIND = 500


def _scope(account_id: int, channel_id: int, kind: str) -> list[Any]:
    return [noise_rule.c.account_id == account_id, noise_rule.c.channel_id == channel_id,
            noise_rule.c.kind == kind]


_GET = select(noise_rule).where(
    noise_rule.c.account_id == bindparam("account_id"),
    noise_rule.c.channel_id == bindparam("channel_id"), noise_rule.c.kind == bindparam("kind"),
    noise_rule.c.rule_id == bindparam("rule_id"))
_LIST = (select(noise_rule)
         .where(noise_rule.c.account_id == bindparam("account_id"),
                noise_rule.c.channel_id == bindparam("channel_id"),
                noise_rule.c.kind == bindparam("kind"))
         .order_by(noise_rule.c.priority, noise_rule.c.created_at, noise_rule.c.rule_id))


def get_sync(conn: Connection, account_id: int, channel_id: int, kind: str,
             rule_id: str) -> Row[Any] | None:
    return conn.execute(_GET, {"account_id": account_id, "channel_id": channel_id,
                               "kind": kind, "rule_id": rule_id.lower()}).first()


def list_rules_sync(conn: Connection, account_id: int, channel_id: int,
                    kind: str) -> list[Row[Any]]:
    return list(conn.execute(_LIST, {"account_id": account_id, "channel_id": channel_id,
                                     "kind": kind}).all())


async def count_rules(conn: AsyncConnection, account_id: int, channel_id: int,
                      kind: str) -> int:
    rows = await conn.execute(select(noise_rule.c.rule_id)
                              .where(*_scope(account_id, channel_id, kind))
                              .limit(MAX_RULES_PER_KIND + 1))
    return len(rows.all())


async def insert_rule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(noise_rule).values(**values))


async def update_rule(conn: AsyncConnection, account_id: int, channel_id: int, kind: str,
                      rule_id: str, values: dict[str, Any]) -> None:
    await conn.execute(update(noise_rule)
                       .where(*_scope(account_id, channel_id, kind),
                              noise_rule.c.rule_id == rule_id)
                       .values(**values))


async def delete_rule(conn: AsyncConnection, account_id: int, channel_id: int, kind: str,
                      rule_id: str) -> None:
    await conn.execute(delete(noise_rule).where(*_scope(account_id, channel_id, kind),
                                                noise_rule.c.rule_id == rule_id))


async def bump_version(conn: AsyncConnection, account_id: int, channel_id: int,
                       now_s: int) -> None:
    """Every process recompiles this channel's rules at its next push."""
    await conn.execute(update(channel)
                       .where(channel.c.account_id == account_id,
                              channel.c.channel_id == channel_id)
                       .values(noise_version=channel.c.noise_version + 1, updated_at=now_s))


# -- hot path (sync: ingestion runs on the database thread, see Database.run_sync) -----------

_ENABLED_RULES = (
    select(noise_rule.c.rule_id, noise_rule.c.kind, noise_rule.c.config)
    .where(noise_rule.c.channel_id == bindparam("channel_id"),
           noise_rule.c.status == "enabled")
    .order_by(noise_rule.c.priority, noise_rule.c.created_at, noise_rule.c.rule_id)
)
_COUNT_DROP = (
    update(noise_rule)
    .where(noise_rule.c.rule_id == bindparam("b_rule_id"))
    .values(dropped_cnt=noise_rule.c.dropped_cnt + 1)
)


async def rules_naming(conn: AsyncConnection, account_id: int, kind: str,
                      needle: str) -> list[Row[Any]]:
    """The account's rules of a kind whose stored settings (compact JSON) contain `needle`."""
    return list(await conn.execute(
        select(noise_rule.c.rule_id, noise_rule.c.rule_name)
        .where(noise_rule.c.account_id == account_id, noise_rule.c.kind == kind,
               noise_rule.c.config.contains(needle, autoescape=True))
        .order_by(noise_rule.c.rule_id)))


def enabled_rules_sync(conn: Connection, channel_id: int) -> list[Any]:
    return list(conn.execute(_ENABLED_RULES, {"channel_id": channel_id}).all())


def count_drop_sync(conn: Connection, rule_id: str) -> None:
    conn.execute(_COUNT_DROP, {"b_rule_id": rule_id})
