"""Every query of integration routes: one per integration, scoped by account."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db import per_integration
from dutyline.db.tables.channel import channel, integration_route


async def get(conn: AsyncConnection, account_id: int, integration_id: int) -> Row[Any] | None:
    # Locked: a save compares the version the caller read (optimistic concurrency).
    return await per_integration.get(conn, integration_route, account_id, integration_id,
                                     for_update=True)


# -- reads (sync: a read operation's one unit of database work, api/operation.py) --------

_reads = per_integration.Reads(integration_route)
get_sync = _reads.get
list_for_sync = _reads.list_for


async def save(conn: AsyncConnection, *, exists: bool, integration_id: int,
               values: dict[str, Any]) -> None:
    await per_integration.save(conn, integration_route, exists=exists,
                               integration_id=integration_id, values=values)


# -- hot path (sync: ingestion runs on the database thread, see Database.run_sync) -------------

_CONFIG = select(integration_route.c.version, integration_route.c.config).where(
    integration_route.c.integration_id == bindparam("integration_id"))


def config_sync(conn: Connection, integration_id: int) -> Any:
    return conn.execute(_CONFIG, {"integration_id": integration_id}).first()


# A name_mapping case's channel: the account's live channel of that name (names are unique per
# account among channels not deleted, compared lower-cased: channel.name_key).
_NAMED = select(channel.c.channel_id).where(
    channel.c.account_id == bindparam("account_id"),
    channel.c.name_key == bindparam("name_key"), channel.c.deleted_at == 0)


def channel_named_sync(conn: Connection, account_id: int, name: str) -> int | None:
    name_key = name.strip().lower()
    if not name_key or len(name_key) > 64:  # no channel has such a name
        return None
    found = conn.execute(_NAMED, {"account_id": account_id, "name_key": name_key}).scalar()
    return None if found is None else int(found)
