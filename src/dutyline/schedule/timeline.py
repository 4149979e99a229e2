"""The on-call timeline of a schedule: pure computation, no I/O, no clock.

A schedule is a stack of layers (reference `ScheduleLayer`). What each field means here:

Rotation layers (`mode` 0)
- Groups take turns, one per *cycle*. A cycle is `rotation_value` × `rotation_unit`. Days,
  weeks and months are calendar units in the schedule's time zone: every handoff happens at
  the same wall-clock time, so a daily shift that spans a DST change lasts 23 or 25 hours.
  Hours are elapsed hours (a 12-hour rotation stays 12 hours long).
- Handoffs: cycle boundaries are at local midnight of the layer's first day (the local date
  of `enable_time`) plus k cycles, plus `handoff_time` wall-clock seconds (for hour units:
  that first instant plus k × the cycle's length). The first group's turn runs from
  `enable_time` to the second boundary after it: a layer enabled mid-cycle starts with the
  first group instead of leaving a gap or starting mid-list.
- The layer covers [`enable_time`, `expire_time`) (0: no end), cut by the restrictions:
  `restrict_mode` 1 (day): each `restrict_periods` item is a wall-clock window of the day,
  offsets in seconds from local midnight; 2 (week): offsets from Sunday 00:00 of the local
  week. An end before the start runs over midnight (or over the week's end). With no
  periods, the legacy `restrict_start`/`restrict_end` pair is the one period.
  `day_mask.repeat` lists the local weekdays (0 = Sunday) the layer covers (empty or absent:
  every day). With `mask_continuous_enabled`, a window that starts on a listed day is kept
  whole even where it runs into an unlisted day; without it, the mask cuts at midnight.
- `fair_rotation`: a cycle with no coverage at all (e.g. a weekend masked out) passes no
  turn, so every group gets the same share of covered cycles. Without it, turns follow the
  calendar (a group whose cycle is masked out loses its turn). The API accepts it for day
  and week cycles only (counted by the weekly pattern they repeat); this module also
  counts hour and month cycles one by one.

- Days off (`cal_id`, `holiday_mode`): a rotation layer may follow a service calendar. The
  local days of the schedule's time zone that the calendar says are off (holidays, and the
  weekdays it does not work) change the layer's shifts at every instant of those days, after
  turns are given out (turns, fair or not, are counted as if there were no days off):
  "next" (the default) gives each instant of a day off to the group after the one whose turn
  it is (the last group's to the first; a layer of one group keeps it); "off" leaves the
  layer without coverage on days off, so the layers below show through.

Override layers (`mode` 1): each group covers its own window [`start`, `end`) (a person
covers a window). Within the layer, a later group wins where windows overlap.

Stacking: override layers above rotation layers; then the higher `weight`; then the later
layer in the list. The final timeline takes, at each instant, the highest layer that covers
it; where it has a gap, the layers below show through.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from dutyline.schedule.localtime import (
    add_months,
    local_date,
    months_between,
    wall_at,
    weekday_sunday0,
)

Unit = Literal["hour", "day", "week", "month"]
HolidayMode = Literal["next", "off"]
HOLIDAY_MODES: tuple[HolidayMode, ...] = ("next", "off")
DAY = 86_400
WEEK = 7 * DAY
NOMINAL_SECONDS: dict[str, int] = {"hour": 3600, "day": DAY, "week": WEEK, "month": 30 * DAY}


@dataclass(frozen=True, slots=True)
class Slot:
    """One `ScheduleMember`: the persons holding a role in a group (role 0: no role)."""

    role_id: int
    person_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    slots: tuple[Slot, ...]
    start: int = 0  # override layers: the window this group covers
    end: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class Layer:
    index: int  # position in the schedule's list: the `index` of computed shifts
    groups: tuple[Group, ...]
    mode: int = 0
    weight: int = 0
    unit: Unit = "day"
    value: int = 1
    handoff_s: int = 0
    enable_s: int = 0
    expire_s: int = 0  # 0: no end
    restrict_mode: int = 0
    periods: tuple[tuple[int, int], ...] = ()
    weekdays: frozenset[int] = frozenset()  # empty: every day
    fair: bool = False
    mask_continuous: bool = False
    # whether a local day is off (the calendar the layer follows), and what happens then
    days_off: Callable[[date], bool] | None = None
    holiday_mode: HolidayMode = "next"
    # fair rotation: active[j] tells whether cycle j has any coverage (filled as needed)
    _active_cycles: list[bool] = field(default_factory=list, repr=False)

    @property
    def priority(self) -> tuple[int, int, int]:
        return (1 if self.mode == 1 else 0, self.weight, self.index)


@dataclass(frozen=True, slots=True)
class Shift:
    start: int
    end: int
    layer: int  # Layer.index
    group: int  # index into the layer's groups


# -- coverage of one layer ----------------------------------------------------------------


def _restricted(layer: Layer) -> bool:
    return layer.restrict_mode in (1, 2) and bool(layer.periods)


def active_intervals(layer: Layer, tz: ZoneInfo, start: int, end: int) -> list[tuple[int, int]]:
    """Where the layer's restrictions and day mask let it cover, inside [start, end), as
    sorted disjoint intervals (ignoring enable/expire)."""
    if start >= end:
        return []
    first = local_date(tz, start) - timedelta(days=8)
    last = local_date(tz, end) + timedelta(days=1)
    raw: list[tuple[int, int, date]] = []  # (start, end, local day the window starts on)
    if not _restricted(layer):
        day = first
        while day <= last:
            raw.append((wall_at(tz, day, 0), wall_at(tz, day, DAY), day))
            day += timedelta(days=1)
    elif layer.restrict_mode == 1:
        day = first
        while day <= last:
            for s, e in layer.periods:
                e_wall = e if e > s else e + DAY
                raw.append((wall_at(tz, day, s), wall_at(tz, day, e_wall), day))
            day += timedelta(days=1)
    else:
        week = first - timedelta(days=weekday_sunday0(first))
        while week <= last:
            for s, e in layer.periods:
                e_wall = e if e > s else e + WEEK
                raw.append((wall_at(tz, week, s), wall_at(tz, week, e_wall),
                            week + timedelta(days=s // DAY)))
            week += timedelta(days=7)
    pieces: list[tuple[int, int]] = []
    for s, e, starts_on in raw:
        if layer.weekdays and layer.mask_continuous:
            if weekday_sunday0(starts_on) not in layer.weekdays:
                continue
            pieces.append((s, e))
        elif layer.weekdays:
            pieces.extend(_cut_by_day_mask(layer.weekdays, tz, s, e))
        else:
            pieces.append((s, e))
    return _union([(max(s, start), min(e, end)) for s, e in pieces if s < end and e > start])


def _cut_by_day_mask(weekdays: frozenset[int], tz: ZoneInfo, s: int,
                     e: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    day = local_date(tz, s)
    cursor = s
    while cursor < e:
        next_midnight = wall_at(tz, day + timedelta(days=1), 0)
        if weekday_sunday0(day) in weekdays:
            out.append((cursor, min(e, next_midnight)))
        cursor = next_midnight
        day += timedelta(days=1)
    return out


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(i for i in intervals if i[0] < i[1]):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


# -- rotation cycles ----------------------------------------------------------------------


def _boundary(layer: Layer, tz: ZoneInfo, anchor: date, k: int) -> int:
    """The k-th handoff instant counted from the layer's first day (k may be negative)."""
    if layer.unit == "hour":
        return wall_at(tz, anchor, layer.handoff_s) + k * layer.value * 3600
    if layer.unit == "month":
        return wall_at(tz, add_months(anchor, k * layer.value), layer.handoff_s)
    days = layer.value * (7 if layer.unit == "week" else 1)
    return wall_at(tz, anchor + timedelta(days=k * days), layer.handoff_s)


def _k_at_or_before(layer: Layer, tz: ZoneInfo, anchor: date, at_s: int) -> int:
    """The largest k whose boundary is <= at_s."""
    if layer.unit == "hour":
        k = (at_s - wall_at(tz, anchor, layer.handoff_s)) // (layer.value * 3600)
    elif layer.unit == "month":
        k = months_between(anchor, local_date(tz, at_s)) // layer.value
    else:
        days = layer.value * (7 if layer.unit == "week" else 1)
        k = (local_date(tz, at_s) - anchor).days // days
    while _boundary(layer, tz, anchor, k) > at_s:
        k -= 1
    while _boundary(layer, tz, anchor, k + 1) <= at_s:
        k += 1
    return k


class _Cycles:
    """Cycle j of a rotation layer: j = 0 is [enable, b(k0 + 1)), where b(k0) is the first
    handoff at or after enable; cycle j >= 1 is [b(k0 + j), b(k0 + j + 1))."""

    def __init__(self, layer: Layer, tz: ZoneInfo) -> None:
        self.layer = layer
        self.tz = tz
        self.anchor = local_date(tz, layer.enable_s)
        k = _k_at_or_before(layer, tz, self.anchor, layer.enable_s)
        self.k0 = k if _boundary(layer, tz, self.anchor, k) == layer.enable_s else k + 1

    def bounds(self, j: int) -> tuple[int, int]:
        start = self.layer.enable_s if j == 0 else self.boundary(j)
        return start, self.boundary(j + 1)

    def boundary(self, j: int) -> int:
        return _boundary(self.layer, self.tz, self.anchor, self.k0 + j)

    def index_at(self, at_s: int) -> int:
        if at_s < self.boundary(1):
            return 0
        return _k_at_or_before(self.layer, self.tz, self.anchor, at_s) - self.k0


def _group_of_cycle(layer: Layer, tz: ZoneInfo, cycles: _Cycles, j: int) -> int:
    n = len(layer.groups)
    if not layer.fair:
        return j % n
    return _covered_cycles_before(layer, tz, cycles, j) % n


def _period(layer: Layer) -> int:
    """After cycle 0, whether a day or week cycle has coverage depends only on the wall-clock
    pattern it spans (restrictions and masks repeat every week), so it repeats every p
    cycles. Hour and month cycles drift against the week: no period (0)."""
    if layer.unit == "week":
        return 1
    if layer.unit == "day":
        return 1 if layer.value % 7 == 0 else 7
    return 0


def _covered_cycles_before(layer: Layer, tz: ZoneInfo, cycles: _Cycles, j: int) -> int:
    """How many of cycles 0 .. j-1 have any coverage (fair rotation). Counted by period for
    day and week cycles; otherwise by one sweep of the cycles against the coverage of their
    span, remembered on the layer so later questions only extend it."""
    known = layer._active_cycles
    period = _period(layer)
    need = min(j, 1 + period) if period else j
    if len(known) < need:
        first = len(known)
        lo, _ = cycles.bounds(first)
        _, hi = cycles.bounds(need - 1)
        covered = active_intervals(layer, tz, lo, hi)
        pos = 0
        for k in range(first, need):
            c_start, c_end = cycles.bounds(k)
            while pos < len(covered) and covered[pos][1] <= c_start:
                pos += 1
            known.append(pos < len(covered) and covered[pos][0] < c_end)
    if not period or j <= 1 + period:
        return sum(known[:j])
    pattern = known[1:1 + period]
    full, rest = divmod(j - 1, period)
    return int(known[0]) + full * sum(pattern) + sum(pattern[:rest])


def layer_shifts(layer: Layer, tz: ZoneInfo, start: int, end: int) -> list[Shift]:
    """The shifts of one layer inside [start, end), clipped to it, sorted, disjoint."""
    lo = max(start, layer.enable_s) if layer.mode == 0 else start
    hi = min(end, layer.expire_s) if layer.expire_s else end
    if lo >= hi or not layer.groups:
        return []
    if layer.mode == 1:
        return _override_shifts(layer, lo, hi)
    cycles = _Cycles(layer, tz)
    active = active_intervals(layer, tz, lo, hi)
    shifts: list[Shift] = []
    j = cycles.index_at(lo)
    pos = 0
    while True:
        c_start, c_end = cycles.bounds(j)
        if c_start >= hi:
            break
        group = -1
        while pos < len(active) and active[pos][0] < c_end:
            s, e = max(active[pos][0], c_start), min(active[pos][1], c_end)
            if s < e:
                if group < 0:
                    group = _group_of_cycle(layer, tz, cycles, j)
                _append(shifts, Shift(s, e, layer.index, group))
            if active[pos][1] <= c_end:
                pos += 1
            else:
                break
        j += 1
    if layer.days_off is not None:
        return _with_days_off(layer, layer.days_off, tz, shifts)
    return shifts


def _with_days_off(layer: Layer, days_off: Callable[[date], bool], tz: ZoneInfo,
                   shifts: list[Shift]) -> list[Shift]:
    """The shifts cut at the local midnights around days off, each piece on a day off given
    to the next group ("next") or dropped ("off")."""
    out: list[Shift] = []
    n = len(layer.groups)
    for shift in shifts:
        day = local_date(tz, shift.start)
        cursor = shift.start
        while cursor < shift.end:
            piece_end = min(shift.end, wall_at(tz, day + timedelta(days=1), 0))
            if not days_off(day):
                _append(out, Shift(cursor, piece_end, layer.index, shift.group))
            elif layer.holiday_mode == "next":
                _append(out, Shift(cursor, piece_end, layer.index, (shift.group + 1) % n))
            cursor = piece_end
            day += timedelta(days=1)
    return out


def _override_shifts(layer: Layer, lo: int, hi: int) -> list[Shift]:
    ranked = [Shift(max(g.start, lo), min(g.end, hi), layer.index, i)
              for i, g in enumerate(layer.groups) if g.end > g.start]
    return _stack([((i,), s) for i, s in enumerate(ranked) if s.start < s.end])


def _append(shifts: list[Shift], shift: Shift) -> None:
    """Append, merging with the previous shift when it is the same group, end to end."""
    if shifts and shifts[-1].end == shift.start and shifts[-1].group == shift.group \
            and shifts[-1].layer == shift.layer:
        shifts[-1] = Shift(shifts[-1].start, shift.end, shift.layer, shift.group)
    else:
        shifts.append(shift)


# -- stacking -----------------------------------------------------------------------------


def _stack(ranked: list[tuple[tuple[int, ...], Shift]]) -> list[Shift]:
    """The winning shift at each instant, where the higher rank wins: a sweep over the
    shifts' ends with a heap of the shifts covering the current instant."""
    if not ranked:
        return []
    points = sorted({p for _, s in ranked for p in (s.start, s.end)})
    by_start = sorted(range(len(ranked)), key=lambda i: ranked[i][1].start)
    heap: list[tuple[tuple[int, ...], int]] = []  # (negated rank, position)
    out: list[Shift] = []
    cursor = 0
    for a, b in itertools.pairwise(points):
        while cursor < len(by_start) and ranked[by_start[cursor]][1].start <= a:
            i = by_start[cursor]
            heapq.heappush(heap, (tuple(-x for x in ranked[i][0]), i))
            cursor += 1
        while heap and ranked[heap[0][1]][1].end <= a:
            heapq.heappop(heap)
        if heap:
            top = ranked[heap[0][1]][1]
            _append(out, Shift(a, b, top.layer, top.group))
    return out


@dataclass(frozen=True, slots=True)
class Timeline:
    layers: list[list[Shift]]  # per layer, in the schedule's order
    final: list[Shift]


def compute(layers: list[Layer], tz: ZoneInfo, start: int, end: int) -> Timeline:
    """Every layer's shifts and the final on-call timeline inside [start, end)."""
    per_layer = [layer_shifts(layer, tz, start, end) for layer in layers]
    ranked: list[tuple[tuple[int, ...], Shift]] = [
        (layer.priority, s) for layer, shifts in zip(layers, per_layer, strict=True)
        for s in shifts]
    return Timeline(per_layer, _stack(ranked))


def persons_at(layers: list[Layer], shift: Shift | None,
               role_ids: frozenset[int] | None = None) -> list[int]:
    """The persons of a shift's group, in order, for the given roles (None: every role)."""
    if shift is None:
        return []
    group = layers_by_index(layers)[shift.layer].groups[shift.group]
    seen: dict[int, None] = {}
    for slot in group.slots:
        if role_ids is None or slot.role_id in role_ids:
            seen.update(dict.fromkeys(slot.person_ids))
    return list(seen)


def layers_by_index(layers: list[Layer]) -> dict[int, Layer]:
    return {layer.index: layer for layer in layers}
