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
Calendars (`cal_id`, `is_off`) are not implemented yet and are refused rather than ignored,
so a rule never silently means something else than what was written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final
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


class _Window:
    __slots__ = ("days", "end", "start")

    def __init__(self, start: int, end: int, days: frozenset[int]) -> None:
        self.start = start
        self.end = end
        self.days = days  # 0 = Sunday

    def holds(self, weekday: int, second: int) -> bool:
        if self.start < self.end:
            return weekday in self.days and self.start <= second < self.end
        # across midnight (or a whole 24 hours when start == end)
        if second >= self.start and weekday in self.days:
            return True
        return second < self.end and (weekday - 1) % 7 in self.days


class TimeFilter:
    """A compiled list of windows; `matches(at_s)` for a Unix time in seconds."""

    __slots__ = ("_tz", "_windows")

    def __init__(self, windows: tuple[_Window, ...], tz: dt.tzinfo) -> None:
        self._windows = windows
        self._tz = tz

    @property
    def matches_always(self) -> bool:
        return not self._windows

    def matches(self, at_s: float) -> bool:
        if not self._windows:
            return True
        local = dt.datetime.fromtimestamp(at_s, self._tz)
        weekday = (local.weekday() + 1) % 7  # Python's Monday = 0; ours Sunday = 0
        second = local.hour * 3600 + local.minute * 60 + local.second
        return any(w.holds(weekday, second) for w in self._windows)


_ALL_DAYS: Final = frozenset(range(7))


def _compile_window(item: Any, path: str) -> _Window:
    if not isinstance(item, Mapping):
        raise FilterError(path, "a time window is an object {start, end, repeat}")
    if item.get("cal_id"):
        raise FilterError(f"{path}.cal_id", "calendars are not supported")
    if item.get("is_off"):
        raise FilterError(f"{path}.is_off", "calendars are not supported")
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
    return _Window(start, end, days)


def compile_time_filters(
    items: Sequence[Mapping[str, Any]] | None,
    *,
    path: str = "time_filters",
    tz: str | dt.tzinfo | None = None,
) -> TimeFilter:
    """Compile recurring windows read in `tz` (IANA name; UTC when None); FilterError names the
    offending part."""
    zone_info = zone(tz)
    if items is None:
        return TimeFilter((), zone_info)
    if not isinstance(items, list | tuple):
        raise FilterError(path, "must be a list of time windows")
    if len(items) > MAX_WINDOWS:
        raise FilterError(path, f"at most {MAX_WINDOWS} time windows (got {len(items)})")
    windows = tuple(_compile_window(item, f"{path}[{i}]") for i, item in enumerate(items))
    return TimeFilter(windows, zone_info)
