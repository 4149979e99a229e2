"""Days off in the pure timeline: a rotation layer following a calendar hands each instant of
a day off to the next group ("next") or leaves it uncovered ("off")."""

from __future__ import annotations

from datetime import date, datetime

from dutyline.platform.calendar.days import calendar_days
from dutyline.schedule import timeline
from dutyline.schedule.localtime import local_datetime, to_instant, zone
from dutyline.schedule.timeline import Group, Layer, Slot, compute, layer_shifts

BERLIN = zone("Europe/Berlin")
HOLIDAY = date(2026, 3, 24)  # a Tuesday


def at(*parts: int) -> int:
    return to_instant(BERLIN, datetime(*parts))  # type: ignore[arg-type]  # noqa: DTZ001


def groups(*names: str) -> tuple[Group, ...]:
    return tuple(Group(n, (Slot(0, (i + 1,)),)) for i, n in enumerate(names))


def plan(shifts: list[timeline.Shift], layer: Layer) -> list[tuple[str, str]]:
    return [(local_datetime(BERLIN, s.start).strftime("%a %H:%M"), layer.groups[s.group].name)
            for s in shifts]


def daily(days_off: set[date], **more: object) -> Layer:
    return Layer(index=0, groups=groups("A", "B", "C"), unit="day",
                 enable_s=at(2026, 3, 23), days_off=days_off.__contains__,
                 **more)  # type: ignore[arg-type]


def test_a_holiday_passes_to_the_next_group_and_the_order_continues() -> None:
    layer = daily({HOLIDAY})
    shifts = layer_shifts(layer, BERLIN, at(2026, 3, 23), at(2026, 3, 28))
    # B's Tuesday goes to C; Wednesday is C's own turn; Thursday A's as without the holiday.
    assert plan(shifts, layer) == [("Mon 00:00", "A"), ("Tue 00:00", "C"), ("Thu 00:00", "A"),
                                   ("Fri 00:00", "B")]
    assert shifts[1].end == at(2026, 3, 26)


def test_the_last_group_passes_to_the_first_and_one_group_keeps_its_day() -> None:
    layer = daily({date(2026, 3, 25)})  # C's Wednesday
    assert plan(layer_shifts(layer, BERLIN, at(2026, 3, 25), at(2026, 3, 26)), layer) == [
        ("Wed 00:00", "A")]
    alone = Layer(index=0, groups=groups("A"), enable_s=at(2026, 3, 23),
                  days_off={HOLIDAY}.__contains__)
    assert plan(layer_shifts(alone, BERLIN, at(2026, 3, 23), at(2026, 3, 26)), alone) == [
        ("Mon 00:00", "A")]


def test_only_the_local_day_itself_changes_hands() -> None:
    # Handoffs at 09:00: the Tuesday off runs from 00:00 to 24:00 whoever's turn it is.
    layer = daily({HOLIDAY}, handoff_s=9 * 3600)
    shifts = layer_shifts(layer, BERLIN, at(2026, 3, 23, 9), at(2026, 3, 25, 12))
    assert plan(shifts, layer) == [("Mon 09:00", "A"), ("Tue 00:00", "B"), ("Tue 09:00", "C"),
                                   ("Wed 00:00", "B"), ("Wed 09:00", "C")]


def test_a_weekly_rotation_hands_over_only_the_holiday() -> None:
    layer = Layer(index=0, groups=groups("A", "B"), unit="week", enable_s=at(2026, 3, 23),
                  days_off={HOLIDAY}.__contains__)
    shifts = layer_shifts(layer, BERLIN, at(2026, 3, 23), at(2026, 3, 30))
    assert plan(shifts, layer) == [("Mon 00:00", "A"), ("Tue 00:00", "B"), ("Wed 00:00", "A")]


def test_off_mode_uncovers_the_day_and_the_layer_below_shows_through() -> None:
    base = Layer(index=0, groups=groups("Base"), enable_s=at(2026, 3, 23))
    top = Layer(index=1, groups=groups("A", "B"), weight=1, enable_s=at(2026, 3, 23),
                days_off={HOLIDAY}.__contains__, holiday_mode="off")
    final = compute([base, top], BERLIN, at(2026, 3, 23), at(2026, 3, 26)).final
    assert [(local_datetime(BERLIN, s.start).strftime("%a"), s.layer, s.group)
            for s in final] == [("Mon", 1, 0), ("Tue", 0, 0), ("Wed", 1, 0)]


def test_a_calendar_s_non_working_weekdays_are_days_off_too() -> None:
    weekdays_only = calendar_days("1,2,3,4,5", [])
    layer = Layer(index=0, groups=groups("A", "B"), unit="week", enable_s=at(2026, 3, 23),
                  days_off=weekdays_only.is_off)
    shifts = layer_shifts(layer, BERLIN, at(2026, 3, 23), at(2026, 3, 30))
    assert plan(shifts, layer) == [("Mon 00:00", "A"), ("Sat 00:00", "B")]
