"""Service calendars (docs/calendars.md): an account's working weekdays, and events that make
days off (holidays) or working days (make-up days) of given dates. Silence and escalation
rules' time windows name a calendar (`cal_id`, `is_off`), and so do schedule layers that
follow one; this module also answers what a calendar says about a day for their evaluation
(`local_days`, `local_days_sync`, `calendar_days_of`).

A calendar a rule or a schedule names cannot be deleted: the domains that name calendars
register a lookup (`on_calendar_delete`) and the delete answers ReferenceExist naming them.
Domains that keep what a calendar says in memory register `on_calendar_change`: it runs in
the same transaction as every write to a calendar or its events."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import CALENDAR_MANAGE
from dutyline.kit.filters import FilterError
from dutyline.kit.ids import short_uuid_id
from dutyline.kit.timefilters import zone
from dutyline.platform.account import service as accounts
from dutyline.platform.calendar import repository as repo
from dutyline.platform.calendar.days import (
    DEFAULT_WORKDAYS,
    CalendarDays,
    LoadedDays,
    SyncDays,
    calendar_days,
    format_workdays,
    parse_workdays,
    weekday_of,
)
from dutyline.platform.calendar.schemas import CalendarItem, CalEventItem
from dutyline.platform.team import service as teams

__all__ = ["CalEventItem", "CalendarDays", "CalendarItem", "LoadedDays", "SyncDays"]

# The reference: "Each account is limited to 5 calendars".
MAX_CALENDARS = 5
# Events one calendar holds at most: years of holidays and make-up days.
MAX_EVENTS = 1_000
# One event spans at most a year.
MAX_EVENT_DAYS = 366
# The reference's default time zone of a calendar created without one.
DEFAULT_TIME_ZONE = "Asia/Shanghai"
# Event dates this service accepts.
FIRST_YEAR, LAST_YEAR = 2000, 2100
# `/calendar/event/list` answers from this year on (the reference's minimum).
FIRST_LIST_YEAR = 2023
_WEEKDAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                  "Saturday")


# -- records -----------------------------------------------------------------------------------


def _item(row: Any) -> CalendarItem:
    return CalendarItem(
        account_id=row.account_id, team_id=row.team_id, cal_id=row.cal_id,
        cal_name=row.cal_name, description=row.description, timezone=row.timezone,
        kind="personal", workdays=list(parse_workdays(row.workdays)), extra_cal_ids=[],
        created_at=row.created_at, updated_at=row.updated_at, creator_id=row.creator_id,
        updated_by=row.updated_by, status="enabled")


def _event_item(row: Any) -> CalEventItem:
    return CalEventItem(
        account_id=row.account_id, creator_id=row.creator_id, cal_id=row.cal_id,
        event_id=row.event_id, summary=row.summary, description=row.description,
        start_at=row.start_date, end_at=row.end_date, is_off=bool(row.is_off),
        created_at=row.created_at, updated_at=row.updated_at)


def _calendar_sync(conn: Connection, actor: Actor, cal_id: str) -> Any:
    row = repo.calendar_sync(conn, actor.account_id, cal_id)
    if row is None:
        raise errors.not_found("calendar", cal_id)
    return row


async def _calendar(conn: AsyncConnection, actor: Actor, cal_id: str) -> Any:
    return await conn.run_sync(_calendar_sync, actor, cal_id)


def calendar_info_sync(conn: Connection, actor: Actor, *, cal_id: str) -> CalendarItem:
    return _item(_calendar_sync(conn, actor, cal_id))


def list_calendars_sync(conn: Connection, actor: Actor, *,
                        kind: str = "personal") -> list[CalendarItem]:
    """The account's own calendars. No public-holiday calendars are shipped, so the
    `region.official.holiday` kind lists none."""
    if kind not in ("", "personal"):
        return []
    return [_item(r) for r in repo.list_all_sync(conn, actor.account_id)]


# -- calendar writes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CalendarChanges:
    """A calendar to create, or the changes to one: None leaves a field as it is (on create:
    its default)."""

    cal_name: str | None = None
    description: str | None = None
    timezone: str | None = None
    team_id: int | None = None
    workdays: Sequence[int] | None = None
    extra_cal_ids: Sequence[str] | None = None


def _checked_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise errors.invalid("cal_name", "must not be blank")
    return name


def _checked_zone(name: str) -> str:
    try:
        zone(name, "timezone")
    except FilterError as exc:
        raise errors.invalid("timezone", exc.message) from None
    return name


def _check_extra(extra_cal_ids: Sequence[str] | None) -> None:
    # Public-holiday calendars to inherit from are not shipped: naming one would silently
    # inherit nothing, so it is refused.
    if extra_cal_ids:
        raise errors.invalid("extra_cal_ids", f"unknown public-holiday calendar "
                             f"{extra_cal_ids[0]!r}: none is available on this server")


async def _check_team(conn: AsyncConnection, actor: Actor, team_id: int) -> None:
    if team_id and not await teams.team_infos(conn, actor, team_ids=[team_id]):
        raise errors.not_found("team", team_id)


async def _values(conn: AsyncConnection, actor: Actor, changes: CalendarChanges
                  ) -> dict[str, Any]:
    _check_extra(changes.extra_cal_ids)
    values: dict[str, Any] = {}
    if changes.cal_name is not None:
        values["cal_name"] = _checked_name(changes.cal_name)
    if changes.description is not None:
        values["description"] = changes.description
    if changes.timezone is not None:
        values["timezone"] = _checked_zone(changes.timezone or DEFAULT_TIME_ZONE)
    if changes.team_id is not None:
        await _check_team(conn, actor, changes.team_id)
        values["team_id"] = changes.team_id
    if changes.workdays is not None:
        values["workdays"] = format_workdays(changes.workdays)
    return values


@writes("/calendar/create", CALENDAR_MANAGE, targets=lambda created: [created[0]])
async def create_calendar(conn: AsyncConnection, actor: Actor, *,
                          calendar: CalendarChanges) -> tuple[str, str]:
    """A new calendar; returns (cal_id, cal_name)."""
    if calendar.cal_name is None:
        raise errors.invalid("cal_name", "is required")
    values = await _values(conn, actor, calendar)
    if await repo.count(conn, actor.account_id) >= MAX_CALENDARS:
        raise errors.invalid("cal_name", f"at most {MAX_CALENDARS} calendars an account")
    cal_id = short_uuid_id("cal")
    now = actor.now_s
    await repo.insert_calendar(conn, {
        "description": "", "timezone": DEFAULT_TIME_ZONE, "team_id": 0,
        "workdays": format_workdays(DEFAULT_WORKDAYS), **values,
        "cal_id": cal_id, "account_id": actor.account_id, "creator_id": actor.person_id,
        "updated_by": actor.person_id, "created_at": now, "updated_at": now,
    })
    return cal_id, values["cal_name"]


@writes("/calendar/update", CALENDAR_MANAGE)
async def update_calendar(conn: AsyncConnection, actor: Actor, *, cal_id: str,
                          changes: CalendarChanges) -> None:
    row = await _calendar(conn, actor, cal_id)
    actor.note_audit_targets(row.cal_id)
    values = await _values(conn, actor, changes)
    await repo.update_calendar(conn, actor.account_id, row.cal_id, {
        **values, "updated_by": actor.person_id, "updated_at": actor.now_s})
    await _changed(conn, actor.account_id, row.cal_id)


# What names a calendar, by domain: `await fn(conn, account_id, cal_id)` -> the names of the
# rules and schedules that use it. The channel (silence rules), dispatch (escalation rules)
# and schedule domains answer; domains.py wires them when a process starts.
CalendarUsers = Callable[[AsyncConnection, int, str], Awaitable[list[str]]]
_users: list[CalendarUsers] = []
# Who is told that what a calendar says may have changed: `await fn(conn, account_id,
# cal_id)`, in the writing transaction (the schedule domain bumps the revision of the
# schedules that follow the calendar, so their compiled timelines are rebuilt).
CalendarChanged = Callable[[AsyncConnection, int, str], Awaitable[None]]
_watchers: list[CalendarChanged] = []


def on_calendar_delete(fn: CalendarUsers) -> CalendarUsers:
    if fn not in _users:
        _users.append(fn)
    return fn


def on_calendar_change(fn: CalendarChanged) -> CalendarChanged:
    if fn not in _watchers:
        _watchers.append(fn)
    return fn


async def _changed(conn: AsyncConnection, account_id: int, cal_id: str) -> None:
    for watcher in _watchers:
        await watcher(conn, account_id, cal_id)


@writes("/calendar/delete", CALENDAR_MANAGE)
async def delete_calendar(conn: AsyncConnection, actor: Actor, *, cal_id: str) -> None:
    """Delete a calendar and its events; refused (ReferenceExist) while a rule or a schedule
    names it."""
    row = await _calendar(conn, actor, cal_id)
    actor.note_audit_targets(row.cal_id)
    if not _users:  # deleting a calendar rules still name would change what they mean
        raise RuntimeError("no calendar reference lookup is registered (domains.load_tasks)")
    used_by = [name for users in _users for name in await users(conn, actor.account_id,
                                                                  row.cal_id)]
    if used_by:
        raise errors.ReferenceExist(
            "Calendar {id} is in use by: {rules}", id=row.cal_id,
            rules=", ".join(used_by[:10]))
    await repo.delete_calendar(conn, actor.account_id, row.cal_id)


# -- events ------------------------------------------------------------------------------------


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _date(value: str, field: str) -> dt.date:
    # Only YYYY-MM-DD: fromisoformat alone also takes week dates (2026-W18-5).
    try:
        day = dt.date.fromisoformat(value) if _ISO_DATE.fullmatch(value) else None
    except ValueError:
        day = None
    if day is None:
        raise errors.invalid(field, f"must be a date YYYY-MM-DD (got {value!r})")
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise errors.invalid(field, f"must be a date between {FIRST_YEAR} and {LAST_YEAR}")
    return day


@dataclass(frozen=True)
class EventChanges:
    summary: str
    start_at: str
    end_at: str
    is_off: bool
    description: str = ""


@writes("/calendar/event/upsert", CALENDAR_MANAGE, targets=lambda event_id: [event_id])
async def upsert_event(conn: AsyncConnection, actor: Actor, *, cal_id: str, event_id: str,
                       event: EventChanges) -> str:
    """Create an event (no event_id) or replace one; returns its id. `end_at` is exclusive."""
    row = await _calendar(conn, actor, cal_id)
    summary = event.summary.strip()
    if not summary:
        raise errors.invalid("summary", "must not be blank")
    start, end = _date(event.start_at, "start_at"), _date(event.end_at, "end_at")
    if end <= start:
        raise errors.invalid("end_at", "must be after start_at (the end date is exclusive)")
    if (end - start).days > MAX_EVENT_DAYS:
        raise errors.invalid("end_at", f"an event spans at most {MAX_EVENT_DAYS} days")
    values = {"summary": summary, "description": event.description,
              "start_date": start.isoformat(), "end_date": end.isoformat(),
              "is_off": event.is_off, "updated_at": actor.now_s}
    if event_id:
        if await repo.get_event(conn, actor.account_id, row.cal_id, event_id) is None:
            raise errors.not_found("calendar event", event_id)
        await repo.update_event(conn, actor.account_id, event_id, values)
        await _touched(conn, actor, row.cal_id)
        return event_id
    if await repo.count_events(conn, row.cal_id) >= MAX_EVENTS:
        raise errors.invalid("cal_id", f"at most {MAX_EVENTS} events a calendar")
    event_id = short_uuid_id("cale")
    await repo.insert_event(conn, {
        **values, "event_id": event_id, "cal_id": row.cal_id,
        "account_id": actor.account_id, "creator_id": actor.person_id,
        "created_at": actor.now_s})
    await _touched(conn, actor, row.cal_id)
    return event_id


@writes("/calendar/event/delete", CALENDAR_MANAGE)
async def delete_event(conn: AsyncConnection, actor: Actor, *, cal_id: str,
                       event_id: str) -> None:
    row = await _calendar(conn, actor, cal_id)
    actor.note_audit_targets(event_id)
    if await repo.get_event(conn, actor.account_id, row.cal_id, event_id) is None:
        raise errors.not_found("calendar event", event_id)
    await repo.delete_event(conn, actor.account_id, event_id)
    await _touched(conn, actor, row.cal_id)


async def _touched(conn: AsyncConnection, actor: Actor, cal_id: str) -> None:
    await repo.update_calendar(conn, actor.account_id, cal_id, {
        "updated_by": actor.person_id, "updated_at": actor.now_s})
    await _changed(conn, actor.account_id, cal_id)


def _scope(year: int, month: int, day: int) -> tuple[dt.date, dt.date]:
    """[first, last) days of a year, a month or one day."""
    if day and not month:
        raise errors.invalid("month", "is required with day")
    if not month:
        return dt.date(year, 1, 1), dt.date(year + 1, 1, 1)
    first = dt.date(year, month, 1)
    after = dt.date(year + month // 12, month % 12 + 1, 1)
    if not day:
        return first, after
    if day > (after - first).days:
        raise errors.invalid("day", f"{year}-{month:02d} has no day {day}")
    one = dt.date(year, month, day)
    return one, one + dt.timedelta(days=1)


def list_events_sync(conn: Connection, actor: Actor, *, cal_id: str, year: int = 0,
                     month: int = 0, day: int = 0) -> list[CalEventItem]:
    """The calendar's events sharing a day with the year, month or day asked (the current
    year in the calendar's time zone when none), and, for each day of it off by its weekday
    that no event covers, a `non_work.YYYYMMDD` entry. Sorted by start date."""
    row = _calendar_sync(conn, actor, cal_id)
    if not year:
        year = dt.datetime.fromtimestamp(actor.now_s, zone(row.timezone)).year
    if not FIRST_LIST_YEAR <= year <= LAST_YEAR:
        raise errors.invalid("year", f"must be between {FIRST_LIST_YEAR} and {LAST_YEAR}")
    first, after = _scope(year, month, day)
    events = repo.events_overlapping_sync(conn, actor.account_id, row.cal_id,
                                          first.isoformat(), after.isoformat())
    items = [_event_item(e) for e in events]
    workdays = frozenset(parse_workdays(row.workdays))
    covered = [(e.start_date, e.end_date) for e in events]
    day_ = first
    while day_ < after:
        iso = day_.isoformat()
        if weekday_of(day_) not in workdays and not any(s <= iso < e for s, e in covered):
            items.append(CalEventItem(
                account_id=row.account_id, creator_id=row.creator_id, cal_id=row.cal_id,
                event_id=f"non_work.{day_:%Y%m%d}",
                summary=f"non-working day ({_WEEKDAY_NAMES[weekday_of(day_)]})",
                description="", start_at=iso,
                end_at=(day_ + dt.timedelta(days=1)).isoformat(), is_off=True,
                created_at=0, updated_at=0))
        day_ += dt.timedelta(days=1)
    items.sort(key=lambda i: (i.start_at, i.created_at == 0))
    return items


# -- rule evaluation ---------------------------------------------------------------------------


async def check_calendars(conn: AsyncConnection, actor: Actor, *,
                          cal_ids: Collection[str]) -> None:
    """Refuse (not found) a calendar id that is not one of the account's calendars."""
    wanted = set(cal_ids)
    found = {r.cal_id for r in await repo.find_many(conn, actor.account_id, wanted)}
    missing = sorted(wanted - found)
    if missing:
        raise errors.not_found("calendar", missing[0])


async def local_days(conn: AsyncConnection, actor: Actor, *, cal_ids: Collection[str],
                     at_s: float, time_zone: str | None = None) -> LoadedDays:
    """What rule evaluation at `at_s` needs: the time zone (`time_zone`, else the account's)
    and what these calendars say about the days around `at_s` (a window that opened the day
    before is judged by that day)."""
    name = time_zone or await accounts.account_time_zone(conn, actor)
    found: dict[str, Any] = {}
    rows = await repo.find_many(conn, actor.account_id, set(cal_ids))
    if rows:
        try:
            today = dt.datetime.fromtimestamp(at_s, zone(name)).date()
        except FilterError:
            today = dt.datetime.fromtimestamp(at_s, dt.UTC).date()
        first, after = today - dt.timedelta(days=1), today + dt.timedelta(days=1)
        events = await repo.events_overlapping(conn, actor.account_id, [r.cal_id for r in rows],
                                               first.isoformat(), after.isoformat())
        for r in rows:
            found[r.cal_id] = calendar_days(r.workdays, [e for e in events
                                                         if e.cal_id == r.cal_id])
    return LoadedDays(name, found)


def calendar_days_of_sync(conn: Connection, actor: Actor, *,
                          cal_ids: Collection[str]) -> dict[str, CalendarDays]:
    """The days each calendar marks, read inside a sync unit of database work."""
    rows = repo.find_many_sync(conn, actor.account_id, set(cal_ids))
    if not rows:
        return {}
    events = repo.events_of_calendars_sync(conn, actor.account_id, [r.cal_id for r in rows],
                                           f"{FIRST_YEAR}-01-01", f"{LAST_YEAR + 1}-01-01")
    return {r.cal_id: calendar_days(r.workdays, [e for e in events if e.cal_id == r.cal_id])
            for r in rows}


def local_days_sync(conn: Connection, account_id: int) -> SyncDays:
    """`local_days` for ingestion's sync connection, read lazily: the account's time zone
    and calendars, when a rule first asks."""
    return SyncDays(conn, account_id)
