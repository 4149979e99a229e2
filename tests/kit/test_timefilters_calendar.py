"""Time windows that name a service calendar: judged on the day the window opened, read in
the zone the caller's LocalDays names, never matching a calendar nobody knows."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from dutyline.kit.filters import FilterError
from dutyline.kit.timefilters import compile_time_filters
from dutyline.platform.calendar.days import CalendarDays, LoadedDays


def at(text: str, tz: str = "UTC") -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()


# 2026-11-20 is a Friday, 2026-11-21 a Saturday, 2026-11-23 a Monday.
OFFICE = CalendarDays(frozenset({1, 2, 3, 4, 5}), (
    ("2026-11-23", "2026-11-24", True),   # a Monday holiday
    ("2026-11-21", "2026-11-22", False),  # a make-up working Saturday
))


def days(zone: str = "UTC", **calendars: CalendarDays) -> LoadedDays:
    return LoadedDays(zone, calendars or {"cal.office": OFFICE})


def window(start: str, end: str, *, is_off: bool = False, **extra: Any) -> dict[str, Any]:
    return {"start": start, "end": end, "cal_id": "cal.office", "is_off": is_off, **extra}


def test_working_days_and_days_off() -> None:
    working = compile_time_filters([window("09:00", "18:00")], calendars=True)
    off = compile_time_filters([window("00:00", "24:00", is_off=True)], calendars=True)
    assert working.calendar_ids == frozenset({"cal.office"})
    for moment, is_working in (
        ("2026-11-20T10:00", True),   # Friday
        ("2026-11-21T10:00", True),   # Saturday, made a working day
        ("2026-11-22T10:00", False),  # Sunday
        ("2026-11-23T10:00", False),  # Monday, a holiday
        ("2026-11-24T10:00", True),   # Tuesday
    ):
        assert working.matches(at(moment), days()) is is_working, moment
        assert off.matches(at(moment), days()) is not is_working, moment
    assert not working.matches(at("2026-11-20T19:00"), days())  # outside the hours


def test_a_window_across_midnight_belongs_to_the_day_it_opened() -> None:
    nights = compile_time_filters([window("22:00", "06:00", is_off=True)], calendars=True)
    # Sunday night (Sunday is off) runs into the holiday Monday morning; Monday night
    # (the holiday) into Tuesday; Tuesday night is a working day's.
    assert nights.matches(at("2026-11-22T23:00"), days())
    assert nights.matches(at("2026-11-23T05:00"), days())  # opened on Sunday
    assert nights.matches(at("2026-11-24T05:00"), days())  # opened on the holiday
    assert not nights.matches(at("2026-11-25T05:00"), days())  # opened on Tuesday
    assert not nights.matches(at("2026-11-23T12:00"), days())  # not in the window


def test_read_in_the_zone_local_days_names() -> None:
    off = compile_time_filters([window("00:00", "24:00", is_off=True)], calendars=True)
    moment = at("2026-11-22T20:00")  # Sunday in UTC; the holiday Monday in Tokyo
    assert off.matches(moment, days("UTC"))
    assert off.matches(moment, days("Asia/Tokyo"))
    moment = at("2026-11-23T20:00")  # the holiday in UTC; Tuesday in Tokyo
    assert off.matches(moment, days("UTC"))
    assert not off.matches(moment, days("Asia/Tokyo"))
    # Plain windows follow the zone too.
    plain = compile_time_filters([{"start": "09:00", "end": "10:00"}], calendars=True)
    assert plain.matches(at("2026-11-20T09:30", "Asia/Tokyo"), days("Asia/Tokyo"))
    assert not plain.matches(at("2026-11-20T09:30", "Asia/Tokyo"), days("UTC"))


def test_repeat_and_calendar_both_hold() -> None:
    fridays = compile_time_filters([window("00:00", "24:00", repeat=[5, 6])], calendars=True)
    assert fridays.matches(at("2026-11-20T10:00"), days())
    assert fridays.matches(at("2026-11-21T10:00"), days())  # the make-up Saturday
    assert not fridays.matches(at("2026-11-24T10:00"), days())  # working, not listed


def test_unknown_calendar_or_none_given_never_matches() -> None:
    any_day = compile_time_filters([window("00:00", "24:00"),
                                    window("00:00", "24:00", is_off=True)], calendars=True)
    moment = at("2026-11-20T10:00")
    assert any_day.matches(moment, days())
    assert not any_day.matches(moment, None)
    assert not any_day.matches(moment, days(other=OFFICE))


def test_the_latest_written_event_wins() -> None:
    both = CalendarDays(frozenset({1, 2, 3, 4, 5}), (
        ("2026-11-20", "2026-11-27", True), ("2026-11-24", "2026-11-25", False)))
    assert both.is_off(dt.date(2026, 11, 23)) and not both.is_off(dt.date(2026, 11, 24))


@pytest.mark.parametrize(("item", "path"), [
    (window("09:00", "10:00", cal_id=7), "time_filters[0].cal_id"),
    (window("09:00", "10:00", cal_id="c" * 65), "time_filters[0].cal_id"),
    (window("09:00", "10:00", is_off="yes"), "time_filters[0].is_off"),
    ({"start": "09:00", "end": "10:00", "is_off": True}, "time_filters[0].is_off"),
])
def test_calendar_keys_are_checked(item: dict[str, Any], path: str) -> None:
    with pytest.raises(FilterError) as caught:
        compile_time_filters([item], calendars=True)
    assert caught.value.path == path


def test_callers_without_calendars_refuse_them() -> None:
    with pytest.raises(FilterError) as caught:
        compile_time_filters([window("09:00", "10:00")])
    assert caught.value.path == "time_filters[0].cal_id"
    # An empty calendar id with is_off false names none: accepted as a plain window.
    plain = compile_time_filters([{"start": "09:00", "end": "10:00", "cal_id": "",
                                   "is_off": False}], calendars=True)
    assert plain.calendar_ids == frozenset()
    assert plain.matches(at("2026-11-20T09:30"))
