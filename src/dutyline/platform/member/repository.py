"""Every member query. Each one is scoped by account_id: that is the visibility rule."""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import Select

from dutyline.db.like import ESCAPE, contains_pattern
from dutyline.db.paging import ordered, windowed_page
from dutyline.db.tables.platform import (
    account,
    app_key,
    member,
    member_role,
    role,
    role_permission,
    team_member,
)

_ORDER_COLUMNS = {"created_at": member.c.created_at, "updated_at": member.c.updated_at}


_ACCOUNT_ROW = select(account).where(account.c.account_id == bindparam("account_id"))
_MEMBER = select(member).where(member.c.account_id == bindparam("account_id"),
                               member.c.member_id == bindparam("member_id"))


def account_row_sync(conn: Connection, account_id: int) -> Row[Any]:
    return conn.execute(_ACCOUNT_ROW, {"account_id": account_id}).one()


def get_sync(conn: Connection, account_id: int, member_id: int) -> Row[Any] | None:
    return conn.execute(_MEMBER, {"account_id": account_id, "member_id": member_id}).first()


async def get(conn: AsyncConnection, account_id: int, member_id: int) -> Row[Any] | None:
    return await conn.run_sync(get_sync, account_id, member_id)


_TIME_ZONES_OF = (
    select(member.c.time_zone, account.c.time_zone.label("account_time_zone"))
    .select_from(member.join(account, account.c.account_id == member.c.account_id))
    .where(member.c.account_id == bindparam("account_id"),
           member.c.member_id == bindparam("member_id")))


async def time_zones(conn: AsyncConnection, account_id: int,
                     member_id: int) -> tuple[str, str]:
    """(the member's own time zone, their account's), "" for one not set."""
    row = (await conn.execute(_TIME_ZONES_OF, {"account_id": account_id,
                                               "member_id": member_id})).first()
    return ("", "") if row is None else (row.time_zone or "", row.account_time_zone or "")


# --- hot sync reads: one unit of database work per request (api/operation.py) ----------
# Statements are built once, with bound parameters, so SQLAlchemy reuses their compiled form.


@functools.cache
def _page_statements(by_role: bool, by_query: bool, orderby: str,
                     asc: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, windowed page) queries for one combination of filters."""
    # Deleted members stay as rows (their names still label old records, see /person/infos)
    # but are no longer part of the account's member list.
    conditions = [member.c.account_id == bindparam("account_id"), member.c.status != "deleted"]
    if by_role:
        conditions.append(member.c.member_id.in_(
            select(member_role.c.member_id).where(
                member_role.c.account_id == bindparam("account_id"),
                member_role.c.role_id == bindparam("role_id"))
        ))
    if by_query:
        conditions.append(or_(
            func.lower(member.c.member_name).like(bindparam("needle"), escape=ESCAPE),
            member.c.email.like(bindparam("needle"), escape=ESCAPE),
            member.c.phone.like(bindparam("phone_needle"), escape=ESCAPE),
        ))
    count = select(func.count()).select_from(member).where(*conditions)
    page = select(member).where(*conditions).order_by(
        *ordered(_ORDER_COLUMNS[orderby], member.c.member_id, asc=asc))
    return count, windowed_page(page)


def list_page_sync(
    conn: Connection, account_id: int, *, role_id: int | None, query: str, orderby: str,
    asc: bool, offset: int, limit: int,
) -> tuple[int, list[Row[Any]]]:
    params: dict[str, Any] = {"account_id": account_id, "offset": offset, "limit": limit}
    if role_id is not None:
        params["role_id"] = role_id
    if query:
        params["needle"] = contains_pattern(query.lower())
        params["phone_needle"] = contains_pattern(query)
    count, page = _page_statements(role_id is not None, bool(query), orderby, asc)
    rows = conn.execute(page, params).all()
    if rows:
        return int(rows[0].total), list(rows)
    return int(conn.execute(count, params).scalar_one()), []


_ROLES_OF = (
    select(member_role.c.member_id, member_role.c.role_id)
    .where(member_role.c.member_id.in_(bindparam("member_ids", expanding=True)))
    .order_by(member_role.c.member_id, member_role.c.role_id)
)


def role_ids_by_member_sync(conn: Connection, member_ids: list[int]) -> dict[int, list[int]]:
    """member_id -> role ids, ascending; a member without roles reads as an empty list."""
    result: dict[int, list[int]] = defaultdict(list)
    if member_ids:
        for member_id, role_id in conn.execute(_ROLES_OF, {"member_ids": member_ids}):
            result[member_id].append(role_id)
    return result


_FIND_MANY = (
    select(member)
    .where(member.c.account_id == bindparam("account_id"),
           member.c.member_id.in_(bindparam("ids", expanding=True)))
    .order_by(member.c.member_id)
)
_OWNERS_AMONG = (
    select(member_role.c.member_id)
    .join(role, role.c.role_id == member_role.c.role_id)
    .where(member_role.c.account_id == bindparam("account_id"), role.c.builtin == "owner",
           member_role.c.member_id.in_(bindparam("ids", expanding=True)))
)


def find_many_sync(conn: Connection, account_id: int, ids: list[int]) -> list[Row[Any]]:
    if not ids:
        return []
    return list(conn.execute(_FIND_MANY, {"account_id": account_id, "ids": ids}))


def owner_ids_sync(conn: Connection, account_id: int, member_ids: list[int]) -> set[int]:
    if not member_ids:
        return set()
    return set(conn.execute(_OWNERS_AMONG, {"account_id": account_id, "ids": member_ids})
               .scalars())


# --- the rest ----------------------------------------------------------------------------


async def find_one(conn: AsyncConnection, account_id: int, **match: str | int) -> list[Row[Any]]:
    """Non-deleted members matching every given column; at most two, to detect ambiguity."""
    stmt = select(member).where(member.c.account_id == account_id, member.c.status != "deleted")
    for name, value in match.items():
        stmt = stmt.where(member.c[name] == value)
    return list(await conn.execute(stmt.limit(2)))


_NAMES = select(member.c.member_id, member.c.member_name, member.c.email).where(
    member.c.account_id == bindparam("account_id"),
    member.c.member_id.in_(bindparam("ids", expanding=True)))


def names_sync(conn: Connection, account_id: int, ids: list[int]) -> dict[int, tuple[str, str]]:
    if not ids:
        return {}
    rows = conn.execute(_NAMES, {"account_id": account_id, "ids": ids})
    return {r[0]: (r[1], r[2]) for r in rows}


async def taken_contacts(
    conn: AsyncConnection, account_id: int, *, emails: set[str], phones: set[str]
) -> tuple[set[str], set[str]]:
    base = select(member.c.email, member.c.phone).where(
        member.c.account_id == account_id, member.c.status != "deleted"
    )
    taken_emails: set[str] = set()
    taken_phones: set[str] = set()
    if emails:
        taken_emails = {r.email for r in await conn.execute(base.where(member.c.email.in_(emails)))}
    if phones:
        taken_phones = {r.phone for r in await conn.execute(base.where(member.c.phone.in_(phones)))}
    return taken_emails, taken_phones


async def role_ids_by_member(conn: AsyncConnection, member_ids: list[int]) -> dict[int, list[int]]:
    return await conn.run_sync(lambda sync: role_ids_by_member_sync(sync, member_ids))


async def owner_ids(conn: AsyncConnection, account_id: int, member_ids: list[int]) -> set[int]:
    return await conn.run_sync(lambda sync: owner_ids_sync(sync, account_id, member_ids))


async def insert_members(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    await conn.execute(insert(member), rows)


async def add_roles(
    conn: AsyncConnection, account_id: int, member_id: int, role_ids: list[int]
) -> None:
    if role_ids:
        await conn.execute(insert(member_role), [
            {"member_id": member_id, "role_id": r, "account_id": account_id} for r in role_ids
        ])


async def remove_roles(conn: AsyncConnection, member_id: int, role_ids: list[int]) -> None:
    if role_ids:
        await conn.execute(delete(member_role).where(
            member_role.c.member_id == member_id, member_role.c.role_id.in_(role_ids)))


async def touch(conn: AsyncConnection, member_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(member).where(member.c.member_id == member_id).values(**values))


async def soft_delete(conn: AsyncConnection, member_id: int, now_s: int) -> None:
    """Mark deleted and cut every tie: roles, teams and keys (so their keys fail at once)."""
    await conn.execute(delete(member_role).where(member_role.c.member_id == member_id))
    await conn.execute(delete(team_member).where(team_member.c.person_id == member_id))
    await conn.execute(delete(app_key).where(app_key.c.person_id == member_id))
    await touch(conn, member_id, {"status": "deleted", "updated_at": now_s})


def live_ids_statement() -> Select[tuple[int]]:
    """Live members among `member_ids` (expanding bind parameter) of `account_id`."""
    return select(member.c.member_id).where(
        member.c.account_id == bindparam("account_id"),
        member.c.member_id.in_(bindparam("member_ids", expanding=True)),
        member.c.status != "deleted")


async def live_by_email(conn: AsyncConnection, email: str) -> list[Any]:
    """(account_id, member_id) of the live members with this e-mail, in every account: the
    operator's shell only, never a caller's read."""
    return list((await conn.execute(select(member.c.account_id, member.c.member_id).where(
        member.c.email == email.strip().lower(), member.c.status != "deleted",
    ).order_by(member.c.account_id))).all())


async def caller_rows(conn: AsyncConnection, account_id: int, member_id: int) -> list[Any]:
    """An enabled member with each permission of their enabled roles (one row with NULLs for a
    member without roles; none when there is no such enabled member): the app key's
    authentication query (platform/app_key/repository.py) for a person signed in without a
    key."""
    stmt = (
        select(member.c.member_id, member.c.member_name, member.c.account_id, role.c.builtin,
               role_permission.c.permission_id)
        .select_from(member)
        .outerjoin(member_role, member_role.c.member_id == member.c.member_id)
        .outerjoin(role, (role.c.role_id == member_role.c.role_id)
                   & (role.c.status == "enabled"))
        .outerjoin(role_permission, role_permission.c.role_id == role.c.role_id)
        .where(member.c.account_id == account_id, member.c.member_id == member_id,
               member.c.status == "enabled")
    )
    return list((await conn.execute(stmt)).all())
