"""Every query of changes and their timeline entries. Each is scoped by account and page:
that is the visibility rule."""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from typing import Any

from sqlalchemy import Connection, Select, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.status_page import status_change, status_change_update

CLOSED_STATUSES = ("resolved", "completed")
_ENTRY_ORDER = (status_change_update.c.at_seconds, status_change_update.c.seq,
                status_change_update.c.update_id)


# -- reads: sync, for read operations' units of database work (api/operation.py); the async
# forms run the same functions. Statements are built once, with bound parameters.

_GET_CHANGE = select(status_change).where(
    status_change.c.account_id == bindparam("account_id"),
    status_change.c.page_id == bindparam("page_id"),
    status_change.c.change_id == bindparam("change_id"),
)


def get_change_sync(conn: Connection, account_id: int, page_id: int,
                    change_id: int) -> Row[Any] | None:
    return conn.execute(_GET_CHANGE, {"account_id": account_id, "page_id": page_id,
                                      "change_id": change_id}).first()


async def get_change(
    conn: AsyncConnection, account_id: int, page_id: int, change_id: int
) -> Row[Any] | None:
    return await conn.run_sync(get_change_sync, account_id, page_id, change_id)


async def own_change_ids(conn: AsyncConnection, account_id: int, change_ids: list[int]) -> set[int]:
    """Which of these change ids are the account's own (on any of its pages)."""
    if not change_ids:
        return set()
    rows = await conn.execute(select(status_change.c.change_id).where(
        status_change.c.account_id == account_id, status_change.c.change_id.in_(change_ids)))
    return {int(r[0]) for r in rows}


@cache
def _list_statements(by_status: bool, from_: bool, to: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, page) queries of one page's changes for one combination of filters."""
    conditions = [status_change.c.account_id == bindparam("account_id"),
                  status_change.c.page_id == bindparam("page_id"),
                  status_change.c.type == bindparam("change_type")]
    if by_status:
        conditions.append(status_change.c.status == bindparam("status"))
    if from_:
        conditions.append(status_change.c.start_at_seconds >= bindparam("start_from"))
    if to:
        conditions.append(status_change.c.start_at_seconds <= bindparam("start_to"))
    count = select(func.count()).select_from(status_change).where(*conditions)
    page = (select(status_change).where(*conditions)
            .order_by(status_change.c.start_at_seconds.desc(), status_change.c.change_id.desc())
            .offset(bindparam("offset")).limit(bindparam("limit")))
    return count, page


def list_changes_sync(
    conn: Connection, account_id: int, page_id: int, *, change_type: str,
    status: str | None, start_from: int | None, start_to: int | None, offset: int, limit: int,
) -> tuple[int, list[Row[Any]]]:
    count, page = _list_statements(status is not None, start_from is not None,
                                   start_to is not None)
    params: dict[str, Any] = {"account_id": account_id, "page_id": page_id,
                              "change_type": change_type, "offset": offset, "limit": limit}
    for name, value in (("status", status), ("start_from", start_from),
                        ("start_to", start_to)):
        if value is not None:
            params[name] = value
    total = conn.execute(count, params).scalar_one()
    rows = conn.execute(page, params)
    return int(total), list(rows.all())


async def insert_change(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(status_change).values(**values))


async def update_change(conn: AsyncConnection, change_id: int, values: dict[str, Any]) -> None:
    await conn.execute(
        update(status_change).where(status_change.c.change_id == change_id).values(**values)
    )


async def delete_change(conn: AsyncConnection, change_id: int) -> None:
    await conn.execute(
        delete(status_change_update).where(status_change_update.c.change_id == change_id)
    )
    await conn.execute(delete(status_change).where(status_change.c.change_id == change_id))


_ENTRIES = (select(status_change_update)
            .where(status_change_update.c.change_id.in_(bindparam("change_ids", expanding=True)))
            .order_by(status_change_update.c.change_id, *_ENTRY_ORDER))


def entries_sync(conn: Connection, change_ids: list[int]) -> dict[int, list[Row[Any]]]:
    """Timeline entries per change, oldest first (ties: the order they were added)."""
    result: dict[int, list[Row[Any]]] = defaultdict(list)
    if not change_ids:
        return result
    for r in conn.execute(_ENTRIES, {"change_ids": change_ids}):
        result[r.change_id].append(r)
    return result


async def entries(conn: AsyncConnection, change_ids: list[int]) -> dict[int, list[Row[Any]]]:
    """Timeline entries per change, oldest first (ties: the order they were added)."""
    return await conn.run_sync(entries_sync, change_ids)


async def get_entry(
    conn: AsyncConnection, account_id: int, page_id: int, change_id: int, update_id: str
) -> Row[Any] | None:
    stmt = select(status_change_update).where(
        status_change_update.c.account_id == account_id,
        status_change_update.c.page_id == page_id,
        status_change_update.c.change_id == change_id,
        status_change_update.c.update_id == update_id,
    )
    return (await conn.execute(stmt)).first()


async def next_seq(conn: AsyncConnection, change_id: int) -> int:
    top = (await conn.execute(
        select(func.max(status_change_update.c.seq))
        .where(status_change_update.c.change_id == change_id)
    )).scalar_one()
    return 1 if top is None else int(top) + 1


async def insert_entries(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(insert(status_change_update), rows)


async def update_entry(conn: AsyncConnection, update_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        update(status_change_update)
        .where(status_change_update.c.update_id == update_id)
        .values(**values)
    )


async def delete_entry(conn: AsyncConnection, update_id: str) -> None:
    await conn.execute(
        delete(status_change_update).where(status_change_update.c.update_id == update_id)
    )


async def count_entries(conn: AsyncConnection, change_id: int) -> int:
    return int((await conn.execute(
        select(func.count()).select_from(status_change_update)
        .where(status_change_update.c.change_id == change_id)
    )).scalar_one())


async def open_change_entries(conn: AsyncConnection, page_id: int) -> list[Row[Any]]:
    """Every timeline entry of the page's open changes, oldest first across changes. Open
    changes are few (the rest are resolved or completed), so this stays small."""
    open_ids = (
        select(status_change.c.change_id)
        .where(status_change.c.page_id == page_id,
               status_change.c.status.not_in(CLOSED_STATUSES))
        .scalar_subquery()
    )
    rows = await conn.execute(
        select(status_change_update.c.component_changes)
        .where(status_change_update.c.page_id == page_id,
               status_change_update.c.change_id.in_(open_ids))
        .order_by(status_change_update.c.at_seconds, status_change_update.c.created_at,
                  status_change_update.c.change_id, status_change_update.c.seq)
    )
    return list(rows.all())


# An open change is closed by its timeline sooner or later; a page with more open at once
# than this is not a status page any more. The active list answers at most this many.
MAX_ACTIVE = 500


@cache
def _active_statement(by_type: bool) -> Select[Any]:
    conditions = [status_change.c.account_id == bindparam("account_id"),
                  status_change.c.page_id == bindparam("page_id"),
                  status_change.c.status.not_in(CLOSED_STATUSES)]
    if by_type:
        conditions.append(status_change.c.type == bindparam("change_type"))
    return (select(status_change).where(*conditions)
            .order_by(status_change.c.start_at_seconds.desc(), status_change.c.change_id.desc())
            .limit(MAX_ACTIVE))


def active_changes_sync(conn: Connection, account_id: int, page_id: int,
                        change_type: str | None) -> list[Row[Any]]:
    """The page's open incidents and maintenances (every status but resolved and
    completed), of one type or both, newest start first."""
    params: dict[str, Any] = {"account_id": account_id, "page_id": page_id}
    if change_type is not None:
        params["change_type"] = change_type
    rows = conn.execute(_active_statement(change_type is not None), params)
    return list(rows.all())


# --- by page alone: the public page and the notification job --------------------------
# Both reach a page through its public address or a job payload, not through an account.

OPEN_STATUSES = ("investigating", "identified", "monitoring", "scheduled", "ongoing")


async def change_of_page(conn: AsyncConnection, page_id: int, change_id: int
                         ) -> Row[Any] | None:
    return (await conn.execute(select(status_change).where(
        status_change.c.change_id == change_id, status_change.c.page_id == page_id))).first()


async def entry_of_change(conn: AsyncConnection, change_id: int, update_id: str
                          ) -> Row[Any] | None:
    return (await conn.execute(select(status_change_update).where(
        status_change_update.c.update_id == update_id,
        status_change_update.c.change_id == change_id))).first()


async def open_changes_of_page(conn: AsyncConnection, page_id: int) -> list[Row[Any]]:
    """Every open change of the page, newest start first."""
    return list((await conn.execute(
        select(status_change)
        .where(status_change.c.page_id == page_id, status_change.c.status.in_(OPEN_STATUSES))
        .order_by(status_change.c.start_at_seconds.desc())
    )).all())


async def starts_between(conn: AsyncConnection, page_id: int, since: int, until: int
                         ) -> list[tuple[int, str]]:
    """(start_at_seconds, type) of every change of the page that started in the window."""
    rows = await conn.execute(
        select(status_change.c.start_at_seconds, status_change.c.type)
        .where(status_change.c.page_id == page_id, status_change.c.start_at_seconds >= since,
               status_change.c.start_at_seconds <= until)
    )
    return [(int(r.start_at_seconds), str(r.type)) for r in rows]


async def recent_closed_changes(conn: AsyncConnection, page_id: int, since: int, limit: int
                                ) -> list[Row[Any]]:
    """The page's latest closed changes that started since then, newest start first."""
    return list((await conn.execute(
        select(status_change)
        .where(status_change.c.page_id == page_id,
               status_change.c.status.not_in(OPEN_STATUSES),
               status_change.c.start_at_seconds >= since)
        .order_by(status_change.c.start_at_seconds.desc())
        .limit(limit)
    )).all())


async def latest_changes(conn: AsyncConnection, page_id: int, limit: int) -> list[Row[Any]]:
    """The page's latest changes of either kind, newest start first (the feeds)."""
    return list((await conn.execute(
        select(status_change).where(status_change.c.page_id == page_id)
        .order_by(status_change.c.start_at_seconds.desc()).limit(limit)
    )).all())
