"""Recurring time windows: weekdays (0 = Sunday), ranges, across midnight, time zones."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dutyline.kit.filters import FilterError
from dutyline.kit.timefilters import compile_time_filters


def at(text: str, tz: str = "UTC") -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()


# 2026-11-20 is a Friday (weekday 5), 2026-11-21 a Saturday (6), 2026-11-22 a Sunday (0).


def test_empty_matches_always() -> None:
    assert compile_time_filters(None).matches(0)
    assert compile_time_filters([]).matches(1e9)
    assert compile_time_filters([]).matches_always


def test_range_on_weekdays() -> None:
    f = compile_time_filters([{"start": "09:00", "end": "18:00", "repeat": [1, 2, 3, 4, 5]}])
    assert f.matches(at("2026-11-20T09:00:00"))
    assert f.matches(at("2026-11-20T17:59:59"))
    assert not f.matches(at("2026-11-20T18:00:00"))  # end is exclusive
    assert not f.matches(at("2026-11-20T08:59:59"))
    assert not f.matches(at("2026-11-21T12:00:00"))  # Saturday


def test_empty_repeat_is_every_day_and_24_00() -> None:
    f = compile_time_filters([{"start": "00:00", "end": "24:00", "repeat": []}])
    assert all(f.matches(at(f"2026-11-{d}T23:59:59")) for d in range(16, 23))


def test_across_midnight_belongs_to_the_start_day() -> None:
    f = compile_time_filters([{"start": "22:00", "end": "06:00", "repeat": [5]}])  # Friday
    assert f.matches(at("2026-11-20T23:00:00"))
    assert f.matches(at("2026-11-21T05:59:00"))  # Saturday morning, opened Friday
    assert not f.matches(at("2026-11-21T06:00:00"))
    assert not f.matches(at("2026-11-21T23:00:00"))  # Saturday night: not listed
    assert not f.matches(at("2026-11-20T05:00:00"))  # Friday morning: opened Thursday


def test_sunday_is_zero_and_wraps_from_saturday() -> None:
    f = compile_time_filters([{"start": "20:00", "end": "02:00", "repeat": [6]}])
    assert f.matches(at("2026-11-22T01:00:00"))  # Sunday 01:00, opened Saturday
    g = compile_time_filters([{"start": "00:00", "end": "01:00", "repeat": [0]}])
    assert g.matches(at("2026-11-22T00:30:00"))


def test_start_equal_end_is_a_whole_day_from_start() -> None:
    f = compile_time_filters([{"start": "08:00", "end": "08:00", "repeat": [1]}])  # Monday
    assert f.matches(at("2026-11-16T08:00:00"))
    assert f.matches(at("2026-11-17T07:59:00"))
    assert not f.matches(at("2026-11-17T08:00:00"))


def test_time_zone() -> None:
    f = compile_time_filters([{"start": "09:00", "end": "10:00"}], tz="Asia/Shanghai")
    assert f.matches(at("2026-11-20T09:30:00", "Asia/Shanghai"))
    assert f.matches(at("2026-11-20T01:30:00"))  # 09:30 in Shanghai
    assert not f.matches(at("2026-11-20T09:30:00"))


def test_any_window() -> None:
    f = compile_time_filters(
        [{"start": "01:00", "end": "02:00"}, {"start": "03:00", "end": "04:00"}]
    )
    assert f.matches(at("2026-11-20T03:30:00"))
    assert not f.matches(at("2026-11-20T02:30:00"))


@pytest.mark.parametrize(
    ("items", "path"),
    [
        ([{"start": "9", "end": "10:00"}], "time_filters[0].start"),
        ([{"start": "09:00", "end": "25:00"}], "time_filters[0].end"),
        ([{"start": "24:00", "end": "01:00"}], "time_filters[0].start"),
        ([{"start": "09:60", "end": "10:00"}], "time_filters[0].start"),
        ([{"end": "10:00"}], "time_filters[0].start"),
        ([{"start": "09:00"}], "time_filters[0].end"),
        ([{"start": "09:00", "end": "10:00", "repeat": [7]}], "time_filters[0].repeat[0]"),
        ([{"start": "09:00", "end": "10:00", "repeat": 1}], "time_filters[0].repeat"),
        ([{"start": "09:00", "end": "10:00", "cal_id": "c"}], "time_filters[0].cal_id"),
        (["x"], "time_filters[0]"),
        ("x", "time_filters"),
        ([{"start": "09:00", "end": "10:00"}] * 51, "time_filters"),
    ],
)
def test_errors_name_the_path(items: Any, path: str) -> None:
    with pytest.raises(FilterError) as caught:
        compile_time_filters(items)
    assert caught.value.path == path


def test_unknown_time_zone() -> None:
    with pytest.raises(FilterError) as caught:
        compile_time_filters([], tz="Mars/Olympus")
    assert caught.value.path == "time_zone"


@settings(max_examples=300, deadline=None)
@given(start=st.integers(0, 1439), end=st.integers(0, 1440),
       days=st.sets(st.integers(0, 6)), moment=st.integers(0, 2**31))
def test_matches_a_brute_force_model(start: int, end: int, days: set[int], moment: int) -> None:
    f = compile_time_filters([{
        "start": f"{start // 60:02d}:{start % 60:02d}",
        "end": f"{end // 60:02d}:{end % 60:02d}",
        "repeat": sorted(days),
    }])
    listed = days or set(range(7))
    local = dt.datetime.fromtimestamp(moment, dt.UTC)
    minute = local.hour * 60 + local.minute
    today = (local.weekday() + 1) % 7
    yesterday = (today - 1) % 7
    if start < end:
        expected = today in listed and start <= minute < end
    else:
        expected = (today in listed and minute >= start) or (
            yesterday in listed and minute < end
        )
    assert f.matches(moment) == expected
