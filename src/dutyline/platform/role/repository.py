"""Every role query. Each one is scoped by account_id: that is the visibility rule."""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, Select, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.paging import ordered
from dutyline.db.tables.platform import member, member_role, role, role_permission
from dutyline.db.upsert import insert_for

_ORDER_COLUMNS = {"created_at": role.c.created_at, "updated_at": role.c.updated_at}


@functools.cache
def _list_statement(orderby: str, asc: bool) -> Select[Any]:
    return (select(role).where(role.c.account_id == bindparam("account_id"))
            .order_by(*ordered(_ORDER_COLUMNS[orderby], role.c.role_id, asc=asc)))


_ROLE = select(role).where(role.c.account_id == bindparam("account_id"),
                           role.c.role_id == bindparam("role_id"))
_ROLES = select(role).where(role.c.account_id == bindparam("account_id"),
                            role.c.role_id.in_(bindparam("role_ids", expanding=True)))
_BUILTIN = select(role).where(role.c.account_id == bindparam("account_id"),
                              role.c.builtin == bindparam("builtin")).limit(1)
_PERMISSIONS_OF = (
    select(role_permission.c.role_id, role_permission.c.permission_id)
    .where(role_permission.c.role_id.in_(bindparam("role_ids", expanding=True)))
    .order_by(role_permission.c.role_id, role_permission.c.permission_id))


def list_all_sync(conn: Connection, account_id: int, *, orderby: str,
                  asc: bool) -> list[Row[Any]]:
    return list(conn.execute(_list_statement(orderby, asc), {"account_id": account_id}))


def find_sync(conn: Connection, account_id: int, role_id: int) -> Row[Any] | None:
    return conn.execute(_ROLE, {"account_id": account_id, "role_id": role_id}).first()


def find_many_sync(conn: Connection, account_id: int, role_ids: set[int]) -> list[Row[Any]]:
    if not role_ids:
        return []
    return list(conn.execute(_ROLES, {"account_id": account_id,
                                      "role_ids": sorted(role_ids)}))


def find_builtin_sync(conn: Connection, account_id: int, builtin: str) -> Row[Any] | None:
    return conn.execute(_BUILTIN, {"account_id": account_id, "builtin": builtin}).first()


def permission_ids_by_role_sync(conn: Connection, role_ids: list[int]) -> dict[int, list[int]]:
    """role_id -> permission ids, ascending; a role without any reads as an empty list."""
    result: dict[int, list[int]] = defaultdict(list)
    if role_ids:
        for role_id, permission_id in conn.execute(_PERMISSIONS_OF, {"role_ids": role_ids}):
            result[role_id].append(permission_id)
    return result


def _by_name(account_id: int, name: str) -> Select[Any]:
    # Case-insensitive: "admin" must not sit beside the built-in "Admin".
    return select(role).where(
        role.c.account_id == account_id, func.lower(role.c.role_name) == name.lower()
    ).limit(1)


async def find_by_name(conn: AsyncConnection, account_id: int, name: str) -> Row[Any] | None:
    row: Row[Any] | None = (await conn.execute(_by_name(account_id, name))).first()
    return row


def find_by_name_sync(conn: Connection, account_id: int, name: str) -> Row[Any] | None:
    return conn.execute(_by_name(account_id, name)).first()


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


_HELD = (
    select(member_role.c.member_id, role.c.builtin, role_permission.c.permission_id)
    .select_from(member_role)
    .join(member, member.c.member_id == member_role.c.member_id)
    .join(role, role.c.role_id == member_role.c.role_id)
    .outerjoin(role_permission, role_permission.c.role_id == role.c.role_id)
    .where(member.c.account_id == bindparam("account_id"),
           member.c.member_id.in_(bindparam("member_ids", expanding=True)),
           member.c.status != "deleted"))


def held_grants_sync(conn: Connection, account_id: int,
                     member_ids: list[int]) -> list[Row[Any]]:
    """(member_id, builtin, permission_id) of every role these live members of the account
    hold, disabled roles included (one row per permission; NULL for a role without any)."""
    if not member_ids:
        return []
    return list(conn.execute(_HELD, {"account_id": account_id, "member_ids": member_ids}))


# --- holders (member_role) ----------------------------------------------------------------


async def live_member_ids(conn: AsyncConnection, account_id: int,
                          member_ids: list[int]) -> set[int]:
    """Which of these ids are members of the account that are not deleted."""
    if not member_ids:
        return set()
    stmt = select(member.c.member_id).where(
        member.c.account_id == account_id, member.c.member_id.in_(member_ids),
        member.c.status != "deleted")
    return set((await conn.execute(stmt)).scalars())


async def holders_among(conn: AsyncConnection, role_id: int, member_ids: list[int]) -> set[int]:
    stmt = select(member_role.c.member_id).where(
        member_role.c.role_id == role_id, member_role.c.member_id.in_(member_ids))
    return set((await conn.execute(stmt)).scalars())


async def add_holders(conn: AsyncConnection, account_id: int, role_id: int,
                      member_ids: list[int], now_s: int) -> None:
    """Grant the role; a member who got it meanwhile (a concurrent grant) is skipped."""
    if not member_ids:
        return
    await conn.execute(
        insert_for(conn)(member_role).on_conflict_do_nothing(),
        [{"member_id": m, "role_id": role_id, "account_id": account_id} for m in member_ids])
    await _touch_members(conn, member_ids, now_s)


async def remove_holders(conn: AsyncConnection, role_id: int, member_ids: list[int],
                         now_s: int) -> None:
    if not member_ids:
        return
    await conn.execute(delete(member_role).where(
        member_role.c.role_id == role_id, member_role.c.member_id.in_(member_ids)))
    await _touch_members(conn, member_ids, now_s)


async def _touch_members(conn: AsyncConnection, member_ids: list[int], now_s: int) -> None:
    await conn.execute(update(member).where(member.c.member_id.in_(member_ids))
                       .values(updated_at=now_s))
