"""Times as the console shows them: in the reader's time zone (their own, else their
account's, else UTC), with the zone's abbreviation, so every page that shows the same instant
shows it the same way.

    reader_zone("Asia/Tokyo", "UTC")        -> ("Asia/Tokyo", ZoneInfo("Asia/Tokyo"))
    label(1_776_092_400, zone)              -> "2026-04-14 00:00 JST"
    iso(1_776_092_400)                      -> "2026-04-13T15:00:00Z" (for <time datetime>)

A zone without a letter abbreviation (America/Sao_Paulo's is "-03") is shown as "UTC-03"."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, tzinfo

UTC_ZONE = zoneinfo.ZoneInfo("UTC")


def reader_zone(*names: str) -> tuple[str, zoneinfo.ZoneInfo]:
    """The first of `names` that is a known zone (the person's, then the account's), else
    UTC: a stored name the server's zone database lacks must not break the page."""
    for name in names:
        if not name:
            continue
        try:
            return name, zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            continue
    return "UTC", UTC_ZONE


def abbreviation(at: datetime) -> str:
    """The zone's short name at that instant (CET or CEST), "UTC+04" for a zone that has
    only an offset for one."""
    name = at.tzname() or "UTC"
    if name[:1] in "+-":
        return "UTC" + name
    return name


def local(unix_s: float, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(unix_s, tz)


def label(unix_s: float, tz: tzinfo, *, seconds: bool = False) -> str:
    """The date and time in `tz`, with its abbreviation: 2026-04-14 09:30 JST."""
    at = local(unix_s, tz)
    shown = f"{at:%Y-%m-%d %H:%M:%S}" if seconds else f"{at:%Y-%m-%d %H:%M}"
    return f"{shown} {abbreviation(at)}"


def iso(unix_s: float) -> str:
    """The instant for machines (<time datetime>): UTC, to the second."""
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Stamp(str):
    """A time as a page shows it (the text) that also carries its instant for
    `<time datetime="{{ stamp.iso }}">`."""

    iso: str

    def __new__(cls, unix_s: float, tz: tzinfo, *, seconds: bool = False) -> Stamp:
        made = super().__new__(cls, label(unix_s, tz, seconds=seconds))
        made.iso = iso(unix_s)
        return made
