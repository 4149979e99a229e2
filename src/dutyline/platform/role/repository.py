"""Every role query. Each one is scoped by account_id: that is the visibility rule."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.paging import ids_by_key, ordered
from dutyline.db.tables.platform import member, member_role, role, role_permission

_ORDER_COLUMNS = {"created_at": role.c.created_at, "updated_at": role.c.updated_at}


async def list_all(
    conn: AsyncConnection, account_id: int, *, orderby: str, asc: bool
) -> list[Row[Any]]:
    order = ordered(_ORDER_COLUMNS[orderby], role.c.role_id, asc=asc)
    rows = await conn.execute(select(role).where(role.c.account_id == account_id).order_by(*order))
    return list(rows)


async def find(conn: AsyncConnection, account_id: int, role_id: int) -> Row[Any] | None:
    stmt = select(role).where(role.c.account_id == account_id, role.c.role_id == role_id)
    return (await conn.execute(stmt)).first()


async def find_many(conn: AsyncConnection, account_id: int, role_ids: set[int]) -> list[Row[Any]]:
    if not role_ids:
        return []
    stmt = select(role).where(role.c.account_id == account_id, role.c.role_id.in_(role_ids))
    return list(await conn.execute(stmt))


async def find_builtin(conn: AsyncConnection, account_id: int, builtin: str) -> Row[Any] | None:
    stmt = select(role).where(role.c.account_id == account_id, role.c.builtin == builtin)
    return (await conn.execute(stmt.limit(1))).first()


async def find_by_name(conn: AsyncConnection, account_id: int, name: str) -> Row[Any] | None:
    # Case-insensitive: "admin" must not sit beside the built-in "Admin".
    stmt = select(role).where(
        role.c.account_id == account_id, func.lower(role.c.role_name) == name.lower()
    )
    return (await conn.execute(stmt.limit(1))).first()


async def permission_ids_by_role(
    conn: AsyncConnection, role_ids: list[int]
) -> dict[int, list[int]]:
    return await ids_by_key(conn, role_permission.c.role_id, role_permission.c.permission_id,
                            role_ids)


async def insert_role(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(role).values(**values))


async def update_role(conn: AsyncConnection, role_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(role).where(role.c.role_id == role_id).values(**values))


async def replace_permissions(
    conn: AsyncConnection, role_id: int, permission_ids: list[int]
) -> None:
    await conn.execute(delete(role_permission).where(role_permission.c.role_id == role_id))
    if permission_ids:
        await conn.execute(
            insert(role_permission),
            [{"role_id": role_id, "permission_id": p} for p in permission_ids],
        )


async def holder_count(conn: AsyncConnection, role_id: int) -> int:
    stmt = select(func.count()).select_from(member_role).where(member_role.c.role_id == role_id)
    return int((await conn.execute(stmt)).scalar_one())


async def delete_role(conn: AsyncConnection, role_id: int) -> None:
    await conn.execute(delete(role_permission).where(role_permission.c.role_id == role_id))
    await conn.execute(delete(role).where(role.c.role_id == role_id))


async def member_grants(conn: AsyncConnection, account_id: int, member_id: int) -> list[Row[Any]]:
    """(builtin, permission_id) of each enabled role of an enabled member of the account (one
    row of NULLs for a member without roles; none for no such member)."""
    stmt = (
        select(role.c.builtin, role_permission.c.permission_id)
        .select_from(member)
        .outerjoin(member_role, member_role.c.member_id == member.c.member_id)
        .outerjoin(role, (role.c.role_id == member_role.c.role_id)
                   & (role.c.status == "enabled"))
        .outerjoin(role_permission, role_permission.c.role_id == role.c.role_id)
        .where(member.c.account_id == account_id, member.c.member_id == member_id,
               member.c.status == "enabled")
    )
    return list(await conn.execute(stmt))
