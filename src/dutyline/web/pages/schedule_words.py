"""A rotation in words ("every 1 week on Monday at 09:00, Alice then Bob, from 13 April, in
Europe/Berlin") and the schedule service's own layer record (`LayerIn`: seconds after a
cycle's start, Unix seconds), both ways. Pure functions: no I/O.

    layer = layer_in(words, zone("Europe/Berlin"), "layers[0].")

The words mean:
- the rotation hands off every `every` `unit`s at `at` wall-clock time in the zone, a weekly
  one on `weekday`; a monthly one on the start date's day of the month;
- its first hand-off is the first such moment on or after the start date's midnight (so the
  first turn is a whole one), and it stops at 00:00 of the end date when one is given;
- `people` take turns in their order, one person a turn;
- `cal_id`: the service calendar whose days off change the layer (`holiday_mode`: "next"
  gives a day off to the next person, "off" leaves it to the layers below).

`words_of` reads a stored layer back into words, or None when words cannot say it (a layer
made through the API with restrictions, roles, several persons a turn, an override layer):
the edit form keeps such a layer as it is."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import msgspec

from dutyline.api import errors
from dutyline.schedule.service import (
    LayerIn,
    ScheduleGroup,
    ScheduleLayer,
    ScheduleMember,
    local_datetime,
    to_instant,
    wall_at,
)

DAY = 86_400
UNITS = ("hour", "day", "week", "month")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
HOLIDAY_MODES = ("next", "off")
_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


class LayerWords(msgspec.Struct):
    """One layer of the form. `kept`: the position of a stored layer the form keeps as it
    is (one words cannot say); the other fields are then unused."""

    layer_name: str = ""
    every: str = "1"
    unit: str = "week"
    weekday: str = "monday"
    at: str = "09:00"
    people: list[int] = msgspec.field(default_factory=list)
    start: str = ""
    end: str = ""
    cal_id: str = ""
    holiday_mode: str = ""
    kept: int | None = None


class ScheduleWords(msgspec.Struct):
    """The whole form: the schedule's fields and its layers in words."""

    schedule_name: str = ""
    description: str = ""
    team_id: int = 0
    time_zone: str = ""
    layers: list[LayerWords] = msgspec.field(default_factory=list)


def clock_time(text: str, field: str) -> int:
    """Seconds after midnight of "09:00" (or "9:00")."""
    found = _TIME.match(text.strip())
    if found is None:
        raise errors.invalid(field, "must be a time of day such as 09:00")
    return int(found[1]) * 3600 + int(found[2]) * 60


def calendar_date(text: str, field: str, *, required: bool) -> date | None:
    text = text.strip()
    if not text:
        if required:
            raise errors.invalid(field, "is required")
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise errors.invalid(field, "must be a date such as 2026-04-13") from None


def layer_in(words: LayerWords, tz: ZoneInfo, prefix: str) -> LayerIn:
    """The service's record of a rotation in words; raises InvalidParameter naming the form's
    field (`prefix` + "at", "start"...) in a person's words."""
    if words.unit not in UNITS:
        raise errors.invalid(prefix + "unit", "choose hours, days, weeks or months")
    every = words.every.strip()
    if not every.isdigit() or int(every) < 1:
        raise errors.invalid(prefix + "every", "must be a whole number, 1 or more")
    at = clock_time(words.at, prefix + "at")
    start = calendar_date(words.start, prefix + "start", required=True)
    assert start is not None
    end = calendar_date(words.end, prefix + "end", required=False)
    if not words.people:
        raise errors.invalid(prefix + "people", "choose at least one person")
    first = start
    if words.unit == "week":
        if words.weekday not in WEEKDAYS:
            raise errors.invalid(prefix + "weekday", "choose a day of the week")
        first = start + timedelta(days=(WEEKDAYS.index(words.weekday) - start.weekday()) % 7)
    enable = wall_at(tz, first, at)
    expire = wall_at(tz, end, 0) if end is not None else 0
    if end is not None and expire <= enable:
        raise errors.invalid(prefix + "end", "must be after the first hand-off, "
                             f"{first.isoformat()} at {words.at.strip()}")
    if words.holiday_mode and words.holiday_mode not in HOLIDAY_MODES:
        raise errors.invalid(prefix + "holiday_mode", "choose what a day off does")
    return LayerIn(
        layer_name=words.layer_name, mode=0,
        groups=[ScheduleGroup(members=[ScheduleMember(person_ids=[person])])
                for person in words.people],
        rotation_unit=words.unit, rotation_value=int(every), handoff_time=at,
        enable_time=enable, expire_time=expire, cal_id=words.cal_id,
        holiday_mode=words.holiday_mode if words.cal_id else "")


def _first_hand_off(layer: ScheduleLayer, tz: ZoneInfo) -> tuple[date, int]:
    """(its local day, the instant) of the layer's first hand-off at or after its start: the
    start itself for a layer the words made. Hour and month rotations: the start."""
    started = local_datetime(tz, layer.enable_time).date()
    if layer.rotation_unit not in ("day", "week"):
        return started, layer.enable_time
    days = layer.rotation_value * (7 if layer.rotation_unit == "week" else 1)
    at = wall_at(tz, started, layer.handoff_time)
    if at < layer.enable_time:
        started += timedelta(days=days)
        at = wall_at(tz, started, layer.handoff_time)
    return started + timedelta(days=layer.handoff_time // DAY), at


def words_of(layer: ScheduleLayer, tz: ZoneInfo, now_s: int | None = None) -> LayerWords | None:
    """The words of a stored layer, or None when they would not give the same turns back.

    A layer started between two hand-offs (through the API) reads as starting at its first
    hand-off once that is past (`now_s`): from then on its turns are the same."""
    if (layer.mode != 0 or layer.restrict_mode or layer.day_mask.repeat or layer.fair_rotation
            or layer.rotation_unit not in UNITS):
        return None
    people: list[int] = []
    for group in layer.groups:
        if len(group.members) != 1 or group.members[0].role_id \
                or len(group.members[0].person_ids) != 1:
            return None
        people.append(group.members[0].person_ids[0])
    first_day, first = _first_hand_off(layer, tz)
    if first != layer.enable_time and (now_s is None or first > now_s):
        return None
    at = layer.handoff_time % DAY if layer.rotation_unit != "hour" else layer.handoff_time
    end = ""
    if layer.expire_time:
        end = local_datetime(tz, layer.expire_time).date().isoformat()
    words = LayerWords(
        layer_name=layer.layer_name, every=str(layer.rotation_value), unit=layer.rotation_unit,
        weekday=WEEKDAYS[first_day.weekday()], at=f"{at // 3600:02}:{at % 3600 // 60:02}",
        people=people, start=first_day.isoformat(), end=end, cal_id=layer.cal_id,
        holiday_mode=layer.holiday_mode)
    try:
        again = layer_in(words, tz, "")
    except errors.InvalidParameter:
        return None
    if (again.enable_time, again.expire_time, again.rotation_unit, again.rotation_value) != (
            first, layer.expire_time, layer.rotation_unit, layer.rotation_value):
        return None
    if layer.rotation_unit in ("hour", "month") and again.handoff_time != layer.handoff_time:
        return None
    return words


def stored_as_input(layer: ScheduleLayer) -> LayerIn:
    """A stored layer as the service takes it back unchanged."""
    return msgspec.convert(msgspec.to_builtins(layer), LayerIn)


def local_instant(text: str, tz: ZoneInfo, field: str) -> int:
    """Unix seconds of a form's "2026-04-13T09:00" (a datetime-local input) in `tz`."""
    try:
        wall = datetime.fromisoformat(text.strip())
    except ValueError:
        raise errors.invalid(field, "must be a date and time such as 2026-04-13 09:00") \
            from None
    if wall.tzinfo is not None:
        raise errors.invalid(field, "must be a date and time such as 2026-04-13 09:00")
    return to_instant(tz, wall.replace(second=0, microsecond=0))


def local_input(at_s: int, tz: ZoneInfo) -> str:
    """The value of a datetime-local input for an instant."""
    return local_datetime(tz, at_s).strftime("%Y-%m-%dT%H:%M")


# The service's field names of a layer, as the form's words name them.
_FORM_FIELD = (
    (re.compile(r"^(layers\[\d+\]\.)groups.*$"), r"\1people"),
    (re.compile(r"^(layers\[\d+\]\.)(enable_time|layer_start)$"), r"\1start"),
    (re.compile(r"^(layers\[\d+\]\.)(expire_time|layer_end)$"), r"\1end"),
    (re.compile(r"^(layers\[\d+\]\.)(rotation_value|rotation_duration)$"), r"\1every"),
    (re.compile(r"^(layers\[\d+\]\.)rotation_unit$"), r"\1unit"),
    (re.compile(r"^(layers\[\d+\]\.)handoff_time$"), r"\1at"),
    (re.compile(r"^(layers\[\d+\]\.)(name)$"), r"\1layer_name"),
)


def form_field(field: str) -> str:
    """The form's field for a field the schedule service named."""
    for pattern, replacement in _FORM_FIELD:
        if pattern.match(field):
            return pattern.sub(replacement, field)
    return field
