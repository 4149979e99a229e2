"""Who is on call at an instant: the compiled-schedule cache behind the engine's lookups.

A schedule's layers are parsed and compiled once per (schedule_id, revision) in each process;
a compiled schedule keeps the final timeline of a window around the last instant asked (a
sorted list of shifts) and answers by bisection. A lookup reads only the revision from the
database (a primary-key lookup), then the persons' liveness (members removed from the account
are never on call), so it costs two indexed queries however large the schedule. A schedule
whose layers follow a service calendar is compiled with what the calendar says; a write to
the calendar or its events bumps the schedule's revision, so it is compiled again."""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.platform.calendar import service as calendar_service
from dutyline.platform.member import service as member_service
from dutyline.schedule import definition, repository, timeline
from dutyline.schedule.localtime import zone
from dutyline.schedule.schemas import ScheduleLayer

CACHE_SIZE = 20_000
WINDOW_BEFORE_S = timeline.DAY
WINDOW_AFTER_S = 8 * timeline.DAY
WINDOW_MAX_S = 45 * timeline.DAY


class CompiledSchedule:
    """Safe to share between threads (sync read units run on database threads): the window
    kept is one tuple, replaced whole, so a reader sees either the old one or the new one."""

    def __init__(self, layers: list[timeline.Layer], time_zone: str) -> None:
        self.layers = layers
        self.by_index = timeline.layers_by_index(layers)
        self.tz = zone(time_zone)
        # (lo, hi, shift starts, shifts) of the final timeline of [lo, hi)
        self._window: tuple[int, int, list[int], list[timeline.Shift]] = (0, 0, [], [])

    @classmethod
    def from_stored(cls, layers: list[ScheduleLayer], time_zone: str,
                    calendars: Mapping[str, calendar_service.CalendarDays]) -> CompiledSchedule:
        return cls(definition.compile_layers(layers, calendars), time_zone)

    def shift_at(self, at_s: int) -> timeline.Shift | None:
        kept_lo, kept_hi, starts, shifts = self._window
        if not kept_lo <= at_s < kept_hi:
            lo, hi = at_s - WINDOW_BEFORE_S, at_s + WINDOW_AFTER_S
            if kept_hi > kept_lo and max(hi, kept_hi) - min(lo, kept_lo) <= WINDOW_MAX_S:
                # Near the window kept: widen it, so instants that go back and forth (the
                # engine's timers, several incidents) do not recompute it each time.
                lo, hi = min(lo, kept_lo), max(hi, kept_hi)
            shifts = timeline.compute(self.layers, self.tz, lo, hi).final
            starts = [s.start for s in shifts]
            self._window = (lo, hi, starts, shifts)
        i = bisect.bisect_right(starts, at_s) - 1
        if i >= 0 and shifts[i].end > at_s:
            return shifts[i]
        return None

    def persons_at(self, at_s: int, role_ids: frozenset[int] | None) -> list[int]:
        shift = self.shift_at(at_s)
        if shift is None:
            return []
        group = self.by_index[shift.layer].groups[shift.group]
        found: dict[int, None] = {}
        for slot in group.slots:
            if role_ids is None or slot.role_id in role_ids:
                found.update(dict.fromkeys(slot.person_ids))
        return list(found)


class ScheduleCache:
    """schedule_id -> (revision, compiled), least recently used out first. Shared by the
    event loop and the database threads of sync read units: a lock keeps it whole."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[int, CompiledSchedule]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, schedule_id: int, revision: int) -> CompiledSchedule | None:
        with self._lock:
            entry = self._entries.get(schedule_id)
            if entry is None or entry[0] != revision:
                return None
            self._entries.move_to_end(schedule_id)
            return entry[1]

    def peek(self, schedule_id: int) -> tuple[int, CompiledSchedule] | None:
        """The entry whatever its revision (the caller checks it against the database)."""
        return self._entries.get(schedule_id)

    def touch(self, schedule_id: int) -> None:
        with self._lock:
            if schedule_id in self._entries:
                self._entries.move_to_end(schedule_id)

    def put(self, schedule_id: int, revision: int, compiled: CompiledSchedule) -> None:
        with self._lock:
            self._entries[schedule_id] = (revision, compiled)
            self._entries.move_to_end(schedule_id)
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


CACHE = ScheduleCache()


def _roles(role_ids: Sequence[int] | None) -> frozenset[int] | None:
    # No roles named (None or []): everyone on call, whatever their role.
    return frozenset(role_ids) if role_ids else None


async def oncall_for_schedules(
    conn: AsyncConnection, actor: Actor, *, schedule_role_ids: Mapping[int, Sequence[int]],
    at_s: int,
) -> dict[int, list[int]]:
    """`oncall_for_schedules_sync` on an async connection (the escalation engine's)."""
    return await conn.run_sync(lambda sync: oncall_for_schedules_sync(
        sync, actor, schedule_role_ids=schedule_role_ids, at_s=at_s))


def oncall_for_schedules_sync(
    conn: Connection, actor: Actor, *, schedule_role_ids: Mapping[int, Sequence[int]],
    at_s: int,
) -> dict[int, list[int]]:
    """Persons on call at `at_s` per schedule for its roles; unknown ids are left out.

    The answer is first computed from the compiled schedules in memory, whatever their
    revision; one query then reads the stored revisions and the liveness of those persons.
    Schedules whose revision changed (or were never compiled here) are loaded, compiled and
    answered with two more queries."""
    account_id = actor.account_id
    ids = list(schedule_role_ids)
    guesses: dict[int, tuple[int, list[int]]] = {}
    for sid in ids:
        entry = CACHE.peek(sid)
        if entry is not None:
            guesses[sid] = (entry[0], entry[1].persons_at(at_s, _roles(schedule_role_ids[sid])))
    named = sorted({p for _, persons in guesses.values() for p in persons})
    revisions, live = repository.revisions_and_live_sync(conn, account_id, ids, named)
    out: dict[int, list[int]] = {}
    stale: list[int] = []
    for sid, revision in revisions.items():
        guess = guesses.get(sid)
        if guess is not None and guess[0] == revision:
            CACHE.touch(sid)
            out[sid] = [p for p in guess[1] if p in live]
        else:
            stale.append(sid)
    if stale:
        wanted: dict[int, list[int]] = {}
        rows = repository.definitions_sync(conn, account_id, stale)
        decoded = [definition.decode_layers(row.layers) for row in rows]
        # Calendar writes bump the revision of the schedules following them (service.py).
        calendars = calendars_of_sync(conn, actor, decoded)
        for row, layers in zip(rows, decoded, strict=True):
            compiled = CompiledSchedule.from_stored(layers, row.time_zone, calendars)
            CACHE.put(row.schedule_id, row.revision, compiled)
            wanted[row.schedule_id] = compiled.persons_at(
                at_s, _roles(schedule_role_ids[row.schedule_id]))
        everyone = sorted({p for persons in wanted.values() for p in persons})
        alive = (member_service.existing_member_ids_sync(conn, actor, everyone)
                 if everyone else set())
        out.update({sid: [p for p in persons if p in alive] for sid, persons in wanted.items()})
    return out


def calendars_of_sync(conn: Connection, actor: Actor,
                      layer_lists: Sequence[list[ScheduleLayer]]
                      ) -> dict[str, calendar_service.CalendarDays]:
    """What the calendars these layers follow say, read once for all of them."""
    cal_ids = {c for layers in layer_lists for _, c in definition.calendar_fields(layers)}
    if not cal_ids:
        return {}
    return calendar_service.calendar_days_of_sync(conn, actor, cal_ids=cal_ids)


async def calendars_of(conn: AsyncConnection, actor: Actor,
                       layer_lists: Sequence[list[ScheduleLayer]]
                       ) -> dict[str, calendar_service.CalendarDays]:
    """`calendars_of_sync` on an async connection."""
    return await conn.run_sync(calendars_of_sync, actor, layer_lists)
