"""Cron expressions: our strict validator of the forms the contract accepts, then `cronsim`
for the fire times.

Why our own validator in front: cron libraries accept much more than the contract does
(seconds fields, `@daily`, `L`, `#`, `?`, ranges in the minute) and some read the weekday
differently; the contract's forms are few and exact, so we parse them ourselves and only
ask the library for the next time of an expression we already know is one of them.

Times are computed in a time zone (IANA name, default UTC): `0 9 * * 1-5` is 09:00 in the
rule's zone, across DST changes (cronsim skips a local time that does not exist and fires
once for one that happens twice).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_ITEM = re.compile(r"(\*|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:/([0-9]+))?")


class CronInvalid(ValueError):
    """Why an expression is not one of the accepted forms (a reason fit for a 400)."""


def _value(token: str, low: int, high: int, names: tuple[str, ...], first: int) -> int:
    if token.isdigit():
        number = int(token)
    elif names and token.upper() in names:
        number = names.index(token.upper()) + first
    else:
        raise CronInvalid(f"'{token}' is not a value of this field")
    if not low <= number <= high:
        raise CronInvalid(f"{number} is out of range {low}-{high}")
    return number


def _check_field(
    field: str, what: str, low: int, high: int, names: tuple[str, ...] = (), first: int = 0
) -> None:
    """`*`, values, ranges `a-b`, steps `/n` and lists `a,b`: nothing else (no L, W, #, ?)."""
    for item in field.split(","):
        m = _ITEM.fullmatch(item)
        if m is None:
            raise CronInvalid(f"{what} field '{field}' is not valid")
        body, step = m.group(1), m.group(2)
        try:
            if body != "*":
                bounds = [_value(t, low, high, names, first) for t in body.split("-")]
                if len(bounds) == 2 and bounds[0] > bounds[1]:
                    raise CronInvalid(f"range {body} runs backwards")
            if step is not None and not 1 <= int(step) <= high:
                raise CronInvalid(f"step /{step} is out of range")
        except CronInvalid as exc:
            raise CronInvalid(f"{what} field '{field}': {exc}") from None


def normalize_fixed_minute(expr: str) -> str:
    """The contract's automation forms: `hour day month weekday` (minute 0 filled in) or
    `minute hour day month weekday` with a fixed integer minute 0-59. Returns the normalised
    5-field form; raises CronInvalid for anything else (6 fields, macros, minute ranges...)."""
    text = expr.strip()
    if not text:
        raise CronInvalid("is required")
    if text.startswith("@"):
        raise CronInvalid("macros such as @daily are not supported")
    fields = text.split()
    if len(fields) == 4:
        fields = ["0", *fields]
    elif len(fields) == 6:
        raise CronInvalid("6-field (seconds) expressions are not supported")
    elif len(fields) != 5:
        raise CronInvalid("must have 4 or 5 fields")
    minute, hour, day, month, weekday = fields
    if not minute.isdigit() or not 0 <= int(minute) <= 59:
        raise CronInvalid("the minute must be a fixed integer 0-59")
    _check_field(hour, "hour", 0, 23)
    _check_field(day, "day", 1, 31)
    _check_field(month, "month", 1, 12, _MONTHS, 1)
    _check_field(weekday, "weekday", 0, 7, _DAYS, 0)
    normalized = " ".join([str(int(minute)), hour, day, month, weekday])
    # An expression that never matches (30 February) has no next time: refuse it now.
    next_after(normalized, "UTC", 0)
    return normalized


def check_timezone(name: str) -> str:
    """The IANA zone name, or CronInvalid."""
    zone = name.strip() or "UTC"
    try:
        _zone(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronInvalid(f"unknown time zone '{zone}'") from None
    return zone


@lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def next_after(expr: str, timezone: str, after_ms: int) -> int:
    """The first fire time strictly after `after_ms` (Unix ms), in `timezone`."""
    start = datetime.fromtimestamp(after_ms / 1000, tz=UTC).astimezone(_zone(timezone))
    try:
        fire = next(iter(CronSim(expr, start)))
    except (CronSimError, StopIteration):
        raise CronInvalid("never fires") from None
    return int(fire.timestamp()) * 1000
