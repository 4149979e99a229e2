"""Repository idioms every paged or keyed read repeats: an order with a tiebreak (so pages
never overlap or skip rows of equal sort keys), a total with the page it counts (no page read
past the end), and rows keyed by an id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, UnaryExpression
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection


def ordered(column: ColumnElement[Any], tiebreak: ColumnElement[Any], *,
            asc: bool) -> tuple[UnaryExpression[Any], UnaryExpression[Any]]:
    """ORDER BY column, tiebreak, both in the same direction."""
    if asc:
        return column.asc(), tiebreak.asc()
    return column.desc(), tiebreak.desc()


async def counted_page(conn: AsyncConnection, count: Select[Any], page: Select[Any], *,
                       offset: int, limit: int) -> tuple[int, Sequence[Row[Any]]]:
    """(total, rows of one page): `count` selects the total of the rows `page` (ordered)
    walks; the page is not read when it lies past the end."""
    total = int((await conn.execute(count)).scalar_one())
    if total == 0 or offset >= total:
        return total, []
    return total, (await conn.execute(page.offset(offset).limit(limit))).all()


async def keyed(conn: AsyncConnection, stmt: Select[Any], key: str) -> dict[Any, Row[Any]]:
    """The rows of `stmt` by their column `key` (an id -> row map)."""
    return {getattr(r, key): r for r in (await conn.execute(stmt)).all()}
