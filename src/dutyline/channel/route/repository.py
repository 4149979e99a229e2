"""Every query of integration routes: one per integration, scoped by account."""

from __future__ import annotations

from collections.abc import Sequence
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

_t = integration_route
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
