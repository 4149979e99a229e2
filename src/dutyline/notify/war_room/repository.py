"""Every query of war rooms, scoped by account."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.notify_war_room import war_room


async def for_incident(conn: AsyncConnection, account_id: int, incident_id: str,
                       integration_id: int = 0) -> list[Row[Any]]:
    """The incident's rooms, oldest first (then by integration); of one integration when
    `integration_id`."""
    stmt = select(war_room).where(war_room.c.account_id == account_id,
                                  war_room.c.incident_id == incident_id)
    if integration_id:
        stmt = stmt.where(war_room.c.integration_id == integration_id)
    return list(await conn.execute(stmt.order_by(war_room.c.created_at,
                                                 war_room.c.integration_id)))


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
