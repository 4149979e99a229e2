"""The pure timeline: rotations, handoffs across DST, restrictions, masks, overrides, stacking."""

from __future__ import annotations

import itertools
from datetime import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dutyline.schedule import timeline
from dutyline.schedule.localtime import local_datetime, to_instant, zone
from dutyline.schedule.timeline import Group, Layer, Shift, Slot, compute, layer_shifts

DAY = 86_400
BERLIN = zone("Europe/Berlin")
NEW_YORK = zone("America/New_York")
LORD_HOWE = zone("Australia/Lord_Howe")
UTC = zone("UTC")


def at(tz: timeline.ZoneInfo, *parts: int) -> int:
    return to_instant(tz, datetime(*parts))  # type: ignore[arg-type]  # noqa: DTZ001


def groups(*names: str) -> tuple[Group, ...]:
    return tuple(Group(n, (Slot(0, (i + 1,)),)) for i, n in enumerate(names))


def wall(tz: timeline.ZoneInfo, s: int) -> str:
    return local_datetime(tz, s).strftime("%a %m-%d %H:%M")


# -- local time -----------------------------------------------------------------------------


def test_wall_times_in_a_gap_name_the_jump_and_repeated_ones_the_first() -> None:
    jump = at(BERLIN, 2026, 3, 29, 2, 30)
    assert local_datetime(BERLIN, jump) == datetime(2026, 3, 29, 3, 0)  # noqa: DTZ001
    assert local_datetime(BERLIN, jump - 1) == datetime(2026, 3, 29, 1, 59, 59)  # noqa: DTZ001
    first = at(BERLIN, 2026, 10, 25, 2, 30)
    assert local_datetime(BERLIN, first + 3600) == datetime(2026, 10, 25, 2, 30)  # noqa: DTZ001
    # Lord Howe moves by 30 minutes: 02:00 -> 02:30.
    jump = at(LORD_HOWE, 2026, 10, 4, 2, 10)
    assert local_datetime(LORD_HOWE, jump) == datetime(2026, 10, 4, 2, 30)  # noqa: DTZ001
    assert local_datetime(LORD_HOWE, jump - 1) == datetime(2026, 10, 4, 1, 59, 59)  # noqa: DTZ001


# -- rotations ------------------------------------------------------------------------------


def test_daily_handoff_stays_at_nine_local_across_spring_forward_in_berlin() -> None:
    layer = Layer(0, groups("A", "B"), handoff_s=9 * 3600, enable_s=at(BERLIN, 2026, 3, 27, 9))
    shifts = layer_shifts(layer, BERLIN, at(BERLIN, 2026, 3, 27, 9), at(BERLIN, 2026, 3, 31, 9))
    assert [wall(BERLIN, s.start) for s in shifts] == [
        "Fri 03-27 09:00", "Sat 03-28 09:00", "Sun 03-29 09:00", "Mon 03-30 09:00"]
    assert [s.end - s.start for s in shifts] == [DAY, DAY - 3600, DAY, DAY]
    assert [s.group for s in shifts] == [0, 1, 0, 1]


def test_daily_handoff_across_fall_back_in_new_york_lasts_25_hours() -> None:
    layer = Layer(0, groups("A", "B"), handoff_s=8 * 3600,
                  enable_s=at(NEW_YORK, 2026, 10, 31, 8))
    shifts = layer_shifts(layer, NEW_YORK, at(NEW_YORK, 2026, 10, 31, 8),
                          at(NEW_YORK, 2026, 11, 2, 8))
    assert [s.end - s.start for s in shifts] == [DAY + 3600, DAY]
    assert [wall(NEW_YORK, s.end) for s in shifts] == ["Sun 11-01 08:00", "Mon 11-02 08:00"]


def test_handoff_inside_the_lord_howe_gap_happens_at_the_jump() -> None:
    # 02:15 does not exist on 2026-10-04 on Lord Howe (02:00 -> 02:30).
    layer = Layer(0, groups("A", "B"), handoff_s=2 * 3600 + 900,
                  enable_s=at(LORD_HOWE, 2026, 10, 2, 2, 15))
    shifts = layer_shifts(layer, LORD_HOWE, at(LORD_HOWE, 2026, 10, 2, 3),
                          at(LORD_HOWE, 2026, 10, 6))
    starts = [wall(LORD_HOWE, s.start) for s in shifts]
    assert starts == ["Fri 10-02 03:00", "Sat 10-03 02:15", "Sun 10-04 02:30",
                      "Mon 10-05 02:15"]
    # Sat 02:15 -> the jump, and the jump -> Mon 02:15: both 15 minutes short of a day.
    assert [s.end - s.start for s in shifts[1:3]] == [DAY - 900, DAY - 900]


def test_lord_howe_daily_shift_over_the_change_is_23_and_a_half_hours() -> None:
    layer = Layer(0, groups("A", "B"), enable_s=at(LORD_HOWE, 2026, 10, 3))
    shifts = layer_shifts(layer, LORD_HOWE, at(LORD_HOWE, 2026, 10, 3), at(LORD_HOWE, 2026, 10, 6))
    assert [s.end - s.start for s in shifts] == [DAY, DAY - 1800, DAY]


def test_weekly_rotation_hands_off_on_the_enable_weekday_at_the_handoff_time() -> None:
    enable = at(BERLIN, 2026, 3, 16, 10)  # a Monday
    layer = Layer(0, groups("A", "B", "C"), unit="week", handoff_s=10 * 3600, enable_s=enable)
    shifts = layer_shifts(layer, BERLIN, enable, at(BERLIN, 2026, 4, 13, 10))
    assert [wall(BERLIN, s.start) for s in shifts] == [
        "Mon 03-16 10:00", "Mon 03-23 10:00", "Mon 03-30 10:00", "Mon 04-06 10:00"]
    assert [s.group for s in shifts] == [0, 1, 2, 0]
    assert shifts[1].end - shifts[1].start == 7 * DAY - 3600  # the DST week


def test_two_day_rotation_and_monthly_rotation_clamp_to_month_ends() -> None:
    layer = Layer(0, groups("A", "B"), value=2, enable_s=at(UTC, 2026, 1, 1))
    shifts = layer_shifts(layer, UTC, at(UTC, 2026, 1, 1), at(UTC, 2026, 1, 7))
    assert [(s.end - s.start) // DAY for s in shifts] == [2, 2, 2]
    monthly = Layer(0, groups("A", "B"), unit="month", enable_s=at(UTC, 2026, 1, 31))
    shifts = layer_shifts(monthly, UTC, at(UTC, 2026, 1, 31), at(UTC, 2026, 5, 1))
    assert [wall(UTC, s.start)[:9] for s in shifts] == [
        "Sat 01-31", "Sat 02-28", "Tue 03-31", "Thu 04-30"]


def test_hour_rotation_counts_elapsed_hours_across_dst() -> None:
    enable = at(BERLIN, 2026, 3, 29, 0)
    layer = Layer(0, groups("A", "B"), unit="hour", value=8, enable_s=enable)
    shifts = layer_shifts(layer, BERLIN, enable, enable + DAY)
    assert all(s.end - s.start == 8 * 3600 for s in shifts)
    assert [wall(BERLIN, s.start)[-5:] for s in shifts] == ["00:00", "09:00", "17:00"]


def test_a_layer_enabled_mid_cycle_starts_with_the_first_group_until_the_second_handoff() -> None:
    # The reference's preview example: enabled Sunday 16:00 in Shanghai, weekdays only.
    shanghai = zone("Asia/Shanghai")
    layer = Layer(0, groups("A", "B"), enable_s=1775980800, weekdays=frozenset({1, 2, 3, 4, 5}))
    shifts = compute([layer], shanghai, 1775980800, 1776240000).final
    assert [(s.start, s.end, s.group) for s in shifts[:2]] == [
        (1776009600, 1776096000, 0), (1776096000, 1776182400, 1)]


def test_expire_time_ends_the_layer() -> None:
    enable = at(UTC, 2026, 1, 1)
    layer = Layer(0, groups("A"), enable_s=enable, expire_s=enable + DAY + 3600)
    shifts = layer_shifts(layer, UTC, enable - DAY, enable + 5 * DAY)
    assert shifts == [Shift(enable, enable + DAY + 3600, 0, 0)]


# -- restrictions and masks -------------------------------------------------------------------


def test_day_restriction_over_midnight_and_day_mask() -> None:
    enable = at(BERLIN, 2026, 3, 23)  # Monday
    layer = Layer(0, groups("A"), enable_s=enable, restrict_mode=1,
                  periods=((22 * 3600, 6 * 3600),), weekdays=frozenset({1, 2}))
    shifts = layer_shifts(layer, BERLIN, enable, enable + 4 * DAY)
    # Without continuous masking, Tuesday night is cut at midnight (Wednesday is not listed).
    assert [(wall(BERLIN, s.start), wall(BERLIN, s.end)) for s in shifts] == [
        ("Mon 03-23 00:00", "Mon 03-23 06:00"), ("Mon 03-23 22:00", "Tue 03-24 06:00"),
        ("Tue 03-24 22:00", "Wed 03-25 00:00")]
    continuous = Layer(0, groups("A"), enable_s=enable, restrict_mode=1,
                       periods=((22 * 3600, 6 * 3600),), weekdays=frozenset({1, 2}),
                       mask_continuous=True)
    shifts = layer_shifts(continuous, BERLIN, enable, enable + 4 * DAY)
    assert [(wall(BERLIN, s.start), wall(BERLIN, s.end)) for s in shifts] == [
        ("Mon 03-23 22:00", "Tue 03-24 06:00"), ("Tue 03-24 22:00", "Wed 03-25 06:00")]


def test_week_restriction_offsets_count_from_sunday_midnight() -> None:
    enable = at(NEW_YORK, 2026, 3, 1)  # a Sunday; DST starts Sunday 03-08
    friday_18 = 5 * DAY + 18 * 3600
    monday_9 = DAY + 9 * 3600
    layer = Layer(0, groups("A"), unit="week", enable_s=enable, restrict_mode=2,
                  periods=((friday_18, monday_9),))
    shifts = layer_shifts(layer, NEW_YORK, enable, at(NEW_YORK, 2026, 3, 15))
    assert [(wall(NEW_YORK, s.start), wall(NEW_YORK, s.end)) for s in shifts] == [
        ("Sun 03-01 00:00", "Mon 03-02 09:00"), ("Fri 03-06 18:00", "Mon 03-09 09:00"),
        ("Fri 03-13 18:00", "Sun 03-15 00:00")]
    assert shifts[1].end - shifts[1].start == 63 * 3600 - 3600  # one hour lost on 03-08


def test_fair_rotation_skips_cycles_with_no_coverage() -> None:
    enable = at(UTC, 2026, 3, 2)  # a Monday
    weekdays = frozenset({1, 2, 3, 4, 5})
    plain = Layer(0, groups("A", "B"), enable_s=enable, weekdays=weekdays)
    fair = Layer(0, groups("A", "B"), enable_s=enable, weekdays=weekdays, fair=True)
    window = (enable + 7 * DAY, enable + 8 * DAY)  # the next Monday
    # Calendar turns: 7 days later is an odd count -> B; fair turns: 5 covered days -> B too;
    # two weeks on: calendar 14 -> A, fair 10 -> A; three weeks: calendar 21 -> B, fair 15 -> B.
    # A three-group rotation tells them apart.
    plain3 = Layer(0, groups("A", "B", "C"), enable_s=enable, weekdays=weekdays)
    fair3 = Layer(0, groups("A", "B", "C"), enable_s=enable, weekdays=weekdays, fair=True)
    assert layer_shifts(plain3, UTC, *window)[0].group == 7 % 3
    assert layer_shifts(fair3, UTC, *window)[0].group == 5 % 3
    assert layer_shifts(plain, UTC, *window)[0].group == layer_shifts(fair, UTC, *window)[0].group


# -- stacking and overrides ------------------------------------------------------------------


def test_higher_layer_wins_and_lower_shows_through_its_gaps() -> None:
    enable = at(UTC, 2026, 1, 5)
    base = Layer(0, groups("A"), enable_s=enable)
    office = Layer(1, (Group("office", (Slot(0, (9,)),)),), enable_s=enable, restrict_mode=1,
                   periods=((9 * 3600, 17 * 3600),))
    final = compute([base, office], UTC, enable, enable + DAY).final
    assert [(s.start - enable, s.end - enable, s.layer) for s in final] == [
        (0, 9 * 3600, 0), (9 * 3600, 17 * 3600, 1), (17 * 3600, DAY, 0)]
    # A heavier weight puts the first layer on top whatever the order.
    heavy = Layer(0, groups("A"), enable_s=enable, weight=5)
    assert [s.layer for s in compute([heavy, office], UTC, enable, enable + DAY).final] == [0]


def test_override_covers_a_window_above_every_rotation() -> None:
    enable = at(UTC, 2026, 1, 5)
    base = Layer(0, groups("A"), enable_s=enable, weight=100)
    cover = Layer(1, (Group("cover", (Slot(0, (7,)),), enable + 3600, enable + 7200),
                      Group("late", (Slot(0, (8,)),), enable + 5400, enable + 9000)), mode=1)
    final = compute([base, cover], UTC, enable, enable + 4 * 3600).final
    assert [(s.start - enable, s.end - enable, s.layer, s.group) for s in final] == [
        (0, 3600, 0, 0), (3600, 5400, 1, 0), (5400, 9000, 1, 1), (9000, 4 * 3600, 0, 0)]


def test_persons_at_filters_by_role() -> None:
    group = Group("A", (Slot(1, (10, 11)), Slot(2, (12,)), Slot(1, (11, 13))))
    layer = Layer(0, (group,), enable_s=0)
    shift = Shift(0, DAY, 0, 0)
    assert timeline.persons_at([layer], shift) == [10, 11, 12, 13]
    assert timeline.persons_at([layer], shift, frozenset({1})) == [10, 11, 13]
    assert timeline.persons_at([layer], shift, frozenset({3})) == []


# -- properties -----------------------------------------------------------------------------

ZONES = st.sampled_from(["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC",
                         "Asia/Kolkata"])
START = 1_767_225_600  # 2026-01-01


@st.composite
def rotation_layers(draw: st.DrawFn, index: int = 0) -> Layer:
    unit = draw(st.sampled_from(["hour", "day", "week", "month"]))
    value = draw(st.integers(1, {"hour": 30, "day": 4, "week": 2, "month": 1}[unit]))
    handoff = draw(st.integers(0, 23)) * 3600 + draw(st.sampled_from([0, 900, 1800]))
    restrict = draw(st.sampled_from([0, 0, 1, 2]))
    span = DAY if restrict == 1 else 7 * DAY
    periods: tuple[tuple[int, int], ...] = ()
    if restrict:
        s = draw(st.integers(0, span // 1800 - 1)) * 1800
        e = draw(st.integers(0, span // 1800 - 1).filter(lambda x: x * 1800 != s)) * 1800
        periods = ((s, e),)
    weekdays = frozenset(draw(st.lists(st.integers(0, 6), max_size=6)))
    return Layer(index, groups(*"ABC"[: draw(st.integers(1, 3))]), unit=unit, value=value,
                 handoff_s=handoff, enable_s=START + draw(st.integers(0, 60 * DAY)),
                 weight=draw(st.integers(0, 2)), restrict_mode=restrict, periods=periods,
                 weekdays=weekdays, fair=draw(st.booleans()),
                 mask_continuous=draw(st.booleans()))


def _covered(shifts: list[Shift], t: int) -> Shift | None:
    found = [s for s in shifts if s.start <= t < s.end]
    assert len(found) <= 1
    return found[0] if found else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layer=rotation_layers(), tz_name=ZONES, offset=st.integers(0, 120 * DAY),
       length=st.integers(1, 20 * DAY))
def test_a_layer_shifts_are_sorted_disjoint_inside_the_window(
        layer: Layer, tz_name: str, offset: int, length: int) -> None:
    start = START + offset
    shifts = layer_shifts(layer, zone(tz_name), start, start + length)
    for a, b in itertools.pairwise(shifts):
        assert a.end <= b.start
    assert all(start <= s.start < s.end <= start + length for s in shifts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layer=rotation_layers(), tz_name=ZONES, offset=st.integers(0, 120 * DAY),
       length=st.integers(DAY, 10 * DAY))
def test_an_unrestricted_layer_covers_every_instant_once_enabled(
        layer: Layer, tz_name: str, offset: int, length: int) -> None:
    layer = Layer(0, layer.groups, unit=layer.unit, value=layer.value, handoff_s=layer.handoff_s,
                  enable_s=layer.enable_s)
    start = START + offset
    lo = max(start, layer.enable_s)
    shifts = layer_shifts(layer, zone(tz_name), start, start + length)
    if lo >= start + length:
        assert shifts == []
        return
    assert shifts[0].start == lo and shifts[-1].end == start + length
    for a, b in itertools.pairwise(shifts):
        assert a.end == b.start  # no gap, no overlap
    if len(layer.groups) > 1:
        for a, b in itertools.pairwise(shifts):
            assert a.group != b.group


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=rotation_layers(0), second=rotation_layers(1), tz_name=ZONES,
       offset=st.integers(0, 90 * DAY), probes=st.lists(st.integers(0, 5 * DAY), max_size=30),
       cover=st.tuples(st.integers(0, 5 * DAY), st.integers(1, 2 * DAY)))
def test_the_highest_covering_layer_wins_and_an_override_beats_all(
        first: Layer, second: Layer, tz_name: str, offset: int, probes: list[int],
        cover: tuple[int, int]) -> None:
    tz = zone(tz_name)
    start = START + offset
    end = start + 5 * DAY
    override = Layer(2, (Group("o", (Slot(0, (99,)),), start + cover[0],
                               start + cover[0] + cover[1]),), mode=1)
    layers = [first, second, override]
    result = compute(layers, tz, start, end)
    for a, b in zip(result.final, result.final[1:], strict=False):
        assert a.end <= b.start
    for p in probes:
        t = start + p
        if t >= end:
            continue
        candidates = [(layer.priority, layer.index, s) for layer, shifts in
                      zip(layers, result.layers, strict=True)
                      if (s := _covered(shifts, t)) is not None]
        won = _covered(result.final, t)
        if not candidates:
            assert won is None
            continue
        best = max(candidates, key=lambda c: c[0])
        assert won is not None and (won.layer, won.group) == (best[2].layer, best[2].group)
        if override.groups[0].start <= t < override.groups[0].end:
            assert won.layer == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=rotation_layers(0), second=rotation_layers(1), tz_name=ZONES,
       offset=st.integers(0, 90 * DAY), cut=st.integers(1, 6 * DAY - 1))
def test_splitting_the_window_changes_nothing(first: Layer, second: Layer, tz_name: str,
                                             offset: int, cut: int) -> None:
    """Who is on call at an instant does not depend on the window it is computed in (the
    on-call cache computes windows around the instants it is asked about)."""
    tz = zone(tz_name)
    start = START + offset
    whole = compute([first, second], tz, start, start + 6 * DAY).final
    left = compute([first, second], tz, start, start + cut).final
    right = compute([first, second], tz, start + cut, start + 6 * DAY).final
    for t in range(start, start + 6 * DAY, 1800):
        part = _covered(left if t < start + cut else right, t)
        got = _covered(whole, t)
        expected = (got.layer, got.group) if got else None
        assert ((part.layer, part.group) if part else None) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layer=rotation_layers(), tz_name=ZONES, j=st.integers(0, 60))
def test_fair_turn_counting_by_period_equals_counting_every_cycle(
        layer: Layer, tz_name: str, j: int) -> None:
    tz = zone(tz_name)
    fair = Layer(0, layer.groups, unit=layer.unit, value=layer.value, handoff_s=layer.handoff_s,
                 enable_s=layer.enable_s, restrict_mode=layer.restrict_mode,
                 periods=layer.periods, weekdays=layer.weekdays, fair=True,
                 mask_continuous=layer.mask_continuous)
    cycles = timeline._Cycles(fair, tz)
    brute = sum(bool(timeline.active_intervals(fair, tz, *cycles.bounds(k))) for k in range(j))
    assert timeline._covered_cycles_before(fair, tz, cycles, j) == brute
