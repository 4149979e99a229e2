"""Every integration query. Scoped by account_id; the reads a person makes go through the
channel's visibility (channel.repository.visible_to), so a private channel's integrations
are as hidden as the channel."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.channel.repository import Viewer, visible_to
from dutyline.db.paging import counted_windowed_page_sync, ordered, windowed_page
from dutyline.db.tables.channel import channel, integration, integration_custom_action

# Built once: ingestion runs this for every alert. The whole channel row comes along, so
# ingestion gets the key's integration and its channel's settings in one query.
_RESOLVE = (
    select(
        channel, integration.c.integration_id, integration.c.integration_name,
        integration.c.integration_type,
    )
    .select_from(integration)
    .join(channel, channel.c.channel_id == integration.c.channel_id)
    .where(
        integration.c.key_hash == bindparam("key_hash"),
        integration.c.status == "enabled",
        channel.c.account_id == integration.c.account_id,
        channel.c.deleted_at == 0,
    )
)

_ITEM_ROWS = (
    select(integration, channel.c.channel_name, integration_custom_action.c.url)
    .select_from(integration)
    .join(channel, channel.c.channel_id == integration.c.channel_id)
    .outerjoin(integration_custom_action,
               integration_custom_action.c.integration_id == integration.c.integration_id)
)


def resolve_sync(conn: Connection, key_hash: str) -> Any:
    """The live integration of a key hash joined with its (not deleted) channel's row."""
    return conn.execute(_RESOLVE, {"key_hash": key_hash}).first()


def _live(account_id: int, viewer: Viewer) -> list[Any]:
    return [
        integration.c.account_id == account_id,
        integration.c.status != "deleted",
        channel.c.account_id == account_id,
        channel.c.deleted_at == 0,
        visible_to(viewer),
    ]


def get_visible_sync(conn: Connection, account_id: int, integration_id: int,
                     viewer: Viewer) -> Row[Any] | None:
    stmt = _ITEM_ROWS.where(*_live(account_id, viewer),
                            integration.c.integration_id == integration_id)
    return conn.execute(stmt).first()


def list_page_sync(conn: Connection, account_id: int, viewer: Viewer, *,
                   channel_id: int | None, offset: int,
                   limit: int) -> tuple[int, list[Row[Any]]]:
    conditions = _live(account_id, viewer)
    if channel_id is not None:
        conditions.append(integration.c.channel_id == channel_id)
    count = (select(func.count()).select_from(integration)
             .join(channel, channel.c.channel_id == integration.c.channel_id)
             .where(*conditions))
    page = _ITEM_ROWS.where(*conditions).order_by(
        *ordered(integration.c.created_at, integration.c.integration_id, asc=False))
    total, rows = counted_windowed_page_sync(conn, count, windowed_page(page),
                                    params={"offset": offset, "limit": limit})
    return total, list(rows)


async def name_taken(conn: AsyncConnection, channel_id: int, name: str) -> bool:
    stmt = select(integration.c.integration_id).where(
        integration.c.channel_id == channel_id, integration.c.integration_name == name,
        integration.c.status != "deleted",
    ).limit(1)
    return (await conn.execute(stmt)).first() is not None


_NAMES = select(integration.c.integration_id, integration.c.integration_name,
                integration.c.integration_type).where(
    integration.c.account_id == bindparam("account_id"),
    integration.c.integration_id.in_(bindparam("ids", expanding=True)))
_IDS_OF_TYPES = select(integration.c.integration_id).where(
    integration.c.account_id == bindparam("account_id"),
    integration.c.integration_type.in_(bindparam("types", expanding=True)))


def names_sync(conn: Connection, account_id: int,
               integration_ids: list[int]) -> dict[int, tuple[str, str]]:
    if not integration_ids:
        return {}
    return {r[0]: (r[1], r[2])
            for r in conn.execute(_NAMES, {"account_id": account_id, "ids": integration_ids})}


def ids_of_types_sync(conn: Connection, account_id: int, types: list[str]) -> list[int]:
    return [r[0] for r in conn.execute(_IDS_OF_TYPES,
                                       {"account_id": account_id, "types": types})]


async def insert_integration(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(integration).values(**values))


async def mark_deleted(conn: AsyncConnection, account_id: int, integration_id: int,
                       now_s: int) -> None:
    await conn.execute(
        update(integration)
        .where(integration.c.account_id == account_id,
               integration.c.integration_id == integration_id)
        .values(status="deleted", updated_at=now_s)
    )


async def set_key(conn: AsyncConnection, account_id: int, integration_id: int, *,
                  key_hash: str, key_suffix: str, now_s: int) -> None:
    await conn.execute(
        update(integration)
        .where(integration.c.account_id == account_id,
               integration.c.integration_id == integration_id)
        .values(key_hash=key_hash, key_suffix=key_suffix, updated_at=now_s))


async def live_channel_exists(conn: AsyncConnection, account_id: int, channel_id: int) -> bool:
    stmt = select(channel.c.channel_id).where(
        channel.c.account_id == account_id, channel.c.channel_id == channel_id,
        channel.c.deleted_at == 0)
    return (await conn.execute(stmt)).first() is not None


async def first_of_type(conn: AsyncConnection, account_id: int, channel_id: int,
                        integration_type: str) -> Any:
    stmt = (select(integration.c.integration_id, integration.c.key_hash)
            .where(integration.c.account_id == account_id,
                   integration.c.channel_id == channel_id,
                   integration.c.integration_type == integration_type,
                   integration.c.status == "enabled")
            .order_by(integration.c.integration_id).limit(1))
    return (await conn.execute(stmt)).first()


async def insert_custom_action(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(integration_custom_action).values(**values))


async def custom_action_of_channel(conn: AsyncConnection, account_id: int, channel_id: int,
                                   integration_id: int) -> Any:
    """A custom action of the channel, whatever its status (the caller tells a disabled or
    deleted one apart), with its address and sealed key."""
    stmt = (
        select(integration.c.integration_id, integration.c.integration_name,
               integration.c.status, integration_custom_action.c.url,
               integration_custom_action.c.signing_secret_sealed)
        .select_from(integration)
        .join(integration_custom_action,
              integration_custom_action.c.integration_id == integration.c.integration_id)
        .where(integration.c.account_id == account_id,
               integration_custom_action.c.account_id == account_id,
               integration.c.channel_id == channel_id,
               integration.c.integration_id == integration_id)
    )
    return (await conn.execute(stmt)).first()
