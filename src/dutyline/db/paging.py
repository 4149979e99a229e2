"""Repository idioms every paged or keyed read repeats: an order with a tiebreak (so pages
never overlap or skip rows of equal sort keys), a total with the page it counts (no page read
past the end), rows keyed by an id, and association rows as key -> ids."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, UnaryExpression, bindparam, func, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection


def ordered(column: ColumnElement[Any], tiebreak: ColumnElement[Any], *,
            asc: bool) -> tuple[UnaryExpression[Any], UnaryExpression[Any]]:
    """ORDER BY column, tiebreak, both in the same direction."""
    if asc:
        return column.asc(), tiebreak.asc()
    return column.desc(), tiebreak.desc()


def counted_page_sync(conn: Connection, count: Select[Any], page: Select[Any], *,
                      offset: int, limit: int, params: Mapping[str, Any] | None = None,
                      window: bool = False) -> tuple[int, Sequence[Row[Any]]]:
    """(total, rows of one page): `count` selects the total of the rows `page` (ordered)
    walks; `params` binds both statements' bound parameters.

    By default the total is read first and the page is not read when it lies past the end.
    With `window`, the page carries the total as a window count (a column `total` on every
    row: one round trip), and `count` runs only when the page comes back empty."""
    if window:
        stmt = page.add_columns(func.count().over().label("total"))
        rows = conn.execute(stmt.offset(offset).limit(limit), params).all()
        if rows:
            return rows[0].total, rows
        return int(conn.execute(count, params).scalar_one()), []
    total = int(conn.execute(count, params).scalar_one())
    if total == 0 or offset >= total:
        return total, []
    return total, conn.execute(page.offset(offset).limit(limit), params).all()


def counted_windowed_page_sync(conn: Connection, count: Select[Any], page: Select[Any], *,
                               params: Mapping[str, Any]) -> tuple[int, Sequence[Row[Any]]]:
    """`counted_page_sync` with `window`, for a page built by
    `windowed_page` (its offset and limit among `params`): one statement, the count only
    when the page comes back empty."""
    rows = conn.execute(page, params).all()
    if rows:
        return int(rows[0][-1]), rows
    return int(conn.execute(count, params).scalar_one()), []


def windowed_page(page: Select[Any]) -> Select[Any]:
    """`page` (ordered) with the total as a window count in its last column and its offset
    and limit bound (parameters "offset" and "limit"), so that it is built once."""
    return (page.add_columns(func.count().over().label("total"))
            .offset(bindparam("offset")).limit(bindparam("limit")))


async def ids_by_key(conn: AsyncConnection, key: ColumnElement[Any], value: ColumnElement[Any],
                     keys: Iterable[Any]) -> dict[Any, list[Any]]:
    """An association table read as key -> [values], both in ascending order; a key with no
    row is absent (the result is a defaultdict(list), so it reads as an empty list)."""
    result: dict[Any, list[Any]] = defaultdict(list)
    wanted = list(keys)
    if not wanted:
        return result
    rows = await conn.execute(select(key, value).where(key.in_(wanted)).order_by(key, value))
    for k, v in rows:
        result[k].append(v)
    return result


async def keyed(conn: AsyncConnection, stmt: Select[Any], key: str) -> dict[Any, Row[Any]]:
    """The rows of `stmt` by their column `key` (an id -> row map)."""
    return {getattr(r, key): r for r in (await conn.execute(stmt)).all()}
