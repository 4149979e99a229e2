"""The one row -> record mapper of schedules (reference `ScheduleItem`), with the computed
timeline of a window and who is on call now and next.

Who is on call is decided as the escalation engine decides it: members removed from the
account are never on call, so they are left out of `cur_oncall` / `next_oncall`, and a shift
that names nobody else is nobody's (null now, or the next shift that names a live member).
The timelines show the definition as written, removed members included."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import msgspec
from sqlalchemy.engine import Row

from dutyline.platform.calendar.service import CalendarDays
from dutyline.schedule import definition, timeline
from dutyline.schedule.localtime import zone
from dutyline.schedule.schemas import (
    ScheduleCalculatedLayer,
    ScheduleCalculatedSchedule,
    ScheduleGroup,
    ScheduleItem,
    ScheduleLayer,
    ScheduleMember,
    ScheduleNotify,
    ScheduleOncallGroup,
)

MASK = "******"
# cur_oncall / next_oncall look this far ahead.
ONCALL_HORIZON_S = 45 * 86_400


def _group(layer: ScheduleLayer, shift: timeline.Shift) -> ScheduleGroup:
    group = layer.groups[shift.group]
    return ScheduleGroup(group_name=group.group_name, name=group.name, members=group.members,
                         start=shift.start, end=shift.end)


def _calculated(layers: list[ScheduleLayer], shifts: list[timeline.Shift]
                ) -> list[ScheduleCalculatedSchedule]:
    return [ScheduleCalculatedSchedule(start=s.start, end=s.end,
                                       group=_group(layers[s.layer], s), index=s.layer)
            for s in shifts]


def _names(layers: list[ScheduleLayer], shift: timeline.Shift) -> set[int]:
    group = layers[shift.layer].groups[shift.group]
    return {p for slot in group.members for p in slot.person_ids}


def _live_group(group: ScheduleGroup, live: AbstractSet[int]) -> ScheduleGroup:
    slots = [ScheduleMember(role_id=slot.role_id,
                            person_ids=[p for p in slot.person_ids if p in live])
             for slot in group.members]
    return msgspec.structs.replace(group, members=[slot for slot in slots if slot.person_ids])


def _masked(notify: ScheduleNotify) -> ScheduleNotify:
    hooks = []
    for hook in notify.webhooks:
        settings = msgspec.structs.replace(hook.settings)
        for name in ("token", "verify_token", "sign_secret"):
            if getattr(settings, name):
                setattr(settings, name, MASK)
        hooks.append(msgspec.structs.replace(hook, settings=settings))
    return msgspec.structs.replace(notify, webhooks=hooks)


def schedule_item(
    *, layers: list[ScheduleLayer], calendars: Mapping[str, CalendarDays], time_zone: str,
    window: tuple[int, int] | None, now_s: int,
    account_id: int, stored: Row[Any] | None, notify: ScheduleNotify, live: AbstractSet[int],
    only_person: int | None = None,
) -> ScheduleItem:
    """`stored` None: a preview (identity fields null). `live`: the persons the layers name
    who are still members (who may be on call). `only_person`: keep only the shifts naming
    that person (/schedule/self). `calendars`: what the calendars the layers follow say."""
    compiled = definition.compile_layers(layers, calendars)
    tz = zone(time_zone)
    schedule_layers: list[ScheduleCalculatedLayer] = []
    final: list[ScheduleCalculatedSchedule] = []
    if window is not None:
        computed = timeline.compute(compiled, tz, *window)

        def keep(shifts: list[timeline.Shift]) -> list[timeline.Shift]:
            if only_person is None:
                return shifts
            return [s for s in shifts if only_person in _names(layers, s)]

        schedule_layers = [
            ScheduleCalculatedLayer(layer_name=layer.layer_name, name=layer.name,
                                    mode=layer.mode, schedules=_calculated(layers, keep(shifts)))
            for layer, shifts in zip(layers, computed.layers, strict=True)]
        final = _calculated(layers, keep(computed.final))
    ahead: list[timeline.Shift] = []
    for horizon in (2 * 86_400, ONCALL_HORIZON_S):  # most schedules hand off within 2 days
        ahead = [shift for shift in timeline.compute(compiled, tz, now_s, now_s + horizon).final
                 if _names(layers, shift) & live]
        if len(ahead) >= 2:
            break
    current = ahead[0] if ahead and ahead[0].start <= now_s else None
    upcoming = ahead[1 if current else 0] if len(ahead) > (1 if current else 0) else None
    update_at = stored.updated_at if stored is not None else 0

    def oncall(shift: timeline.Shift | None) -> ScheduleOncallGroup | None:
        if shift is None:
            return None
        return ScheduleOncallGroup(start=shift.start, end=shift.end,
                                   group=_live_group(_group(layers[shift.layer], shift), live),
                                   update_at=update_at,
                                   weight=layers[shift.layer].weight, index=shift.layer)

    start, end = window or (0, 0)
    final_layer = ScheduleCalculatedLayer(layer_name="", name="", mode=0, schedules=final)
    s = stored
    return ScheduleItem(
        id=s.schedule_id if s is not None else None,
        name=s.schedule_name if s is not None else None,
        account_id=account_id,
        group_id=s.team_id if s is not None else None,
        disabled=0 if s is not None else None,
        create_at=s.created_at if s is not None else 0,
        create_by=s.created_by if s is not None else 0,
        update_at=update_at,
        update_by=s.updated_by if s is not None else 0,
        layers=layers,
        schedule_layers=schedule_layers,
        final_schedule=final_layer,
        start=start,
        end=end,
        notify=_masked(notify),
        schedule_id=s.schedule_id if s is not None else 0,
        schedule_name=s.schedule_name if s is not None else None,
        team_id=s.team_id if s is not None else None,
        description=s.description if s is not None else None,
        layer_schedules=schedule_layers,
        status=0 if s is not None else None,
        cur_oncall=oncall(current),
        next_oncall=oncall(upcoming),
        time_zone=time_zone,
    )
