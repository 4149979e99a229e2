"""Every query of the console's own tables (db/tables/web.py). Sessions and links are found
by the hash of their token only; the rows they lead to carry their account, and the member's
data is read through the platform's services."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, bindparam, delete, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.web import (
    console_credential,
    console_link,
    console_session,
    console_sign_in_failure,
)
from dutyline.db.upsert import insert_for


async def _upsert(conn: AsyncConnection, table: Table, values: dict[str, Any],
                  key: str) -> None:
    stmt = insert_for(conn)(table).values(**values)
    await conn.execute(stmt.on_conflict_do_update(
        index_elements=[key], set_={k: v for k, v in values.items() if k != key}))


# --- credentials ----------------------------------------------------------------------------


_CREDENTIALS = select(console_credential).where(
    console_credential.c.member_id.in_(bindparam("member_ids", expanding=True)))


def credentials_sync(conn: Connection, member_ids: list[int]) -> dict[int, Row[Any]]:
    if not member_ids:
        return {}
    rows = conn.execute(_CREDENTIALS, {"member_ids": member_ids})
    return {int(r.member_id): r for r in rows}


def credential_sync(conn: Connection, member_id: int) -> Row[Any] | None:
    return credentials_sync(conn, [member_id]).get(member_id)


async def credentials(conn: AsyncConnection, member_ids: list[int]) -> dict[int, Row[Any]]:
    return await conn.run_sync(credentials_sync, member_ids)


async def credential(conn: AsyncConnection, member_id: int) -> Row[Any] | None:
    return (await credentials(conn, [member_id])).get(member_id)


async def set_password(conn: AsyncConnection, *, account_id: int, member_id: int,
                       password_hash: str, now_s: int) -> None:
    await _upsert(conn, console_credential, {
        "member_id": member_id, "account_id": account_id, "password_hash": password_hash,
        "updated_at": now_s,
    }, "member_id")


async def set_totp(conn: AsyncConnection, member_id: int, *, sealed_secret: str,
                   last_step: int, now_s: int) -> None:
    await conn.execute(update(console_credential).where(
        console_credential.c.member_id == member_id).values(
        totp_secret=sealed_secret, totp_last_step=last_step, updated_at=now_s))


async def claim_totp_step(conn: AsyncConnection, member_id: int, step: int) -> bool:
    """Record `step` as used; False when it (or a later one) was used already."""
    result = await conn.execute(update(console_credential).where(
        console_credential.c.member_id == member_id,
        console_credential.c.totp_last_step < step).values(totp_last_step=step))
    return result.rowcount == 1


# --- sessions -------------------------------------------------------------------------------


async def insert_session(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(console_session).values(**values))


async def live_session(conn: AsyncConnection, session_hash: str, now_s: int) -> Row[Any] | None:
    return (await conn.execute(select(console_session).where(
        console_session.c.session_hash == session_hash,
        console_session.c.expires_at > now_s))).first()


async def touch_session(conn: AsyncConnection, session_hash: str, *, now_s: int,
                        expires_at: int) -> None:
    await conn.execute(update(console_session).where(
        console_session.c.session_hash == session_hash).values(
        last_seen_at=now_s, expires_at=expires_at))


async def delete_session(conn: AsyncConnection, session_hash: str) -> None:
    await conn.execute(delete(console_session).where(
        console_session.c.session_hash == session_hash))


_SESSIONS_OF = (select(console_session)
                .where(console_session.c.member_id == bindparam("member_id"),
                       console_session.c.expires_at > bindparam("now_s"))
                .order_by(console_session.c.last_seen_at.desc()))


def sessions_of_sync(conn: Connection, member_id: int, now_s: int) -> list[Row[Any]]:
    return list(conn.execute(_SESSIONS_OF, {"member_id": member_id, "now_s": now_s}))


async def delete_sessions_of(conn: AsyncConnection, member_id: int, *,
                             keep: str | None = None, expired_before: int | None = None,
                             ) -> int:
    """End a member's sessions: all but `keep`, or only those expired before a time."""
    conditions = [console_session.c.member_id == member_id]
    if keep is not None:
        conditions.append(console_session.c.session_hash != keep)
    if expired_before is not None:
        conditions.append(console_session.c.expires_at <= expired_before)
    result = await conn.execute(delete(console_session).where(*conditions))
    return int(result.rowcount or 0)


# --- one-time links -------------------------------------------------------------------------


async def insert_link(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(console_link).values(**values))


async def usable_link(conn: AsyncConnection, token_hash: str, purpose: str,
                      now_s: int) -> Row[Any] | None:
    return (await conn.execute(select(console_link).where(
        console_link.c.token_hash == token_hash, console_link.c.purpose == purpose,
        console_link.c.used_at == 0, console_link.c.expires_at > now_s))).first()


async def use_link(conn: AsyncConnection, token_hash: str, purpose: str, now_s: int) -> bool:
    """Mark the link used; False when it was not usable (one concurrent use wins)."""
    result = await conn.execute(update(console_link).where(
        console_link.c.token_hash == token_hash, console_link.c.purpose == purpose,
        console_link.c.used_at == 0, console_link.c.expires_at > now_s).values(used_at=now_s))
    return result.rowcount == 1


async def retire_links(conn: AsyncConnection, member_id: int, purpose: str, now_s: int) -> None:
    """Older links of this purpose stop working when a new one is made or one is used."""
    await conn.execute(update(console_link).where(
        console_link.c.member_id == member_id, console_link.c.purpose == purpose,
        console_link.c.used_at == 0).values(used_at=now_s))


# --- sign-in failures -----------------------------------------------------------------------


async def failures(conn: AsyncConnection, subjects: list[str]) -> dict[str, Row[Any]]:
    rows = await conn.execute(select(console_sign_in_failure).where(
        console_sign_in_failure.c.subject.in_(subjects)))
    return {r.subject: r for r in rows}


async def save_failure(conn: AsyncConnection, *, subject: str, failures: int,
                       last_failure_at: int, locked_until: int) -> None:
    await _upsert(conn, console_sign_in_failure, {
        "subject": subject, "failures": failures, "last_failure_at": last_failure_at,
        "locked_until": locked_until,
    }, "subject")


async def clear_failures(conn: AsyncConnection, subjects: list[str]) -> None:
    await conn.execute(delete(console_sign_in_failure).where(
        console_sign_in_failure.c.subject.in_(subjects)))
