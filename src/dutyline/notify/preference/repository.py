"""Every query of members' notification preferences, scoped by account."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.notify import member_notify

_ONE = select(member_notify).where(member_notify.c.account_id == bindparam("account_id"),
                                   member_notify.c.member_id == bindparam("member_id"))


def get_sync(conn: Connection, account_id: int, member_id: int) -> Row[Any] | None:
    return conn.execute(_ONE, {"account_id": account_id, "member_id": member_id}).first()


async def many(conn: AsyncConnection, account_id: int, member_ids: list[int]) -> list[Row[Any]]:
    if not member_ids:
        return []
    stmt = select(member_notify).where(member_notify.c.account_id == account_id,
                                       member_notify.c.member_id.in_(member_ids))
    return list(await conn.execute(stmt))


async def upsert(conn: AsyncConnection, account_id: int, member_id: int,
                 values: dict[str, Any]) -> None:
    """Insert or update, in a form both databases take; a concurrent first write of the same
    member loses to the primary key and the caller's transaction fails (rare, retryable)."""
    done = await conn.execute(update(member_notify).where(
        member_notify.c.account_id == account_id,
        member_notify.c.member_id == member_id).values(**values))
    if done.rowcount == 0:
        await conn.execute(insert(member_notify).values(
            member_id=member_id, account_id=account_id, **values))
