"""Every query of integration routes: one per integration, scoped by account."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db import per_integration
from dutyline.db.tables.channel import (
    channel,
    integration,
    integration_route,
    integration_route_history,
)


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


# -- history: each saved version ---------------------------------------------------------------

H = integration_route_history.c


async def add_version(conn: AsyncConnection, *, account_id: int, integration_id: int,
                      version: int, config: str, updated_by: int, updated_at: int,
                      keep: int) -> None:
    """Record a saved version, and forget those more than `keep` versions older."""
    await conn.execute(insert(integration_route_history).values(
        integration_id=integration_id, version=version, account_id=account_id, config=config,
        updated_by=updated_by, updated_at=updated_at))
    await conn.execute(delete(integration_route_history).where(
        H.integration_id == integration_id, H.version <= version - keep))


_HISTORY_SCOPE = (H.account_id == bindparam("account_id"),
                  H.integration_id == bindparam("integration_id"))
_HISTORY_COUNT = select(func.count()).where(*_HISTORY_SCOPE)
_HISTORY_PAGE = {
    asc: select(H.version, H.config, H.updated_by, H.updated_at).where(*_HISTORY_SCOPE)
    .order_by(H.version.asc() if asc else H.version.desc())
    .limit(bindparam("limit")).offset(bindparam("offset"))
    for asc in (False, True)
}


def history_page_sync(conn: Connection, account_id: int, integration_id: int, *, offset: int,
                      limit: int, asc: bool) -> tuple[int, list[Any]]:
    """(total, one page) of an integration's saved versions, newest first unless `asc`."""
    scope = {"account_id": account_id, "integration_id": integration_id}
    total = int(conn.execute(_HISTORY_COUNT, scope).scalar_one())
    if not total or offset >= total:
        return total, []
    rows = conn.execute(_HISTORY_PAGE[asc], {**scope, "offset": offset, "limit": limit})
    return total, list(rows.all())


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


_OWN_CHANNEL = select(integration.c.channel_id).where(
    integration.c.account_id == bindparam("account_id"),
    integration.c.integration_id == bindparam("integration_id"))


def own_channel_sync(conn: Connection, account_id: int, integration_id: int) -> int:
    """The channel an integration belongs to (deleted integrations included); 0 if none."""
    found = conn.execute(_OWN_CHANNEL, {"account_id": account_id,
                                        "integration_id": integration_id}).scalar()
    return 0 if found is None else int(found)
