"""Wall-clock time in a zone <-> Unix seconds, exact across DST changes.

Rotations hand off at a wall-clock time ("09:00 in Europe/Berlin"), so a day of a daily
rotation is 23 or 25 hours long on the days clocks move. Two rules make every wall time name
exactly one instant:
- a wall time that does not exist (clocks jump forward over it) names the instant of the jump,
  i.e. the first instant that exists after it;
- a wall time that happens twice (clocks go back) names its first occurrence.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache

_UTC_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@lru_cache(maxsize=512)
def zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


def local_datetime(tz: zoneinfo.ZoneInfo, at_s: int) -> datetime:
    """The naive wall-clock datetime at instant `at_s` in `tz`."""
    return (_UTC_EPOCH + timedelta(seconds=at_s)).astimezone(tz).replace(tzinfo=None)


def local_date(tz: zoneinfo.ZoneInfo, at_s: int) -> date:
    return local_datetime(tz, at_s).date()


def _utc_seconds(aware: datetime) -> int:
    delta = aware - _UTC_EPOCH
    return delta.days * 86_400 + delta.seconds


def to_instant(tz: zoneinfo.ZoneInfo, wall: datetime) -> int:
    """Unix seconds of the naive wall-clock time `wall` in `tz` (rules in the module doc)."""
    first = _utc_seconds(wall.replace(tzinfo=tz, fold=0))
    if local_datetime(tz, first) == wall:
        return first
    # `wall` falls in a gap. fold=1 reads it with the offset after the jump, which lands
    # before the jump; fold=0 with the offset before, which lands after. The jump is between.
    low = _utc_seconds(wall.replace(tzinfo=tz, fold=1))
    high = first
    if low > high:
        low, high = high, low
    # Smallest instant in (low, high] whose offset is the post-jump one: a bisection over at
    # most a few hours (gaps are 30 minutes on Lord Howe, usually an hour).
    offset_low = _offset(tz, low)
    while high - low > 1:
        mid = (low + high) // 2
        if _offset(tz, mid) == offset_low:
            low = mid
        else:
            high = mid
    return high


def _offset(tz: zoneinfo.ZoneInfo, at_s: int) -> timedelta | None:
    return (_UTC_EPOCH + timedelta(seconds=at_s)).astimezone(tz).utcoffset()


def wall_at(tz: zoneinfo.ZoneInfo, day: date, offset_s: int) -> int:
    """The instant of `offset_s` wall-clock seconds after local midnight starting `day`
    (offsets past 86,400 run into the next days, still as wall-clock time)."""
    midnight = datetime.combine(day, time())  # naive on purpose: a wall-clock reading
    return to_instant(tz, midnight + timedelta(seconds=offset_s))


def weekday_sunday0(day: date) -> int:
    """0 = Sunday ... 6 = Saturday, the reference's day_mask numbering."""
    return (day.weekday() + 1) % 7


def add_months(day: date, months: int) -> date:
    """`day` moved by whole months, clamped to the end of a shorter month (Jan 31 -> Feb 28)."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    for last in (31, 30, 29, 28):
        try:
            return date(year, month, min(day.day, last))
        except ValueError:
            continue
    raise ValueError(f"no day {day.day} in {year}-{month}")  # pragma: no cover


def months_between(start: date, end: date) -> int:
    return (end.year - start.year) * 12 + (end.month - start.month)
