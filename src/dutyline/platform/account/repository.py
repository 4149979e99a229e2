"""Every query of accounts: the account row, and the rows a new account starts with."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import account, member, member_role, role, role_permission

_ACCOUNT = select(account).where(account.c.account_id == bindparam("account_id"))


def get_account_sync(conn: Connection, account_id: int) -> Any:
    return conn.execute(_ACCOUNT, {"account_id": account_id}).first()


async def any_account(conn: AsyncConnection) -> bool:
    return bool((await conn.execute(select(func.count()).select_from(account))).scalar_one())


async def time_zone(conn: AsyncConnection, account_id: int) -> str | None:
    return await conn.run_sync(time_zone_sync, account_id)


_TIME_ZONE = select(account.c.time_zone).where(account.c.account_id == bindparam("account_id"))


def time_zone_sync(conn: Connection, account_id: int) -> str | None:
    return conn.execute(_TIME_ZONE, {"account_id": account_id}).scalar()


async def insert_account(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(account).values(**values))


async def insert_builtin_role(conn: AsyncConnection, values: dict[str, Any],
                              permission_ids: list[int]) -> None:
    await conn.execute(insert(role).values(**values))
    await conn.execute(insert(role_permission), [
        {"role_id": values["role_id"], "permission_id": pid} for pid in permission_ids])


async def insert_owner(conn: AsyncConnection, values: dict[str, Any], owner_role_id: int) -> None:
    await conn.execute(insert(member).values(**values))
    await conn.execute(insert(member_role).values(
        member_id=values["member_id"], role_id=owner_role_id, account_id=values["account_id"]))


async def update_account(conn: AsyncConnection, account_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(account).where(account.c.account_id == account_id)
                       .values(**values))
