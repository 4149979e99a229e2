"""What a service calendar says about a day, and the `LocalDays` (kit/timefilters) that rule
evaluation reads: the account's time zone and its calendars.

A day is off when an event covering it says so (`is_off` true: a holiday), a working day when
an event covering it says so (`is_off` false: a make-up working day), and otherwise by its
weekday (`workdays`). Where events overlap, the most recently written one wins."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from dutyline.kit.filters import FilterError
from dutyline.kit.timefilters import zone
from dutyline.platform.calendar import repository as repo

# Weekdays worked by a calendar that names none (Monday to Friday).
DEFAULT_WORKDAYS = (1, 2, 3, 4, 5)


def weekday_of(day: dt.date) -> int:
    """0 = Sunday ... 6 = Saturday (the reference's numbering)."""
    return (day.weekday() + 1) % 7


def parse_workdays(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split(",") if d)


def format_workdays(days: Iterable[int]) -> str:
    return ",".join(str(d) for d in sorted(set(days)))


@dataclass(frozen=True, slots=True)
class CalendarDays:
    workdays: frozenset[int]
    # (start, end exclusive, is_off) ISO dates, oldest write first.
    events: tuple[tuple[str, str, bool], ...]

    def is_off(self, day: dt.date) -> bool:
        iso = day.isoformat()
        for start, end, off in reversed(self.events):
            if start <= iso < end:
                return off
        return weekday_of(day) not in self.workdays


def calendar_days(workdays: str, events: Iterable[Any]) -> CalendarDays:
    ordered = sorted(events, key=lambda e: (e.updated_at, e.created_at, e.event_id))
    return CalendarDays(frozenset(parse_workdays(workdays)),
                        tuple((e.start_date, e.end_date, bool(e.is_off)) for e in ordered))


def _zone_or_utc(name: str) -> dt.tzinfo:
    try:
        return zone(name)
    except FilterError:
        return dt.UTC


class LoadedDays:
    """A `LocalDays` over calendars read up front (the days around one instant)."""

    def __init__(self, time_zone: str, calendars: Mapping[str, CalendarDays]) -> None:
        self._zone = _zone_or_utc(time_zone)
        self._calendars = dict(calendars)

    def zone(self) -> dt.tzinfo:
        return self._zone

    def is_off(self, cal_id: str, day: dt.date) -> bool | None:
        found = self._calendars.get(cal_id)
        return None if found is None else found.is_off(day)


class SyncDays:
    """A `LocalDays` for ingestion's sync connection: reads the account's time zone and a
    calendar's day when first asked (most pushes match no timed rule and read nothing),
    once per push."""

    def __init__(self, conn: Connection, account_id: int) -> None:
        self._conn = conn
        self._account_id = account_id
        self._zone: dt.tzinfo | None = None
        self._days: dict[tuple[str, dt.date], bool | None] = {}

    def zone(self) -> dt.tzinfo:
        if self._zone is None:
            self._zone = _zone_or_utc(repo.account_time_zone_sync(self._conn, self._account_id))
        return self._zone

    def is_off(self, cal_id: str, day: dt.date) -> bool | None:
        key = (cal_id, day)
        if key not in self._days:
            row = repo.get_sync(self._conn, self._account_id, cal_id)
            if row is None:
                self._days[key] = None
            else:
                iso = day.isoformat()
                after = (day + dt.timedelta(days=1)).isoformat()
                events = repo.events_overlapping_sync(self._conn, self._account_id, cal_id,
                                                      iso, after)
                self._days[key] = calendar_days(row.workdays, events).is_off(day)
        return self._days[key]
