"""Every query of war rooms, scoped by account."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.notify_war_room import war_room

_OF_INCIDENT = select(war_room).where(war_room.c.account_id == bindparam("account_id"),
                                      war_room.c.incident_id == bindparam("incident_id"))
_ORDER = (war_room.c.created_at, war_room.c.integration_id)
_FOR_INCIDENT = {
    False: _OF_INCIDENT.order_by(*_ORDER),
    True: _OF_INCIDENT.where(war_room.c.integration_id == bindparam("integration_id"))
    .order_by(*_ORDER),
}


def for_incident_sync(conn: Connection, account_id: int, incident_id: str,
                      integration_id: int = 0) -> list[Row[Any]]:
    """The incident's rooms, oldest first (then by integration); of one integration when
    `integration_id`."""
    params: dict[str, Any] = {"account_id": account_id, "incident_id": incident_id}
    if integration_id:
        params["integration_id"] = integration_id
    return list(conn.execute(_FOR_INCIDENT[bool(integration_id)], params))


async def for_incident(conn: AsyncConnection, account_id: int, incident_id: str,
                       integration_id: int = 0) -> list[Row[Any]]:
    return await conn.run_sync(for_incident_sync, account_id, incident_id, integration_id)


async def by_chat(conn: AsyncConnection, account_id: int, integration_id: int,
                  chat_id: str) -> Row[Any] | None:
    stmt = select(war_room).where(war_room.c.account_id == account_id,
                                  war_room.c.integration_id == integration_id,
                                  war_room.c.chat_id == chat_id)
    return (await conn.execute(stmt.order_by(war_room.c.created_at))).first()


async def add(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(war_room).values(**values))


async def set_members(conn: AsyncConnection, account_id: int, war_room_id: int,
                      member_ids: str) -> None:
    await conn.execute(update(war_room).where(
        war_room.c.account_id == account_id,
        war_room.c.war_room_id == war_room_id).values(member_ids=member_ids))


async def remove(conn: AsyncConnection, account_id: int, war_room_id: int) -> None:
    await conn.execute(delete(war_room).where(war_room.c.account_id == account_id,
                                              war_room.c.war_room_id == war_room_id))
