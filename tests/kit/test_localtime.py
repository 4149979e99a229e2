"""kit/localtime: a zone's offsets over a window to the second, local days, weeks and months
back to UTC instants, and the hours classes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from dutyline.kit import localtime as lt


def utc(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=UTC).timestamp())  # type: ignore[arg-type,misc]


# The day and week numbers lt.midnight_utc and lt.week_start_utc take (insight buckets;
# the analytics compute them in SQL).
def _day_number(local: int) -> int:
    return local // lt.DAY_S


def _week_number(day: int) -> int:
    """Weeks start on Monday: 1970-01-01 was a Thursday, so day -3 was a Monday."""
    return (day + 3) // 7


@pytest.mark.parametrize(("name", "expected"), [
    ("Europe/Paris", [(utc(2026, 1, 1), 3600), (utc(2026, 3, 29, 1), 7200),
                      (utc(2026, 10, 25, 1), 3600)]),
    ("America/Santiago", [(utc(2026, 1, 1), -3 * 3600), (utc(2026, 4, 5, 3), -4 * 3600),
                          (utc(2026, 9, 6, 4), -3 * 3600)]),
    ("Asia/Kathmandu", [(utc(2026, 1, 1), 5 * 3600 + 45 * 60)]),
])
def test_offsets_over_a_year(name: str, expected: list[tuple[int, int]]) -> None:
    tz = lt.zone(name)
    assert tz is not None
    assert lt.offsets(tz, utc(2026, 1, 1), utc(2027, 1, 1)) == expected


def test_every_local_day_of_a_year_maps_back_to_its_midnight() -> None:
    for name in ("Europe/Paris", "America/Santiago", "Australia/Lord_Howe", "UTC"):
        tz = lt.zone(name)
        assert tz is not None
        t = utc(2026, 1, 1, 12)
        for _ in range(366):
            day = _day_number(lt.local_seconds(tz, t))
            start = lt.midnight_utc(tz, day)
            local = datetime.fromtimestamp(t, tz)
            assert datetime.fromtimestamp(start, tz).date() == local.date()
            assert start <= t
            assert _day_number(lt.local_seconds(tz, start)) == day
            assert _day_number(lt.local_seconds(tz, start - 1)) == day - 1
            t += 86_400


def test_weeks_start_on_monday_and_months_on_the_first() -> None:
    tz = lt.zone("Europe/Paris")
    assert tz is not None
    t = utc(2026, 4, 1, 12)  # a Wednesday
    week = _week_number(_day_number(lt.local_seconds(tz, t)))
    monday = datetime.fromtimestamp(lt.week_start_utc(tz, week), tz)
    assert (monday.weekday(), monday.hour, monday.date()) == (0, 0, (
        date(2026, 3, 30)))
    starts = lt.month_starts_local(lt.local_seconds(tz, utc(2026, 1, 15)),
                                   lt.local_seconds(tz, utc(2026, 12, 31, 23, 30)))
    assert len(starts) == 13  # 23:30Z on 31 December is already January in Paris
    assert [datetime.fromtimestamp(s, UTC).day for s in starts] == [1] * 13


def test_hours_classes() -> None:
    tz = lt.zone("Europe/Paris")
    assert tz is not None
    base = datetime(2026, 6, 1, tzinfo=tz)  # a Monday
    cases = {(0, 9): "work", (0, 17): "work", (0, 18): "off", (0, 21): "off", (0, 22): "sleep",
             (1, 7): "sleep", (1, 8): "work", (5, 12): "off", (6, 23): "sleep"}
    for (day, hour), expected in cases.items():
        t = int((base + timedelta(days=day, hours=hour)).timestamp())
        assert lt.hours_of(lt.local_seconds(tz, t)) == expected, (day, hour)


def test_unknown_zones() -> None:
    assert lt.zone("Mars/Olympus") is None
    assert lt.zone("../etc/passwd") is None
    assert lt.zone("") is None
