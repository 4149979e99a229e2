"""Every app-key query. Those of the operations are scoped by account_id; the operator's
(`account_of_*`, `list_all`) are not, on purpose: the server's shell sees every account."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import app_key, member

# Never the hash: nothing outside authentication needs it.
_PUBLIC = (app_key.c.key_id, app_key.c.key_name, app_key.c.person_id, app_key.c.suffix,
           app_key.c.created_at, app_key.c.last_used_at)


async def account_of_member(conn: AsyncConnection, person_id: int) -> int | None:
    """The account of an enabled member; None when there is no such member."""
    stmt = select(member.c.account_id).where(
        member.c.member_id == person_id, member.c.status == "enabled")
    row = (await conn.execute(stmt)).first()
    return None if row is None else int(row.account_id)


async def account_of_key(conn: AsyncConnection, key_id: int) -> int | None:
    row = (await conn.execute(
        select(app_key.c.account_id).where(app_key.c.key_id == key_id))).first()
    return None if row is None else int(row.account_id)


async def list_all(conn: AsyncConnection, account_id: int | None) -> list[Row[Any]]:
    stmt = select(app_key.c.key_id, app_key.c.account_id, app_key.c.person_id,
                  app_key.c.key_name, app_key.c.suffix, app_key.c.created_at,
                  app_key.c.last_used_at).order_by(app_key.c.created_at)
    if account_id is not None:
        stmt = stmt.where(app_key.c.account_id == account_id)
    return list(await conn.execute(stmt))


async def insert_key(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(app_key).values(**values))


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
