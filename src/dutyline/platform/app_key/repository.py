"""Every app-key query. Those of the operations are scoped by account_id; the operator's
(`account_of_*`, `list_all`) are not, on purpose: the server's shell sees every account."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import (
    app_key,
    member,
    member_role,
    role,
    role_permission,
)

# Never the hash: nothing outside authentication needs it.
_PUBLIC = (app_key.c.key_id, app_key.c.key_name, app_key.c.person_id, app_key.c.suffix,
           app_key.c.created_at, app_key.c.last_used_at)


_ACCOUNT_OF_MEMBER = select(member.c.account_id).where(
    member.c.member_id == bindparam("person_id"), member.c.status == "enabled")


def account_of_member_sync(conn: Connection, person_id: int) -> int | None:
    """The account of an enabled member; None when there is no such member."""
    row = conn.execute(_ACCOUNT_OF_MEMBER, {"person_id": person_id}).first()
    return None if row is None else int(row[0])


async def account_of_member(conn: AsyncConnection, person_id: int) -> int | None:
    return await conn.run_sync(account_of_member_sync, person_id)


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


_KEYS_OF_PERSON = (select(*_PUBLIC)
                   .where(app_key.c.account_id == bindparam("account_id"),
                          app_key.c.person_id == bindparam("person_id"))
                   .order_by(app_key.c.created_at, app_key.c.key_id))


def list_for_person_sync(conn: Connection, account_id: int, person_id: int) -> list[Any]:
    """(key_id, key_name, person_id, suffix, created_at, last_used_at) of a member's keys."""
    return list(conn.execute(_KEYS_OF_PERSON, {"account_id": account_id,
                                               "person_id": person_id}))


_ACCOUNT_KEYS = (select(*_PUBLIC)
                 .where(app_key.c.account_id == bindparam("account_id"))
                 .order_by(app_key.c.created_at, app_key.c.key_id)
                 .offset(bindparam("offset")).limit(bindparam("limit")))
_ACCOUNT_KEY_COUNT = (select(func.count()).select_from(app_key)
                      .where(app_key.c.account_id == bindparam("account_id")))


def list_for_account_sync(conn: Connection, account_id: int, *, offset: int,
                          limit: int) -> tuple[int, list[Any]]:
    """(how many, one page of) the account's keys, oldest first, as list_for_person_sync."""
    total = int(conn.execute(_ACCOUNT_KEY_COUNT, {"account_id": account_id}).scalar_one())
    rows = list(conn.execute(_ACCOUNT_KEYS, {"account_id": account_id, "offset": offset,
                                             "limit": limit}))
    return total, rows


def get_sync(conn: Connection, account_id: int, key_id: int) -> Any:
    stmt = select(*_PUBLIC).where(app_key.c.account_id == account_id, app_key.c.key_id == key_id)
    return conn.execute(stmt).first()


async def get(conn: AsyncConnection, account_id: int, key_id: int) -> Any:
    stmt = select(*_PUBLIC).where(app_key.c.account_id == account_id, app_key.c.key_id == key_id)
    return (await conn.execute(stmt)).first()


async def delete_key(conn: AsyncConnection, key_id: int) -> None:
    await conn.execute(delete(app_key).where(app_key.c.key_id == key_id))


# --- authentication: on every request's path (platform/auth.py) -------------------------

_enabled_role = role.c.status == "enabled"

# One row per granted permission (or one row with NULLs for a member without roles).
_CALLER_QUERY = (
    select(
        app_key.c.key_id,
        app_key.c.suffix,
        member.c.member_id,
        member.c.member_name,
        member.c.account_id,
        role.c.builtin,
        role_permission.c.permission_id,
    )
    .select_from(app_key)
    .join(member, member.c.member_id == app_key.c.person_id)
    .outerjoin(member_role, member_role.c.member_id == member.c.member_id)
    .outerjoin(role, (role.c.role_id == member_role.c.role_id) & _enabled_role)
    .outerjoin(role_permission, role_permission.c.role_id == role.c.role_id)
    # Built once with a bound parameter: SQLAlchemy then reuses the compiled statement
    # instead of recomputing its cache key on every request.
    .where(member.c.status == "enabled", app_key.c.key_hash == bindparam("key_hash"))
)


async def caller_rows(conn: AsyncConnection, key_hash: str) -> Sequence[Any]:
    """The key's member with each permission of their enabled roles (none: no such key)."""
    return (await conn.execute(_CALLER_QUERY, {"key_hash": key_hash})).all()


def caller_rows_sync(conn: Connection, key_hash: str) -> Sequence[Any]:
    """`caller_rows` inside a sync unit of database work (a sync read operation's)."""
    return conn.execute(_CALLER_QUERY, {"key_hash": key_hash}).all()


async def set_last_used(conn: AsyncConnection, last_used: dict[int, int]) -> None:
    """key_id -> last use (Unix seconds); a time never moves back."""
    await conn.execute(
        update(app_key)
        .where(app_key.c.key_id == bindparam("k"), app_key.c.last_used_at < bindparam("t"))
        .values(last_used_at=bindparam("t")),
        [{"k": k, "t": t} for k, t in last_used.items()],
    )

