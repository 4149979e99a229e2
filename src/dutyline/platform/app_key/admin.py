"""App-key operations for the `dutyline app-key` command (operator access, no app_key)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import app_key, member
from dutyline.platform.app_key import keys


async def create(conn: AsyncConnection, *, person_id: int, key_name: str) -> dict[str, Any]:
    row = (
        await conn.execute(
            select(member.c.account_id).where(
                member.c.member_id == person_id, member.c.status == "enabled"
            )
        )
    ).first()
    if row is None:
        raise SystemExit(f"no enabled member {person_id}")
    issued = await keys.issue(
        conn, account_id=row.account_id, person_id=person_id, key_name=key_name,
        now_s=int(time.time()),
    )
    return {"key_id": issued.key_id, "key_name": issued.key_name, "person_id": person_id,
            "app_key": issued.app_key}


async def list_keys(conn: AsyncConnection, *, account_id: int | None) -> list[dict[str, Any]]:
    stmt = select(app_key.c.key_id, app_key.c.account_id, app_key.c.person_id,
                  app_key.c.key_name, app_key.c.suffix, app_key.c.created_at,
                  app_key.c.last_used_at).order_by(app_key.c.created_at)
    if account_id is not None:
        stmt = stmt.where(app_key.c.account_id == account_id)
    return [dict(r._mapping) for r in await conn.execute(stmt)]


async def revoke(conn: AsyncConnection, *, key_id: int) -> dict[str, Any]:
    result = await conn.execute(delete(app_key).where(app_key.c.key_id == key_id))
    return {"key_id": key_id, "revoked": result.rowcount == 1}
