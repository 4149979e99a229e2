"""Recurring time windows (reference `TimeFilter`): `{start: "HH:MM", end: "HH:MM",
repeat: [weekday...], cal_id?, is_off?}`, weekdays 0 = Sunday ... 6 = Saturday, read in one
time zone (the rule's or the account's; UTC by default).

- `start < end`: the window runs from `start` (inclusive) to `end` (exclusive) on each listed
  day; `end` may be `24:00`.
- `start >= end`: the window crosses midnight: it opens at `start` on a listed day and closes
  at `end` the next day (so `22:00`-`06:00` on Friday covers Friday night to Saturday 06:00;
  `start == end` is a whole 24 hours from `start`).
- an empty `repeat` means every day.

A list of windows matches when any window does; an empty or missing list matches always.

A window with a `cal_id` also needs its day to be one of that service calendar's working
days (`is_off` false) or days off (`is_off` true). "Its day" is the day the window opened
on, read in the same zone as the window (so `22:00`-`06:00` on a holiday's evening covers
the holiday night). What a calendar says about a day comes from a `LocalDays` the caller
passes to `matches`; `kit` knows no calendar. Without one, or when it does not know the
calendar, a calendar window does not hold. Callers that do not evaluate calendars compile
with `calendars=False` (the default), which refuses `cal_id` and `is_off` rather than
ignoring them, so a rule never silently means something else than what was written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dutyline.kit.filters import FilterError

MAX_WINDOWS: Final = 50
_DAY: Final = 86400


def _parse_clock(value: Any, path: str, *, allow_24: bool) -> int:
    """`HH:MM` -> seconds of the day."""
    if not isinstance(value, str):
        raise FilterError(path, "must be a time HH:MM")
    parts = value.strip().split(":")
    if len(parts) != 2 or not all(p.isdigit() and 1 <= len(p) <= 2 for p in parts):
        raise FilterError(path, f"must be a time HH:MM (got {value!r})")
    hours, minutes = int(parts[0]), int(parts[1])
    if allow_24 and hours == 24 and minutes == 0:
        return _DAY
    if hours > 23 or minutes > 59:
        raise FilterError(path, f"must be a time between 00:00 and 23:59 (got {value!r})")
    return hours * 3600 + minutes * 60


def zone(name: str | dt.tzinfo | None, path: str = "time_zone") -> dt.tzinfo:
    if name is None or name == "":
        return dt.UTC
    if isinstance(name, dt.tzinfo):
        return name
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise FilterError(path, f"unknown time zone {name!r}") from None


class LocalDays(Protocol):
    """What a caller knows of the place a rule is evaluated for: its time zone (None: the
    zone the filter was compiled with) and its service calendars."""

    def zone(self) -> dt.tzinfo | None: ...

    def is_off(self, cal_id: str, day: dt.date) -> bool | None:
        """Whether `day` is a day off in that calendar; None when the calendar is unknown."""
        ...


class _Window:
    __slots__ = ("cal_id", "days", "end", "is_off", "start")

    def __init__(self, start: int, end: int, days: frozenset[int], cal_id: str = "",
                 is_off: bool = False) -> None:
        self.start = start
        self.end = end
        self.days = days  # 0 = Sunday
        self.cal_id = cal_id
        self.is_off = is_off

    def opened(self, weekday: int, second: int) -> int | None:
        """How many days ago the window that holds now opened (0 or 1), None if none holds."""
        if self.start < self.end:
            return 0 if weekday in self.days and self.start <= second < self.end else None
        # across midnight (or a whole 24 hours when start == end)
        if second >= self.start and weekday in self.days:
            return 0
        return 1 if second < self.end and (weekday - 1) % 7 in self.days else None

    def holds(self, local: dt.datetime, local_days: LocalDays | None) -> bool:
        weekday = (local.weekday() + 1) % 7  # Python's Monday = 0; ours Sunday = 0
        second = local.hour * 3600 + local.minute * 60 + local.second
        back = self.opened(weekday, second)
        if back is None:
            return False
        if not self.cal_id:
            return True
        if local_days is None:
            return False
        day_off = local_days.is_off(self.cal_id, local.date() - dt.timedelta(days=back))
        return day_off is not None and day_off == self.is_off


class TimeFilter:
    """A compiled list of windows; `matches(at_s)` for a Unix time in seconds."""

    __slots__ = ("_tz", "_windows", "calendar_ids")

    def __init__(self, windows: tuple[_Window, ...], tz: dt.tzinfo) -> None:
        self._windows = windows
        self._tz = tz
        # The calendars the windows name: what a caller loads before evaluating.
        self.calendar_ids = frozenset(w.cal_id for w in windows if w.cal_id)

    @property
    def matches_always(self) -> bool:
        return not self._windows

    def matches(self, at_s: float, local_days: LocalDays | None = None) -> bool:
        """Whether any window holds at `at_s`, read in `local_days`' zone when it names one
        (else the compiled zone), its calendar windows judged by `local_days`."""
        if not self._windows:
            return True
        tz = (local_days.zone() if local_days is not None else None) or self._tz
        local = dt.datetime.fromtimestamp(at_s, tz)
        return any(w.holds(local, local_days) for w in self._windows)


_ALL_DAYS: Final = frozenset(range(7))


MAX_CALENDAR_ID = 64


def _calendar_of(item: Mapping[str, Any], path: str, calendars: bool) -> tuple[str, bool]:
    cal_id, is_off = item.get("cal_id"), item.get("is_off")
    if not calendars:
        if cal_id:
            raise FilterError(f"{path}.cal_id", "calendars are not supported here")
        if is_off:
            raise FilterError(f"{path}.is_off", "calendars are not supported here")
        return "", False
    if cal_id is None:
        cal_id = ""
    if not isinstance(cal_id, str) or len(cal_id) > MAX_CALENDAR_ID:
        raise FilterError(f"{path}.cal_id", "must be a calendar id")
    if is_off is None:
        is_off = False
    if not isinstance(is_off, bool):
        raise FilterError(f"{path}.is_off", "must be true or false")
    if is_off and not cal_id:
        raise FilterError(f"{path}.is_off", "needs a cal_id: days off are a calendar's")
    return cal_id, is_off


def _compile_window(item: Any, path: str, calendars: bool) -> _Window:
    if not isinstance(item, Mapping):
        raise FilterError(path, "a time window is an object {start, end, repeat}")
    cal_id, is_off = _calendar_of(item, path, calendars)
    if "start" not in item:
        raise FilterError(f"{path}.start", "is required")
    if "end" not in item:
        raise FilterError(f"{path}.end", "is required")
    start = _parse_clock(item["start"], f"{path}.start", allow_24=False)
    end = _parse_clock(item["end"], f"{path}.end", allow_24=True)
    repeat = item.get("repeat")
    if repeat is None:
        repeat = []
    if not isinstance(repeat, list | tuple):
        raise FilterError(f"{path}.repeat", "must be a list of weekdays 0-6 (0 = Sunday)")
    for index, day in enumerate(repeat):
        if isinstance(day, bool) or not isinstance(day, int) or not 0 <= day <= 6:
            raise FilterError(f"{path}.repeat[{index}]", "must be a weekday 0-6 (0 = Sunday)")
    days = frozenset(repeat) if repeat else _ALL_DAYS
    return _Window(start, end, days, cal_id, is_off)


def compile_time_filters(
    items: Sequence[Mapping[str, Any]] | None,
    *,
    path: str = "time_filters",
    tz: str | dt.tzinfo | None = None,
    calendars: bool = False,
) -> TimeFilter:
    """Compile recurring windows read in `tz` (IANA name; UTC when None); FilterError names the
    offending part. `calendars`: whether windows may name a service calendar (`cal_id`,
    `is_off`); the caller then checks the ids and passes a `LocalDays` to `matches`."""
    zone_info = zone(tz)
    if items is None:
        return TimeFilter((), zone_info)
    if not isinstance(items, list | tuple):
        raise FilterError(path, "must be a list of time windows")
    if len(items) > MAX_WINDOWS:
        raise FilterError(path, f"at most {MAX_WINDOWS} time windows (got {len(items)})")
    windows = tuple(_compile_window(item, f"{path}[{i}]", calendars)
                    for i, item in enumerate(items))
    return TimeFilter(windows, zone_info)
