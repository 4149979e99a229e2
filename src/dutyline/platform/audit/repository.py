"""Every audit-log query. Each one is scoped by account_id: that is the visibility rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, insert, or_, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from dutyline.db.tables.platform import audit_log


@dataclass(frozen=True, slots=True)
class AuditFilter:
    account_id: int
    from_ms: int
    to_ms: int  # inclusive
    request_id: str = ""
    operations: tuple[str, ...] | None = None
    member_id: int | None = None
    only_dangerous: bool = False
    is_write: bool | None = None


def _conditions(f: AuditFilter) -> list[ColumnElement[bool]]:
    c = audit_log.c
    conditions: list[ColumnElement[bool]] = [
        c.account_id == f.account_id, c.created_at >= f.from_ms, c.created_at <= f.to_ms,
    ]
    if f.request_id:
        conditions.append(c.request_id == f.request_id)
    if f.operations is not None:
        conditions.append(c.operation.in_(f.operations))
    if f.member_id is not None:
        conditions.append(c.member_id == f.member_id)
    if f.only_dangerous:
        conditions.append(c.is_dangerous.is_(True))
    if f.is_write is not None:
        conditions.append(c.is_write.is_(f.is_write))
    return conditions


async def count(conn: AsyncConnection, f: AuditFilter) -> int:
    stmt = select(func.count()).select_from(audit_log).where(and_(*_conditions(f)))
    return int((await conn.execute(stmt)).scalar_one())


async def page(
    conn: AsyncConnection, f: AuditFilter, *, after: tuple[int, int] | None, limit: int
) -> list[Row[Any]]:
    """Newest first; `after` is the (created_at, id) of the last row already seen."""
    c = audit_log.c
    conditions = _conditions(f)
    if after is not None:
        created_at, row_id = after
        conditions.append(
            or_(c.created_at < created_at, and_(c.created_at == created_at, c.id < row_id))
        )
    stmt = (
        select(audit_log)
        .where(and_(*conditions))
        .order_by(c.created_at.desc(), c.id.desc())
        .limit(limit)
    )
    return list((await conn.execute(stmt)).all())


async def insert_entry(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(audit_log).values(**values))
