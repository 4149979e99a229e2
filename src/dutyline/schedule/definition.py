"""A schedule's layers: validation of what clients send (400 naming the field), the stored
normalized form (reference `ScheduleLayer`), and its compiled form for timeline.py."""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator, Mapping
from datetime import date
from typing import cast

import msgspec

from dutyline.api import errors
from dutyline.platform.calendar.service import CalendarDays
from dutyline.schedule import timeline
from dutyline.schedule.schemas import (
    LayerIn,
    ScheduleDayMask,
    ScheduleGroup,
    ScheduleLayer,
    ScheduleMember,
    ScheduleRestrictPeriod,
)

MAX_LAYERS = 20
MAX_GROUPS = 100
MAX_SLOTS = 20
MAX_PERSONS = 100
MAX_PERIODS = 50
NAME_MAX = 40
# Times are Unix seconds between 1970 and 2100: past that, calendar arithmetic leaves
# the range the standard library handles and nobody schedules shifts.
TIME_MAX = 4_102_444_800
decode_layers = msgspec.json.Decoder(list[ScheduleLayer]).decode
MAX_VALUE = {"hour": 8760, "day": 365, "week": 52, "month": 12}


def _check_time(field: str, value: int) -> None:
    if not 0 <= value < TIME_MAX:
        raise errors.invalid(field, "must be Unix seconds between 1970 and 2100")


def _unit_and_value(f: str, layer: LayerIn) -> tuple[str, int]:
    unit, value = layer.rotation_unit, layer.rotation_value
    if unit and unit not in MAX_VALUE:
        raise errors.invalid(f + "rotation_unit", "must be one of hour, day, week, month")
    if not unit:
        duration = layer.rotation_duration
        if duration < 0:
            raise errors.invalid(f + "rotation_duration", "must not be negative")
        if duration == 0:
            unit, per = "day", timeline.DAY
        else:
            fits = [(u, p) for u, p in (("week", timeline.WEEK), ("day", timeline.DAY),
                                        ("hour", 3600)) if duration % p == 0]
            if not fits:
                raise errors.invalid(f + "rotation_duration", "must be a whole number of hours")
            unit, per = fits[0]
        value = value or max(1, duration // per)
    value = value or 1
    if not 1 <= value <= MAX_VALUE[unit]:
        raise errors.invalid(f + "rotation_value", f"must be 1 to {MAX_VALUE[unit]} for {unit}")
    return unit, value


def _periods(f: str, layer: LayerIn) -> list[ScheduleRestrictPeriod]:
    if layer.restrict_mode not in (0, 1, 2):
        raise errors.invalid(f + "restrict_mode", "must be 0 (none), 1 (day) or 2 (week)")
    if layer.restrict_mode == 0:
        return []
    periods = list(layer.restrict_periods or [])
    if not periods and layer.restrict_start != layer.restrict_end:
        periods = [ScheduleRestrictPeriod(layer.restrict_start, layer.restrict_end)]
    if not periods:
        raise errors.invalid(f + "restrict_periods", "is required when restrict_mode is 1 or 2")
    if len(periods) > MAX_PERIODS:
        raise errors.invalid(f + "restrict_periods", f"has more than {MAX_PERIODS} items")
    span = timeline.DAY if layer.restrict_mode == 1 else timeline.WEEK
    for i, p in enumerate(periods):
        for name, value in (("restrict_start", p.restrict_start),
                            ("restrict_end", p.restrict_end)):
            if not 0 <= value <= span:
                raise errors.invalid(f"{f}restrict_periods[{i}].{name}",
                                     f"must be 0 to {span} seconds")
        if p.restrict_start % span == p.restrict_end % span:
            raise errors.invalid(f"{f}restrict_periods[{i}].restrict_end",
                                 "must differ from restrict_start")
    return periods


def _groups(f: str, layer: LayerIn, mode: int) -> list[ScheduleGroup]:
    groups = layer.groups or []
    if not groups:
        raise errors.invalid(f + "groups", "needs at least one group")
    if len(groups) > MAX_GROUPS:
        raise errors.invalid(f + "groups", f"has more than {MAX_GROUPS} groups")
    out: list[ScheduleGroup] = []
    for j, g in enumerate(groups):
        gf = f"{f}groups[{j}]."
        default = string.ascii_uppercase[j % 26] + (str(j // 26) if j >= 26 else "")
        name = (g.group_name or g.name or default).strip()
        if len(name) > NAME_MAX:
            raise errors.invalid(gf + "group_name", f"is longer than {NAME_MAX} characters")
        if not g.members:
            raise errors.invalid(gf + "members", "needs at least one member")
        if len(g.members) > MAX_SLOTS:
            raise errors.invalid(gf + "members", f"has more than {MAX_SLOTS} items")
        slots: list[ScheduleMember] = []
        for k, m in enumerate(g.members):
            if m.role_id < 0:
                raise errors.invalid(f"{gf}members[{k}].role_id", "must not be negative")
            if not m.person_ids:
                raise errors.invalid(f"{gf}members[{k}].person_ids", "is required")
            if len(m.person_ids) > MAX_PERSONS:
                raise errors.invalid(f"{gf}members[{k}].person_ids",
                                     f"has more than {MAX_PERSONS} persons")
            slots.append(ScheduleMember(m.role_id, list(dict.fromkeys(m.person_ids))))
        start, end = (g.start, g.end) if mode == 1 else (0, 0)
        if mode == 1:
            _check_time(gf + "start", start)
            _check_time(gf + "end", end)
            if end <= start:
                raise errors.invalid(gf + "end", "must be after start in an override layer")
        out.append(ScheduleGroup(group_name=name, name=name, members=slots, start=start,
                                 end=end))
    return out


def normalize_layers(
    layers: list[LayerIn], *, account_id: int, schedule_id: int, person_id: int, now_s: int,
) -> list[ScheduleLayer]:
    """The stored form of the layers a client sent; raises InvalidParameter naming the
    first wrong field (`layers[1].groups[0].members[0].person_ids`)."""
    if len(layers) > MAX_LAYERS:
        raise errors.invalid("layers", f"has more than {MAX_LAYERS} layers")
    out: list[ScheduleLayer] = []
    for i, layer in enumerate(layers):
        f = f"layers[{i}]."
        if layer.mode not in (0, 1):
            raise errors.invalid(f + "mode", "must be 0 (rotation) or 1 (override)")
        name = (layer.layer_name or layer.name or f"Layer {i + 1}").strip()
        if len(name) > NAME_MAX:
            raise errors.invalid(f + "layer_name", f"is longer than {NAME_MAX} characters")
        if layer.hidden not in (0, 1):
            raise errors.invalid(f + "hidden", "must be 0 or 1")
        unit, value = _unit_and_value(f, layer)
        cycle = value * timeline.NOMINAL_SECONDS[unit]
        handoff_limit = {"hour": timeline.DAY, "month": 28 * timeline.DAY}.get(unit, cycle)
        if not 0 <= layer.handoff_time < handoff_limit:
            raise errors.invalid(f + "handoff_time", f"must be 0 to {handoff_limit - 1} seconds")
        enable = layer.enable_time or layer.layer_start or 0
        if layer.mode == 0 and not enable:
            enable = now_s
        _check_time(f + "enable_time", enable)
        expire = layer.expire_time or layer.layer_end or 0
        _check_time(f + "expire_time", expire)
        if expire and expire <= enable:
            raise errors.invalid(f + "expire_time", "must be after enable_time")
        if layer.fair_rotation and unit not in ("day", "week") and layer.mode == 0:
            # Fair turns are counted by the weekly pattern a day or week cycle repeats; hour
            # and month cycles drift against the week and would need counting every cycle
            # since the layer began.
            raise errors.invalid(f + "fair_rotation", "needs a day or week rotation_unit")
        cal_id, holiday_mode = _holidays(f, layer)
        periods = _periods(f, layer)
        repeat = sorted(set(layer.day_mask.repeat)) if layer.day_mask else []
        if any(not 0 <= d <= 6 for d in repeat):
            raise errors.invalid(f + "day_mask.repeat", "days are 0 (Sunday) to 6 (Saturday)")
        out.append(ScheduleLayer(
            account_id=account_id, name=name, schedule_id=schedule_id, hidden=layer.hidden,
            mode=layer.mode, weight=layer.weight, groups=_groups(f, layer, layer.mode),
            rotation_duration=cycle, handoff_time=layer.handoff_time, enable_time=enable,
            expire_time=expire, restrict_mode=layer.restrict_mode,
            restrict_start=periods[0].restrict_start if periods else 0,
            restrict_end=periods[0].restrict_end if periods else 0,
            restrict_periods=periods, day_mask=ScheduleDayMask(repeat), create_at=now_s,
            create_by=person_id, update_at=now_s, update_by=person_id, layer_name=name,
            fair_rotation=layer.fair_rotation, layer_start=enable, layer_end=expire or None,
            rotation_unit=unit, rotation_value=value,
            mask_continuous_enabled=layer.mask_continuous_enabled,
            cal_id=cal_id, holiday_mode=holiday_mode,
        ))
    return out


def _holidays(f: str, layer: LayerIn) -> tuple[str, str]:
    """(cal_id, holiday_mode) as stored: both "" without a calendar, the mode "next" when a
    calendar is named without one. Whether the calendar is the account's is checked by the
    service."""
    cal_id, mode = layer.cal_id.strip(), layer.holiday_mode
    if mode and mode not in timeline.HOLIDAY_MODES:
        raise errors.invalid(f + "holiday_mode", "must be next or off")
    if not cal_id:
        if mode:
            raise errors.invalid(f + "cal_id", "is required with holiday_mode")
        return "", ""
    if layer.mode != 0:
        raise errors.invalid(f + "cal_id", "applies to rotation layers (mode 0) only")
    return cal_id, mode or "next"


def calendar_fields(layers: list[ScheduleLayer]) -> Iterator[tuple[str, str]]:
    """(field path, cal_id) of every calendar the layers follow."""
    for i, layer in enumerate(layers):
        if layer.cal_id:
            yield f"layers[{i}].cal_id", layer.cal_id


def person_fields(layers: list[ScheduleLayer]) -> Iterator[tuple[str, int]]:
    """(field path, person id) of every person the layers name, for membership checks."""
    for i, layer in enumerate(layers):
        for j, group in enumerate(layer.groups):
            for k, slot in enumerate(group.members):
                for person_id in slot.person_ids:
                    yield f"layers[{i}].groups[{j}].members[{k}].person_ids", person_id


def compile_layers(layers: list[ScheduleLayer],
                   calendars: Mapping[str, CalendarDays] | None = None) -> list[timeline.Layer]:
    """`calendars`: what the calendars the layers follow say (a calendar missing from it,
    which validation and the refused delete keep from happening, counts no day off)."""
    found = calendars or {}

    def days_off(layer: ScheduleLayer) -> Callable[[date], bool] | None:
        days = found.get(layer.cal_id) if layer.cal_id and layer.mode == 0 else None
        return None if days is None else days.is_off

    return [
        timeline.Layer(
            index=i,
            groups=tuple(
                timeline.Group(g.group_name, tuple(
                    timeline.Slot(m.role_id, tuple(m.person_ids)) for m in g.members),
                    g.start, g.end)
                for g in layer.groups),
            mode=layer.mode, weight=layer.weight,
            unit=cast(timeline.Unit, layer.rotation_unit), value=layer.rotation_value,
            handoff_s=layer.handoff_time, enable_s=layer.enable_time,
            expire_s=layer.expire_time if layer.mode == 0 else 0,
            restrict_mode=layer.restrict_mode,
            periods=tuple((p.restrict_start, p.restrict_end) for p in layer.restrict_periods),
            weekdays=frozenset(layer.day_mask.repeat), fair=layer.fair_rotation,
            mask_continuous=layer.mask_continuous_enabled,
            days_off=days_off(layer),
            holiday_mode=cast(timeline.HolidayMode, layer.holiday_mode or "next"),
        )
        for i, layer in enumerate(layers)
    ]
