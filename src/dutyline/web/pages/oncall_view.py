"""What the "On call" page shows, made from what the services answered: times in the
person's zone, turns of schedules, the person's shifts cut into days, and whom each layer of
a rule pages. Pure functions: no I/O, so the page's rules are tested without a database."""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from dutyline.schedule.service import (
    ONCALL_HORIZON_S,
    ScheduleGroup,
    ScheduleItem,
    ScheduleOncallGroup,
)


@dataclass(frozen=True)
class Moment:
    iso: str  # for <time datetime>, with the offset, so assistive tools read it exactly
    label: str


def moment(at_s: int, tz: zoneinfo.ZoneInfo) -> Moment:
    when = datetime.fromtimestamp(at_s, tz)
    return Moment(when.isoformat(), f"{when:%a} {when.day} {when:%b}, {when:%H:%M}")


class Names:
    """Display names of persons; the signed-in person is marked."""

    def __init__(self, names: Mapping[int, str], me: int) -> None:
        self._names = names
        self._me = me

    def of(self, person_ids: Iterable[int]) -> list[str]:
        return [self._names[pid] + (" (you)" if pid == self._me else "")
                for pid in dict.fromkeys(person_ids) if pid in self._names]


def group_person_ids(group: ScheduleGroup) -> list[int]:
    return list(dict.fromkeys(p for slot in group.members for p in slot.person_ids))


# --- who holds each schedule ---------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    names: list[str]
    start: Moment
    end: Moment
    # The turn runs past what the service looks ahead (45 days): its end is the end of that
    # computation, not of the turn, so it is shown as having none (and no next turn).
    open_ended: bool = False


def open_ended(held: ScheduleOncallGroup, now_s: int) -> bool:
    return held.end >= now_s + ONCALL_HORIZON_S


@dataclass(frozen=True)
class ScheduleRow:
    schedule_id: int
    name: str
    now: Turn | None
    next: Turn | None


def turn(held: ScheduleOncallGroup | None, names: Names,
         tz: zoneinfo.ZoneInfo, now_s: int | None = None) -> Turn | None:
    """`now_s`: when given, a turn running past the service's look-ahead is open-ended."""
    if held is None:
        return None
    return Turn(names.of(group_person_ids(held.group)), moment(held.start, tz),
                moment(held.end, tz), now_s is not None and open_ended(held, now_s))


def schedule_rows(items: Sequence[ScheduleItem], names: Names,
                  tz: zoneinfo.ZoneInfo, now_s: int) -> list[ScheduleRow]:
    rows = [ScheduleRow(item.schedule_id, item.schedule_name or "",
                        turn(item.cur_oncall, names, tz, now_s),
                        turn(item.next_oncall, names, tz, now_s))
            for item in items]
    return sorted(rows, key=lambda r: (r.name.casefold(), r.schedule_id))


def person_ids_of_turns(items: Sequence[ScheduleItem]) -> set[int]:
    return {p for item in items for held in (item.cur_oncall, item.next_oncall)
            if held is not None for p in group_person_ids(held.group)}


# --- the person's own shifts, by day ----------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """The part of one shift inside one day."""

    start_s: int
    schedule_name: str
    span: str  # "All day", "09:00 to 24:00", "Now to 17:00"


@dataclass
class Day:
    iso: str
    label: str
    pieces: list[Piece] = field(default_factory=list)


def _midnight(day: date, tz: zoneinfo.ZoneInfo) -> int:
    return int(datetime.combine(day, time(0), tzinfo=tz).timestamp())


def _hhmm(at_s: int, tz: zoneinfo.ZoneInfo) -> str:
    return f"{datetime.fromtimestamp(at_s, tz):%H:%M}"


def my_days(items: Sequence[ScheduleItem], person_id: int, tz: zoneinfo.ZoneInfo, *,
            now_s: int, end_s: int) -> list[Day]:
    """The days of [now_s, end_s) on which the person is on call, each with the parts of
    their shifts that fall in it (a week-long shift shows on every day of the week), in the
    person's zone."""
    days: dict[date, Day] = {}
    for item in items:
        for shift in item.final_schedule.schedules:
            if person_id not in group_person_ids(shift.group):
                continue
            start, end = max(shift.start, now_s), min(shift.end, end_s)
            day = datetime.fromtimestamp(start, tz).date()
            while start < end:
                begins, ends = _midnight(day, tz), _midnight(day + timedelta(days=1), tz)
                piece_end = min(end, ends)
                if start == begins and piece_end == ends:
                    span = "All day"
                else:
                    first = "Now" if start == now_s else _hhmm(start, tz)
                    last = "24:00" if piece_end == ends else _hhmm(piece_end, tz)
                    span = f"{first} to {last}"
                bucket = days.setdefault(day, Day(day.isoformat(),
                                                  f"{day:%A} {day.day} {day:%B}"))
                bucket.pieces.append(Piece(start, item.schedule_name or "", span))
                start, day = piece_end, day + timedelta(days=1)
    for bucket in days.values():
        bucket.pieces.sort(key=lambda p: (p.start_s, p.schedule_name.casefold()))
    return [days[d] for d in sorted(days)]


# --- whom each layer of a rule pages ----------------------------------------------------------


@dataclass(frozen=True)
class Target:
    kind: str  # "Person", "Team", "Schedule", "E-mail", "Chat"
    label: str
    names: list[str] | None = None  # who it reaches now; None: the label says it all
    note: str = ""


@dataclass(frozen=True)
class RuleRow:
    rule_name: str
    channel_name: str
    enabled: bool
    steps: list[list[Target]]  # whom each layer would page now, in order
    path: str = ""  # the rule's page


def layer_targets(layers: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(layer.get("target") or {}) for layer in layers]


def schedule_roles(target: Mapping[str, Any]) -> dict[int, tuple[int, ...]]:
    return {int(sid): tuple(sorted(roles or ()))
            for sid, roles in (target.get("schedule_to_role_ids") or {}).items()}


@dataclass(frozen=True)
class Resolved:
    """What the services said about the people, teams and schedules rules name."""

    names: Names
    team_names: Mapping[int, str]
    team_members: Mapping[int, list[int]]
    schedule_names: Mapping[int, str]
    # (schedule_id, role ids) -> persons on call now; a schedule that no longer exists is absent
    on_call: Mapping[tuple[int, tuple[int, ...]], list[int]]
    # Members removed from the account, whom a rule may still name: the engine skips them.
    removed: frozenset[int]


def targets(target: Mapping[str, Any], seen: Resolved) -> list[Target]:
    out: list[Target] = []
    named = (int(p) for p in target.get("person_ids") or ())
    for name in seen.names.of(p for p in named if p not in seen.removed):
        out.append(Target("Person", name))
    for tid in target.get("team_ids") or ():
        team = seen.team_names.get(int(tid))
        if team is None:
            out.append(Target("Team", "A team that no longer exists", []))
        else:
            out.append(Target("Team", team, seen.names.of(seen.team_members.get(int(tid), []))))
    for sid, roles in schedule_roles(target).items():
        persons = seen.on_call.get((sid, roles))
        if persons is None:
            out.append(Target("Schedule", "A schedule that no longer exists", []))
            continue
        label = seen.schedule_names.get(sid, "A schedule")
        note = "some of its roles" if roles else ""
        out.append(Target("Schedule", label, seen.names.of(persons), note))
    out += [Target("E-mail", str(e)) for e in target.get("emails") or ()]
    out += [Target("Chat", str(h.get("type", ""))) for h in target.get("webhooks") or ()]
    return out
