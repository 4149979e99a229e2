"""The escalation engine's entry points: its incident-event subscriber and its timer job.

New and reopened incidents start an escalation with the first enabled rule of their channel
(by priority) whose filters and time filters match, unless an incident was created with an
explicit assignment: that one wins. An assignment naming an escalation rule starts that rule
(a re-trigger); one naming people only stops the escalation, so they stay assigned.
Acknowledging pauses, un-acknowledging and waking resume, closing and removing stop; the
webhooks an escalation paged hear of the acknowledgement and the resolution (announce.py).
Each of these runs in the event's own job transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.runtime import Runtime
from dutyline.api.unit import system_actor
from dutyline.dispatch import announce, compose, engine, peers
from dutyline.dispatch import repository as repo
from dutyline.dispatch import service as rules
from dutyline.dispatch.notify import PageOutbox
from dutyline.incident.service import IncidentEvent, IncidentInfo, events
from dutyline.kit.vocabulary import CLOSED
from dutyline.work import queue
from dutyline.work.registry import BatchContext, JobContext, job_batch_handler, job_handler

_KINDS = (events.CREATED, events.REOPENED, events.ASSIGNED, events.ACKED, events.UNACKED,
          events.WOKEN, events.RESOLVED, events.REMOVED)


class _Batch:
    """What the events of one transaction share: the incidents that open an escalation
    (read together up front), each channel's enabled rules (read once), and the outbox of
    their first steps' deliveries (written together at the end)."""

    def __init__(self, infos: dict[str, IncidentInfo], states: dict[str, Any]) -> None:
        self.infos = infos
        # The dispatch states of the incidents that open (None: none yet), locked together
        # up front; each taken once, by the incident's first event.
        self.states = states
        self.rules: dict[tuple[int, int], list[Any]] = {}
        self.outbox = PageOutbox()

    async def incident(self, conn: AsyncConnection, runtime: Runtime,
                       event: IncidentEvent) -> IncidentInfo | None:
        # Taken once: a later event of the same incident in the batch reads it afresh,
        # after what the earlier one changed.
        info = self.infos.pop(event.incident_id, None)
        if info is not None:
            return info
        return await engine.incident_record(conn, runtime, event.account_id, event.incident_id)

    async def enabled_rules(self, conn: AsyncConnection, actor: Actor,
                            channel_id: int) -> list[Any]:
        key = (actor.account_id, channel_id)
        if key not in self.rules:
            self.rules[key] = await rules.enabled_rules(conn, actor, channel_id=channel_id)
        return self.rules[key]


async def _pick_rule(conn: AsyncConnection, reads: _Batch, actor: Actor,
                     info: IncidentInfo) -> Any | None:
    if not info.channel_id:
        return None
    subject = peers.filter_subject(info)
    for rule in await reads.enabled_rules(conn, actor, info.channel_id):
        if await peers.rule_matches(conn, actor, rule.filters, rule.time_filters, subject,
                                    actor.now_s, info.account_time_zone):
            return rule
    return None


async def _start(conn: AsyncConnection, runtime: Runtime, actor: Actor, incident_id: str,
                 rule: Any, *, outbox: PageOutbox, assign_type: str, layer_idx: int = 0,
                 info: IncidentInfo | None = None, locked: Any = engine.UNREAD) -> None:
    """Start dispatch; without an aggregation window the first step runs right here, in the
    event's transaction, rather than as a job of its own, its state written with the one
    dispatch begins with, by the outbox."""
    inline = int(rule.aggr_window) == 0
    state = await engine.start(conn, actor, incident_id=incident_id, rule=rule,
                               assign_type=assign_type, outbox=outbox, layer_idx=layer_idx,
                               schedule=not inline, locked=locked)
    if inline:
        if info is None:
            info = await engine.incident_record(conn, runtime, actor.account_id, incident_id)
        await engine.run_step(conn, runtime, state, info, outbox)


async def _on_event(conn: AsyncConnection, runtime: Runtime, event: IncidentEvent,
                    reads: _Batch) -> None:
    actor = system_actor(event.account_id, runtime.clock)
    incident_id = event.incident_id
    if reads.outbox.has_state(incident_id):
        # An earlier event of the batch stepped this incident: what follows reads its state.
        await reads.outbox.flush_states(conn)
    # The state locked up front holds for the incident's first event only.
    locked = reads.states.pop(incident_id, engine.UNREAD)
    if event.kind in (events.CREATED, events.REOPENED):
        info = await reads.incident(conn, runtime, event)
        if info is None or info.progress == CLOSED:
            return
        if event.kind == events.CREATED and info.assigned_to:
            # Assigned when it was created (or by hand since, before this ran): nothing but
            # an explicit assignment sets it before dispatch begins. Its own `assigned`
            # event starts the rule it names, if any.
            return
        rule = await _pick_rule(conn, reads, actor, info)
        if rule is None:
            await engine.stop(conn, actor, incident_id)
            return
        await _start(conn, runtime, actor, incident_id, rule, outbox=reads.outbox,
                     assign_type="reopen" if event.kind == events.REOPENED else "assign",
                     info=info, locked=locked)
    elif event.kind == events.ASSIGNED:
        assignment = event.payload.get("assignment") or {}
        rule_id = str(assignment.get("escalate_rule_id") or "")
        rule = await repo.get_rule_by_id(conn, event.account_id, rule_id) if rule_id else None
        if rule is not None:
            await _start(conn, runtime, actor, incident_id, rule, outbox=reads.outbox,
                         assign_type=str(assignment.get("type") or "reassign"),
                         layer_idx=int(assignment.get("layer_idx") or 0))
        elif assignment.get("person_ids"):
            # People assigned by hand: a running escalation would assign its next layer
            # over them.
            await engine.stop(conn, actor, incident_id)
    elif event.kind == events.ACKED:
        state = await engine.acknowledged(conn, actor, incident_id)
        await announce.state_change(conn, runtime, actor, outbox=reads.outbox, state=state,
                                    event=event, event_type=compose.ACK_EVENT)
    elif event.kind in (events.UNACKED, events.WOKEN):
        await engine.resume(conn, actor, incident_id)
    elif event.kind == events.RESOLVED:
        state = await engine.stop(conn, actor, incident_id)
        await announce.state_change(conn, runtime, actor, outbox=reads.outbox, state=state,
                                    event=event, event_type=compose.RESOLVE_EVENT)
    elif event.kind == events.REMOVED:
        await engine.stop(conn, actor, incident_id)


async def _on_events(conn: AsyncConnection, runtime: Runtime, batch: list[IncidentEvent],
                     handoff: queue.Handoff | None) -> None:
    """Events in the order they happened, the incidents of those that open an escalation
    read together first (a fixed number of reads, not seven per incident); the first
    pages go to `handoff`, the job's worker."""
    if runtime.db.is_sqlite and _first_openings(batch) and await _open_read_first(
            conn, runtime, batch, handoff):
        return
    opening_ids = sorted({event.incident_id for event in batch
                          if event.kind in (events.CREATED, events.REOPENED)})
    locked = await repo.lock_states(conn, opening_ids) if opening_ids else {}
    shared = await _read_batch(conn, runtime, batch, locked)
    for event in batch:
        await _on_event(conn, runtime, event, shared)
    await shared.outbox.flush(conn, handoff)


async def _read_batch(conn: AsyncConnection, runtime: Runtime, batch: list[IncidentEvent],
                      locked: dict[str, Any]) -> _Batch:
    opening: dict[int, list[str]] = {}
    for event in batch:
        if event.kind in (events.CREATED, events.REOPENED):
            ids = opening.setdefault(event.account_id, [])
            if event.incident_id not in ids:
                ids.append(event.incident_id)
    opening_ids = sorted({i for ids in opening.values() for i in ids})
    return _Batch(await engine.incident_records(conn, runtime, opening),
                  {i: locked.get(i) for i in opening_ids})


def _first_openings(batch: list[IncidentEvent]) -> bool:
    """A burst's shape: only new incidents, each once."""
    return (all(event.kind == events.CREATED for event in batch)
            and len({event.incident_id for event in batch}) == len(batch))


async def _open_read_first(conn: AsyncConnection, runtime: Runtime,
                           batch: list[IncidentEvent], handoff: queue.Handoff | None) -> bool:
    """SQLite has one writer for every process: new incidents whose escalation has not
    begun are read and composed on a read transaction, and only the writes take the
    writer (`conn`'s first statement), after checking that no dispatch state appeared for
    any of them meanwhile. False when one did, or when one had a state already: nothing is
    written, and the caller runs the batch under the writer. As for steps
    (engine._step_read_first), a change to an incident between the read and the write is
    taken as if it came just after these events, whose own events follow them."""
    ids = sorted({event.incident_id for event in batch})
    async with runtime.db.transaction(write=False) as reading:
        if await repo.lock_states(reading, ids):
            return False
        shared = await _read_batch(reading, runtime, batch, {})
        for event in batch:
            await _on_event(reading, runtime, event, shared)
    if await repo.lock_states(conn, ids):  # the first statement: takes the writer
        return False
    await shared.outbox.flush(conn, handoff)
    return True


@events.subscriber("dispatch", kinds=_KINDS)
async def on_incident_event(ctx: JobContext, event: IncidentEvent) -> None:
    await _on_events(ctx.conn, ctx.runtime, [event], ctx.handoff)


@events.batch_subscriber("dispatch", max_size=64)
async def on_incident_events(ctx: BatchContext, batch: list[IncidentEvent]) -> None:
    await _on_events(ctx.conn, ctx.runtime, batch, ctx.handoff)


@job_handler(engine.STEP_JOB)
async def run_step(ctx: JobContext, payload: dict[str, Any]) -> None:
    await engine.step(ctx.conn, ctx.runtime, incident_id=str(payload["incident_id"]),
                      seq=int(payload["seq"]), handoff=ctx.handoff)


# Small batches: on SQLite a batch's transaction holds the only writer while its steps run.
@job_batch_handler(engine.STEP_JOB, max_size=16)
async def run_steps(ctx: BatchContext) -> None:
    await engine.step_many(ctx.conn, ctx.runtime, [
        (str(job.payload["incident_id"]), int(job.payload["seq"])) for job in ctx.jobs],
        ctx.handoff)
