"""Queries of the account row."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import account


async def get_account(conn: AsyncConnection, account_id: int) -> Any:
    stmt = select(account).where(account.c.account_id == account_id)
    return (await conn.execute(stmt)).first()
