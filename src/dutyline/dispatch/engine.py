"""The escalation engine (docs/paging.md): one state row per incident and one timer job at a
time, each carrying the step sequence number it was scheduled for.

A step runs in its job's transaction: it locks the state row, does nothing unless the row's
`seq` is still the job's (an event or another step moved on: the timer is stale), then makes
the step's notifications (deliveries and their jobs), writes the feed, bumps `seq` and
schedules the next timer, all in that one transaction. A process killed mid-step rolls the
whole step back and the job runs again elsewhere; a step that committed can never run twice,
because its successor carries the next seq. So no step is lost and none repeats.

Timing of a layer: its targets are notified when it begins; then, while the incident is not
acknowledged, again every `notify_step` minutes, `max_times` more times at most; after
`escalate_window` minutes the next layer begins (even when acknowledged, if the layer says
`force_escalate`). Acknowledged otherwise: paused until un-acknowledged. Closed: stopped.
Snoozed: the next step waits for the snooze to end; a wake or an un-ack begins the current
layer again.

The timeline is fixed when a layer begins, in milliseconds: a repeat is due `notify_step`
after the previous one was DUE, an escalation `escalate_window` after the layer was due to
begin, so a step that ran late does not push every later one back (lateness would otherwise
add up along an incident). A step further behind than one whole `notify_step` (a long
outage) starts a new timeline from now instead of firing every missed repeat in a burst."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.errors import ApiError
from dutyline.api.runtime import Runtime
from dutyline.api.unit import system_actor
from dutyline.dispatch import repository as repo
from dutyline.dispatch import system
from dutyline.dispatch.notify import PageOutbox, notify_layer
from dutyline.incident.service import IncidentInfo
from dutyline.incident.service import query as incidents
from dutyline.kit.ids import hex_id
from dutyline.kit.vocabulary import CLOSED, PROCESSING
from dutyline.work import queue

STEP_JOB = "dispatch.step"
WAITING, RUNNING, PAUSED, STOPPED, DONE = "waiting", "running", "paused", "stopped", "done"

_json = msgspec.json.Decoder()


def _dump(value: Any) -> str:
    return msgspec.json.encode(value).decode()


async def incident_record(conn: AsyncConnection, runtime: Runtime, account_id: int,
                          incident_id: str) -> IncidentInfo | None:
    """The incident as paging reads it: without its sources (integrations, recurrence),
    which no rule filter, template or payload reads; None when it is gone."""
    try:
        return await incidents.incident_info(conn, system.actor(runtime, account_id),
                                             incident_id=incident_id,
                                             deps=runtime.deps, sources=False)
    except ApiError:
        return None  # removed since


def snapshot(rule: Any) -> dict[str, Any]:
    """The rule as it is when dispatch starts: later edits do not change a running one."""
    return {"rule_id": rule.rule_id, "rule_name": rule.rule_name,
            "template_id": rule.template_id, "aggr_window": int(rule.aggr_window),
            "layers": _json.decode(rule.layers)}


def _timer(jobs: queue.NewJobs, actor: Actor, incident_id: str, seq: int, at_ms: int
           ) -> None:
    jobs.add(STEP_JOB, {"incident_id": incident_id, "seq": seq}, now_ms=actor.now_ms,
             run_at_ms=at_ms, dedupe_key=f"{STEP_JOB}:{incident_id}:{seq}")


async def _schedule(conn: AsyncConnection, actor: Actor, incident_id: str, seq: int,
                    at_ms: int) -> None:
    jobs = queue.NewJobs()
    _timer(jobs, actor, incident_id, seq, at_ms)
    await jobs.flush(conn)


# `start`'s `locked` when the caller has not read the state: start reads and locks it.
UNREAD = object()


async def start(conn: AsyncConnection, actor: Actor, *, incident_id: str, rule: Any,
                assign_type: str, outbox: PageOutbox, layer_idx: int = 0,
                schedule: bool = True, locked: Any = UNREAD) -> SimpleNamespace:
    """Begin (or begin again) the incident's escalation with this rule, at `layer_idx` (an
    assignment may name one; the last layer when past it), after its aggregation window.
    The state (and, with `schedule`, its first timer) is written when `outbox` is flushed;
    without `schedule` the caller runs the first step at once (`run_step`), whose state
    lands in the same write. Returns the state as it will be written. `locked` is the state
    row this transaction has locked already (None: it has none)."""
    state = await repo.lock_state(conn, incident_id) if locked is UNREAD else locked
    now, now_ms = actor.now_s, actor.now_ms
    snap = snapshot(rule)
    first_at = now_ms + snap["aggr_window"] * 1000
    seq = int(state.seq) + 1 if state is not None else 1
    values = {
        "account_id": actor.account_id, "run_id": hex_id(), "assign_type": assign_type,
        "rule": _dump(snap), "status": WAITING, "seq": seq,
        "layer_idx": max(0, min(layer_idx, len(snap["layers"]) - 1)),
        "layer_started_at": 0, "times": 0, "last_notified_at": 0,
        "next_at": first_at, "updated_at": now,
    }
    if state is None:
        outbox.begin_state(incident_id, {"incident_id": incident_id, "created_at": now,
                                         **values}, new=True)
    else:
        outbox.begin_state(incident_id, values, new=False)
    if schedule:
        _timer(outbox.jobs, actor, incident_id, seq, first_at)
    created = state.created_at if state is not None else now
    return SimpleNamespace(incident_id=incident_id, created_at=created, **values)


async def stop(conn: AsyncConnection, actor: Actor, incident_id: str) -> Any | None:
    """Stop the escalation; returns its state as it was (None: it had none)."""
    state = await repo.lock_state(conn, incident_id)
    if state is not None and state.status != STOPPED:
        await repo.update_state(conn, incident_id, {
            "status": STOPPED, "seq": int(state.seq) + 1, "updated_at": actor.now_s})
    return state


async def resume(conn: AsyncConnection, actor: Actor, incident_id: str) -> None:
    """Un-acknowledged or woken: the current layer begins again, now."""
    state = await repo.lock_state(conn, incident_id)
    if state is None or state.status not in (RUNNING, PAUSED, DONE):
        return
    seq = int(state.seq) + 1
    await repo.update_state(conn, incident_id, {
        "status": RUNNING, "seq": seq, "layer_started_at": 0, "times": 0,
        "next_at": actor.now_ms, "updated_at": actor.now_s})
    await _schedule(conn, actor, incident_id, seq, actor.now_ms)


async def acknowledged(conn: AsyncConnection, actor: Actor, incident_id: str) -> Any | None:
    """Pause at once unless the current layer escalates regardless; returns the state as it
    was (None: the incident has no escalation)."""
    state = await repo.lock_state(conn, incident_id)
    if state is None or state.status != RUNNING:
        return state
    layers = _json.decode(state.rule)["layers"]
    if layers[int(state.layer_idx)].get("force_escalate"):
        return state
    await repo.update_state(conn, incident_id, {
        "status": PAUSED, "seq": int(state.seq) + 1, "updated_at": actor.now_s})
    return state


async def incident_records(conn: AsyncConnection, runtime: Runtime,
                           incidents_of: dict[int, list[str]]) -> dict[str, IncidentInfo]:
    """incident_record for several incidents ({account_id: incident ids}): a fixed number
    of reads per account, not per incident. Removed incidents are left out."""
    found: dict[str, IncidentInfo] = {}
    for account_id, incident_ids in incidents_of.items():
        page = await incidents.list_by_ids(conn, system.actor(runtime, account_id),
                                           incident_ids=incident_ids,
                                           deps=runtime.deps, sources=False)
        found.update((info.incident_id, info) for info in page.items)
    return found


def _is_due(state: Any, seq: int) -> bool:
    """Whether the timer timed `seq` is still the state's (else an event or another step
    moved on, and it is stale)."""
    return state is not None and int(state.seq) == seq and state.status in (WAITING, RUNNING)


async def step(conn: AsyncConnection, runtime: Runtime, *, incident_id: str, seq: int,
               handoff: queue.Handoff | None = None) -> None:
    """Run the step timed `seq`."""
    await step_many(conn, runtime, [(incident_id, seq)], handoff)


async def step_many(conn: AsyncConnection, runtime: Runtime, due: list[tuple[str, int]],
                    handoff: queue.Handoff | None = None) -> None:
    """Several steps ((incident_id, seq) each) in one transaction, as `step` runs each,
    with their states locked, and their incidents read, once for all of them. Their
    deliveries go to `handoff` (the job's worker) when given."""
    if runtime.db.is_sqlite:
        moved = await _step_read_first(conn, runtime, due, handoff)
        if moved is None:
            return
        states = moved
    else:
        states = await repo.lock_states(conn, sorted({incident_id for incident_id, _ in due}))
    outbox = PageOutbox()
    await _compose_steps(conn, runtime, due, states, outbox)
    await outbox.flush(conn, handoff)


async def _compose_steps(conn: AsyncConnection, runtime: Runtime, due: list[tuple[str, int]],
                         states: dict[str, Any], outbox: PageOutbox) -> dict[str, Any]:
    """Run the steps that are still due against these states into `outbox`, reading what
    they need on `conn`; returns the states of the steps that ran."""
    live = {incident_id: states[incident_id] for incident_id, seq in due
            if _is_due(states.get(incident_id), seq)}
    incidents_of: dict[int, list[str]] = {}
    for incident_id, state in live.items():
        incidents_of.setdefault(int(state.account_id), []).append(incident_id)
    infos = await incident_records(conn, runtime, incidents_of)
    for incident_id, state in live.items():
        await run_step(conn, runtime, state, infos.get(incident_id), outbox)
    return live


def _version(state: Any) -> tuple[int, str]:
    return int(state.seq), str(state.status)


async def _step_read_first(conn: AsyncConnection, runtime: Runtime,
                           due: list[tuple[str, int]], handoff: queue.Handoff | None
                           ) -> dict[str, Any] | None:
    """SQLite has one writer for every process: the steps read and compose on a read
    transaction first, and only their writes take the writer, after checking that no event
    or other step moved any of their states on meanwhile (every change of a state bumps
    its `seq` or its status). None when the steps are written; when a state moved on, the
    states as the writer read them, for the caller to run the batch again under the writer
    (a step not due at the read never is again: a state's `seq` only grows). A change to an
    incident itself between the read and the write (an acknowledgement whose event has not
    reached dispatch yet) is taken as if it came just after the step, which it may as well
    have."""
    ids = sorted({incident_id for incident_id, _ in due})
    outbox = PageOutbox()
    async with runtime.db.transaction(write=False) as reading:
        live = await _compose_steps(reading, runtime, due,
                                    await repo.lock_states(reading, ids), outbox)
    if not live:
        return None  # nothing was due: a state that moved on never comes back
    now = await repo.lock_states(conn, sorted(live))  # the first statement: takes the writer
    if any(incident_id not in now or _version(now[incident_id]) != _version(state)
           for incident_id, state in live.items()):
        return now
    await outbox.flush(conn, handoff)
    return None


async def run_step(conn: AsyncConnection, runtime: Runtime, state: Any,
                   info: IncidentInfo | None, outbox: PageOutbox) -> None:
    """The step of a state this transaction holds locked and found due; `info` is the
    incident (None: removed since). What it sends, its next timer and the state it leaves
    go into `outbox`, which the caller flushes before the transaction ends."""
    incident_id, seq = state.incident_id, int(state.seq)
    actor = system_actor(int(state.account_id), runtime.clock)
    now = actor.now_s
    # The moment this step was due (its timer's run_at), or now for one that is early.
    at = int(state.next_at) if 0 < int(state.next_at) <= actor.now_ms else actor.now_ms
    values: dict[str, Any] = {"seq": seq + 1, "updated_at": now}
    if info is None or info.progress == CLOSED:
        outbox.set_state(incident_id, {**values, "status": STOPPED})
        return
    if info.snoozed_before > now:
        wake_ms = info.snoozed_before * 1000
        outbox.set_state(incident_id, {**values, "next_at": wake_ms})
        _timer(outbox.jobs, actor, incident_id, seq + 1, wake_ms)
        return
    rule = _json.decode(state.rule)
    layers: list[dict[str, Any]] = rule["layers"]
    idx, times = int(state.layer_idx), int(state.times)
    started, last = int(state.layer_started_at), int(state.last_notified_at)
    acked = info.progress == PROCESSING
    layer = layers[idx]

    async def begin(new_idx: int) -> None:
        nonlocal idx, times, started, last, layer
        idx, times, started, last, layer = new_idx, 1, at, at, layers[new_idx]
        await notify_layer(conn, runtime, actor, outbox=outbox, info=info, rule=rule,
                           layer_idx=idx, fire_type="fire", run_id=state.run_id,
                           assign_type=state.assign_type, announce=True)

    if started == 0:
        if acked:
            outbox.set_state(incident_id, {**values, "status": PAUSED})
            return
        await begin(idx)
    else:
        if acked and not layer.get("force_escalate"):
            outbox.set_state(incident_id, {**values, "status": PAUSED})
            return
        if idx + 1 < len(layers) and at >= _escalate_at(started, layer):
            await begin(idx + 1)
        elif not acked and times <= int(layer.get("max_times", 0)) \
                and at >= last + _step_ms(layer):
            times, last = times + 1, last + _step_ms(layer)
            await notify_layer(conn, runtime, actor, outbox=outbox, info=info, rule=rule,
                               layer_idx=idx, fire_type="refire", run_id=state.run_id,
                               assign_type=state.assign_type, announce=False)
    if last + _step_ms(layer) < actor.now_ms - _step_ms(layer):
        last = actor.now_ms  # more than a whole step behind: a new timeline from now
    due: list[int] = []
    if not acked and times <= int(layer.get("max_times", 0)):
        due.append(last + _step_ms(layer))
    if idx + 1 < len(layers):
        due.append(_escalate_at(started, layer))
    values.update(layer_idx=idx, times=times, layer_started_at=started, last_notified_at=last)
    if not due:
        outbox.set_state(incident_id, {**values, "status": DONE, "next_at": 0})
        return
    next_at = max(actor.now_ms, min(due))
    outbox.set_state(incident_id, {**values, "status": RUNNING, "next_at": next_at})
    _timer(outbox.jobs, actor, incident_id, seq + 1, next_at)


def _escalate_at(started_ms: int, layer: dict[str, Any]) -> int:
    return started_ms + int(layer.get("escalate_window", 0)) * 60_000


def _step_ms(layer: dict[str, Any]) -> int:
    return max(1000, int(float(layer.get("notify_step", 10)) * 60_000))
