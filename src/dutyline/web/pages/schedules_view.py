"""What a schedule's page shows, made from the schedule service's record: each layer's turns
and the final result over a window, with names, whether a turn runs past the window (it has
no end the page can name), and whether the reader may take it. Pure functions: no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from dutyline.schedule.service import (
    ScheduleCalculatedSchedule,
    ScheduleGroup,
    ScheduleItem,
    ScheduleLayer,
)
from dutyline.web.pages.schedule_words import LayerWords, local_input, words_of


def person_ids(group: ScheduleGroup) -> list[int]:
    return list(dict.fromkeys(p for slot in group.members for p in slot.person_ids))


def names_of(ids: Sequence[int], names: Mapping[int, str]) -> list[str]:
    return [names.get(p, "A former member") for p in dict.fromkeys(ids)]


@dataclass(frozen=True)
class Shift:
    start: int
    end: int
    names: list[str]
    person_ids: list[int]
    open_start: bool  # began before the window: "since"
    open_end: bool  # runs past the window: no end within it
    mine: bool
    takes: tuple[int, int]  # the part the reader would take: from now (or its start) on


@dataclass(frozen=True)
class LayerRow:
    name: str
    override: bool
    words: LayerWords | None  # the rotation in words, None when words cannot say it
    people: list[str]  # who takes turns, in order (with `words`)
    holidays: str  # the calendar the layer follows, or ""
    holiday_mode: str
    shifts: list[Shift]


@dataclass(frozen=True)
class Override:
    layer: int
    group: int
    name: str
    names: list[str]
    start: int
    end: int


def shifts(calculated: Sequence[ScheduleCalculatedSchedule], names: Mapping[int, str],
           me: int, *, start: int, end: int, now: int) -> list[Shift]:
    out = []
    for s in calculated:
        ids = person_ids(s.group)
        out.append(Shift(s.start, s.end, names_of(ids, names), ids, s.start <= start,
                         s.end >= end, me in ids, (max(s.start, now), s.end)))
    return out


def holiday_calendar(layer: ScheduleLayer, calendars: Mapping[str, str]) -> str:
    """The name of the calendar whose days off change the layer, or ""."""
    return calendars.get(layer.cal_id, layer.cal_id) if layer.cal_id else ""


def layer_rows(item: ScheduleItem, names: Mapping[int, str], me: int, tz: ZoneInfo,
               calendars: Mapping[str, str], *, now: int) -> list[LayerRow]:
    rows = []
    for layer, computed in zip(item.layers, item.schedule_layers, strict=True):
        if layer.hidden:
            continue
        words = words_of(layer, tz, now)
        rows.append(LayerRow(
            layer.layer_name, layer.mode == 1, words,
            names_of(words.people, names) if words else [],
            holiday_calendar(layer, calendars), layer.holiday_mode,
            shifts(computed.schedules, names, me, start=item.start, end=item.end, now=now)))
    return rows


def overrides(item: ScheduleItem, names: Mapping[int, str], *, now: int) -> list[Override]:
    """The override windows that have not ended, soonest first."""
    out = [Override(i, j, g.group_name, names_of(person_ids(g), names), g.start, g.end)
           for i, layer in enumerate(item.layers) if layer.mode == 1
           for j, g in enumerate(layer.groups) if g.end > now]
    return sorted(out, key=lambda o: (o.start, o.end))


def default_window(now: int, tz: ZoneInfo) -> tuple[str, str]:
    """The override form's first values: the next full hour, for a day."""
    start = now - now % 3600 + 3600
    return local_input(start, tz), local_input(start + 86_400, tz)

