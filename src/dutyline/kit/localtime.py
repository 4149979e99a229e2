"""Wall-clock time of a time zone as integer arithmetic a database can do.

Neither SQLite nor (portably) SQLAlchemy can ask a database for "the local day of this
instant in Europe/Paris". But within a bounded window a zone has only a few UTC offsets (two
per year where there is daylight saving), so `local = t + offset(t)` is one small CASE over
the window's transitions, computed here with the zone database; days, weeks, hours and
weekdays then follow from `local` by integer division, the same on every database.

`local` counts seconds since 1970-01-01 00:00 *local*: day n starts at local n * 86400, and
the UTC instant of that start is found back here (a DST change shifts it, never the day)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY_S = 86_400
_STEP_S = 6 * 3600  # no zone changes its offset twice within six hours
_EPOCH = date(1970, 1, 1)

# Hours of the day, after PagerDuty's analytics: work hours Monday to Friday 08:00-18:00,
# sleep hours every day 22:00-08:00, off hours the rest (evenings and weekend days).
WORK, SLEEP, OFF = "work", "sleep", "off"
WORK_FROM_H, WORK_TO_H = 8, 18
SLEEP_FROM_H, SLEEP_TO_H = 22, 8


def zone(name: str) -> ZoneInfo | None:
    """The zone of an IANA name, or None when the name is unknown."""
    if not name or len(name) > 64 or name.startswith(("/", ".")) or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def offset_at(tz: ZoneInfo, t: int) -> int:
    off = datetime.fromtimestamp(t, tz).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def offsets(tz: ZoneInfo, start_s: int, end_s: int) -> list[tuple[int, int]]:
    """[(from_s, offset_s), ...] covering [start_s, end_s): the first from_s is start_s, each
    later one is the exact second the offset changes."""
    found = [(start_s, offset_at(tz, start_s))]
    t = start_s
    while t < end_s:
        nxt = min(t + _STEP_S, end_s)
        if offset_at(tz, nxt) != found[-1][1]:
            lo, hi = t, nxt  # bisect (lo, hi] for the first second of the new offset
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if offset_at(tz, mid) == found[-1][1]:
                    lo = mid
                else:
                    hi = mid
            found.append((hi, offset_at(tz, hi)))
        t = nxt
    return found


def local_seconds(tz: ZoneInfo, t: int) -> int:
    return t + offset_at(tz, t)


def weekday(day: int) -> int:
    """0 Monday ... 6 Sunday."""
    return (day + 3) % 7


def hours_of(local: int) -> str:
    hour = (local % DAY_S) // 3600
    if hour >= SLEEP_FROM_H or hour < SLEEP_TO_H:
        return SLEEP
    if weekday(local // DAY_S) < 5 and WORK_FROM_H <= hour < WORK_TO_H:
        return WORK
    return OFF


def midnight_utc(tz: ZoneInfo, day: int) -> int:
    """The UTC instant local day `day` begins (its first existing second, where midnight
    falls in a DST gap)."""
    d = _EPOCH + timedelta(days=day)
    return int(datetime.combine(d, time(0), tzinfo=tz).timestamp())


def week_start_utc(tz: ZoneInfo, week: int) -> int:
    return midnight_utc(tz, week * 7 - 3)


def month_starts_local(start_local: int, end_local: int) -> list[int]:
    """Local seconds of the first day of every month from the one holding start_local to the
    one holding end_local."""
    d = datetime.fromtimestamp(start_local, UTC).date().replace(day=1)
    last = datetime.fromtimestamp(end_local, UTC).date()
    starts: list[int] = []
    while d <= last:
        starts.append((d - _EPOCH).days * DAY_S)
        d = date(d.year + d.month // 12, d.month % 12 + 1, 1)
    return starts
