"""The escalation engine's entry points: its incident-event subscriber and its timer job.

New and reopened incidents start an escalation with the first enabled rule of their channel
(by priority) whose filters and time filters match; an assignment naming an escalation rule
starts that rule (a re-trigger). Acknowledging pauses, un-acknowledging and waking resume,
closing and removing stop. Each of these runs in the event's own job transaction."""

from __future__ import annotations

from typing import Any

from dutyline.api.actor import Actor
from dutyline.dispatch import engine, peers
from dutyline.dispatch import repository as repo
from dutyline.dispatch import service as rules
from dutyline.incident.service import IncidentEvent, events
from dutyline.work.registry import JobContext, job_handler


def _subject(info: Any) -> dict[str, Any]:
    """What rule filters read (decisions.md §4 keys: severity, title, description, labels.*)."""
    return {"severity": info.incident_severity, "incident_severity": info.incident_severity,
            "title": info.title, "description": info.description, "labels": info.labels,
            "fields": info.fields, "progress": info.progress, "num": info.num,
            "channel_id": info.channel_id, "channel_name": info.channel_name}


async def _pick_rule(ctx: JobContext, actor: Actor, info: Any) -> Any | None:
    if not info.channel_id:
        return None
    subject = _subject(info)
    for rule in await rules.enabled_rules(ctx.conn, actor, channel_id=info.channel_id):
        if peers.rule_matches(rule.filters, rule.time_filters, subject, actor.now_s,
                              info.account_time_zone):
            return rule
    return None


async def _start(ctx: JobContext, actor: Actor, incident_id: str, rule: Any, *,
                 assign_type: str, layer_idx: int = 0, info: Any = None) -> None:
    """Start dispatch; without an aggregation window the first step runs right here, in the
    event's transaction, rather than as a job of its own."""
    inline = int(rule.aggr_window) == 0
    seq = await engine.start(ctx.conn, actor, incident_id=incident_id, rule=rule,
                             assign_type=assign_type, layer_idx=layer_idx,
                             schedule=not inline)
    if inline:
        await engine.step(ctx.conn, ctx.runtime, incident_id=incident_id, seq=seq, info=info)


@events.subscriber("dispatch", kinds=(
    events.CREATED, events.REOPENED, events.ASSIGNED, events.ACKED, events.UNACKED,
    events.WOKEN, events.RESOLVED, events.REMOVED))
async def on_incident_event(ctx: JobContext, event: IncidentEvent) -> None:
    actor = Actor.system(event.account_id, ctx.clock)
    incident_id = event.incident_id
    if event.kind in (events.CREATED, events.REOPENED):
        info = await engine.incident_record(ctx.conn, ctx.runtime, event.account_id,
                                            incident_id)
        if info is None or info.progress == engine.CLOSED:
            return
        rule = await _pick_rule(ctx, actor, info)
        if rule is None:
            await engine.stop(ctx.conn, actor, incident_id)
            return
        await _start(ctx, actor, incident_id, rule,
                     assign_type="reopen" if event.kind == events.REOPENED else "assign",
                     info=info)
    elif event.kind == events.ASSIGNED:
        assignment = event.payload.get("assignment") or {}
        rule_id = str(assignment.get("escalate_rule_id") or "")
        rule = await repo.get_rule_by_id(ctx.conn, event.account_id, rule_id) if rule_id else None
        if rule is not None:
            await _start(ctx, actor, incident_id, rule,
                         assign_type=str(assignment.get("type") or "reassign"),
                         layer_idx=int(assignment.get("layer_idx") or 0))
    elif event.kind == events.ACKED:
        await engine.acknowledged(ctx.conn, actor, incident_id)
    elif event.kind in (events.UNACKED, events.WOKEN):
        await engine.resume(ctx.conn, actor, incident_id)
    elif event.kind in (events.RESOLVED, events.REMOVED):
        await engine.stop(ctx.conn, actor, incident_id)


@job_handler(engine.STEP_JOB)
async def run_step(ctx: JobContext, payload: dict[str, Any]) -> None:
    await engine.step(ctx.conn, ctx.runtime, incident_id=str(payload["incident_id"]),
                      seq=int(payload["seq"]))
