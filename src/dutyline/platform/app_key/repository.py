"""App-key queries for the HTTP operations. Each one is scoped by account_id."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import app_key, member

# Never the hash: nothing outside authentication needs it.
_PUBLIC = (app_key.c.key_id, app_key.c.key_name, app_key.c.person_id, app_key.c.suffix,
           app_key.c.created_at, app_key.c.last_used_at)


async def active_member(conn: AsyncConnection, account_id: int, person_id: int) -> bool:
    stmt = select(member.c.member_id).where(
        member.c.account_id == account_id, member.c.member_id == person_id,
        member.c.status == "enabled",
    )
    return (await conn.execute(stmt)).first() is not None


async def list_for_person(conn: AsyncConnection, account_id: int, person_id: int) -> list[Row[Any]]:
    stmt = (select(*_PUBLIC)
            .where(app_key.c.account_id == account_id, app_key.c.person_id == person_id)
            .order_by(app_key.c.created_at, app_key.c.key_id))
    return list(await conn.execute(stmt))


async def get(conn: AsyncConnection, account_id: int, key_id: int) -> Any:
    stmt = select(*_PUBLIC).where(app_key.c.account_id == account_id, app_key.c.key_id == key_id)
    return (await conn.execute(stmt)).first()


async def delete_key(conn: AsyncConnection, key_id: int) -> None:
    await conn.execute(delete(app_key).where(app_key.c.key_id == key_id))
