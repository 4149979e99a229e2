"""Every service calendar query. Each one is scoped by account_id: that is the visibility
rule (another account's calendar is not found)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import account
from dutyline.db.tables.platform_calendar import calendar, calendar_event

# -- calendars ---------------------------------------------------------------------------------


async def find_many(conn: AsyncConnection, account_id: int,
                    cal_ids: Collection[str]) -> list[Row[Any]]:
    return await conn.run_sync(find_many_sync, account_id, cal_ids)


_FIND_MANY = select(calendar).where(calendar.c.account_id == bindparam("account_id"),
                                    calendar.c.cal_id.in_(bindparam("cal_ids", expanding=True)))


def find_many_sync(conn: Connection, account_id: int,
                   cal_ids: Collection[str]) -> list[Row[Any]]:
    if not cal_ids:
        return []
    return list(conn.execute(_FIND_MANY, {"account_id": account_id, "cal_ids": list(cal_ids)}))


async def count(conn: AsyncConnection, account_id: int) -> int:
    return int((await conn.execute(select(func.count()).select_from(calendar).where(
        calendar.c.account_id == account_id))).scalar_one())


async def insert_calendar(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(calendar).values(**values))


async def update_calendar(conn: AsyncConnection, account_id: int, cal_id: str,
                          values: dict[str, Any]) -> None:
    await conn.execute(update(calendar).where(
        calendar.c.account_id == account_id, calendar.c.cal_id == cal_id).values(**values))


async def delete_calendar(conn: AsyncConnection, account_id: int, cal_id: str) -> None:
    # Events first: SQLite enforces the foreign key's cascade only with its pragma on.
    await conn.execute(delete(calendar_event).where(
        calendar_event.c.account_id == account_id, calendar_event.c.cal_id == cal_id))
    await conn.execute(delete(calendar).where(
        calendar.c.account_id == account_id, calendar.c.cal_id == cal_id))


# -- events ------------------------------------------------------------------------------------


async def get_event(conn: AsyncConnection, account_id: int, cal_id: str,
                    event_id: str) -> Row[Any] | None:
    return (await conn.execute(select(calendar_event).where(
        calendar_event.c.account_id == account_id, calendar_event.c.cal_id == cal_id,
        calendar_event.c.event_id == event_id))).first()


async def count_events(conn: AsyncConnection, cal_id: str) -> int:
    return int((await conn.execute(select(func.count()).select_from(calendar_event).where(
        calendar_event.c.cal_id == cal_id))).scalar_one())


async def insert_event(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(calendar_event).values(**values))


async def update_event(conn: AsyncConnection, account_id: int, event_id: str,
                       values: dict[str, Any]) -> None:
    await conn.execute(update(calendar_event).where(
        calendar_event.c.account_id == account_id,
        calendar_event.c.event_id == event_id).values(**values))


async def delete_event(conn: AsyncConnection, account_id: int, event_id: str) -> None:
    await conn.execute(delete(calendar_event).where(
        calendar_event.c.account_id == account_id, calendar_event.c.event_id == event_id))


def _overlapping(cal_ids: Collection[str], start: str, end: str) -> Any:
    """Events of these calendars that share a day with [start, end) (ISO dates)."""
    return (select(calendar_event)
            .where(calendar_event.c.cal_id.in_(list(cal_ids)),
                   calendar_event.c.start_date < end, calendar_event.c.end_date > start)
            .order_by(calendar_event.c.start_date, calendar_event.c.created_at,
                      calendar_event.c.event_id))


async def events_overlapping(conn: AsyncConnection, account_id: int, cal_ids: Collection[str],
                             start: str, end: str) -> list[Row[Any]]:
    return await conn.run_sync(events_of_calendars_sync, account_id, cal_ids, start, end)


_EVENTS_OF_CALENDARS = (
    select(calendar_event)
    .where(calendar_event.c.cal_id.in_(bindparam("cal_ids", expanding=True)),
           calendar_event.c.start_date < bindparam("end"),
           calendar_event.c.end_date > bindparam("start"),
           calendar_event.c.account_id == bindparam("account_id"))
    .order_by(calendar_event.c.start_date, calendar_event.c.created_at,
              calendar_event.c.event_id))


def events_of_calendars_sync(conn: Connection, account_id: int, cal_ids: Collection[str],
                             start: str, end: str) -> list[Row[Any]]:
    """Events of these calendars that share a day with [start, end) (ISO dates)."""
    if not cal_ids:
        return []
    return list(conn.execute(_EVENTS_OF_CALENDARS, {
        "account_id": account_id, "cal_ids": list(cal_ids), "start": start, "end": end}))


# -- hot path (ingestion, sync) ------------------------------------------------------------------


def account_time_zone_sync(conn: Connection, account_id: int) -> str:
    found = conn.execute(select(account.c.time_zone).where(
        account.c.account_id == account_id)).scalar()
    return str(found or "")


def get_sync(conn: Connection, account_id: int, cal_id: str) -> Any:
    """(cal_id, workdays) of the account's calendar, or None."""
    return conn.execute(select(calendar.c.cal_id, calendar.c.workdays).where(
        calendar.c.account_id == account_id, calendar.c.cal_id == cal_id)).first()


def events_overlapping_sync(conn: Connection, account_id: int, cal_id: str, start: str,
                            end: str) -> list[Row[Any]]:
    stmt = _overlapping([cal_id], start, end).where(calendar_event.c.account_id == account_id)
    return list(conn.execute(stmt))


# -- sync reads: the read operations' one unit of database work (api/operation.py) ------------

_CALENDAR = select(calendar).where(calendar.c.account_id == bindparam("account_id"),
                                   calendar.c.cal_id == bindparam("cal_id"))
_CALENDARS = (select(calendar).where(calendar.c.account_id == bindparam("account_id"))
              .order_by(calendar.c.created_at, calendar.c.cal_id))


def calendar_sync(conn: Connection, account_id: int, cal_id: str) -> Row[Any] | None:
    """The account's calendar (every column), or None."""
    return conn.execute(_CALENDAR, {"account_id": account_id, "cal_id": cal_id}).first()


def list_all_sync(conn: Connection, account_id: int) -> list[Row[Any]]:
    return list(conn.execute(_CALENDARS, {"account_id": account_id}))
