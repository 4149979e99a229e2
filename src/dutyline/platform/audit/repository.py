"""Every audit-log query. Each one is scoped by account_id: that is the visibility rule."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, func, insert, or_, select
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


@functools.cache
def _statements(by_request: bool, by_operations: bool, by_member: bool, only_dangerous: bool,
                is_write: bool | None, after: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, page) statements of one combination of filters, built once; the page is
    newest first, past the position `after_created_at`, `after_id` when `after`."""
    c = audit_log.c
    conditions: list[ColumnElement[bool]] = [
        c.account_id == bindparam("account_id"), c.created_at >= bindparam("from_ms"),
        c.created_at <= bindparam("to_ms"),
    ]
    if by_request:
        conditions.append(c.request_id == bindparam("request_id"))
    if by_operations:
        conditions.append(c.operation.in_(bindparam("operations", expanding=True)))
    if by_member:
        conditions.append(c.member_id == bindparam("member_id"))
    if only_dangerous:
        conditions.append(c.is_dangerous.is_(True))
    if is_write is not None:
        conditions.append(c.is_write.is_(is_write))
    count = select(func.count()).select_from(audit_log).where(and_(*conditions))
    if after:
        created_at = bindparam("after_created_at", type_=c.created_at.type)
        row_id = bindparam("after_id", type_=c.id.type)
        conditions.append(
            or_(c.created_at < created_at, and_(c.created_at == created_at, c.id < row_id)))
    page = (select(audit_log).where(and_(*conditions))
            .order_by(c.created_at.desc(), c.id.desc()).limit(bindparam("limit")))
    return count, page


def _bound(f: AuditFilter) -> tuple[tuple[Select[Any], Select[Any]], dict[str, Any]]:
    params: dict[str, Any] = {"account_id": f.account_id, "from_ms": f.from_ms,
                              "to_ms": f.to_ms}
    if f.request_id:
        params["request_id"] = f.request_id
    if f.operations is not None:
        params["operations"] = list(f.operations)
    if f.member_id is not None:
        params["member_id"] = f.member_id
    return _statements(bool(f.request_id), f.operations is not None, f.member_id is not None,
                       f.only_dangerous, f.is_write, False), params


def count_sync(conn: Connection, f: AuditFilter) -> int:
    (count, _), params = _bound(f)
    return int(conn.execute(count, params).scalar_one())


def page_sync(conn: Connection, f: AuditFilter, *, after: tuple[int, int] | None,
              limit: int) -> list[Row[Any]]:
    """Newest first; `after` is the (created_at, id) of the last row already seen."""
    _, params = _bound(f)
    _, page = _statements(bool(f.request_id), f.operations is not None,
                          f.member_id is not None, f.only_dangerous, f.is_write,
                          after is not None)
    params["limit"] = limit
    if after is not None:
        params["after_created_at"], params["after_id"] = after
    return list(conn.execute(page, params).all())


async def insert_entry(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(audit_log).values(**values))
