"""Progress transitions (decisions.md §3): Triggered -(ack)-> Processing -(resolve)-> Closed,
unack back to Triggered, reopen from Closed back to Triggered; snooze/wake on open incidents;
comment and remove on any.

Every batch is all or nothing: each id must be a visible incident of the caller's account
(else ResourceNotFound naming the ids) in a progress the transition accepts (else
InvalidParameter naming the ids), checked before the first write. Each changed incident gets
its feed entry and its event in the same transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.operation import Context
from dutyline.incident import events, feed, visibility
from dutyline.incident.lifecycle import repository as repo
from dutyline.incident.lifecycle.common import (
    CLOSED,
    OPEN,
    PROCESSING,
    TRIGGERED,
    dumps,
    load_all,
    loads,
    record,
    require_progress,
    responders_adding,
    responders_unacked,
    responders_with_ack,
    unique_ids,
)
from dutyline.incident.lifecycle.schemas import (
    CommentIncidentRequest,
    IncidentIdsRequest,
    RemoveIncidentRequest,
    ReopenIncidentRequest,
    ResolveIncidentRequest,
    SnoozeIncidentRequest,
)
from dutyline.kit.ids import hex_id


async def ack(ctx: Context, req: IncidentIdsRequest) -> None:
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    require_progress(rows, (TRIGGERED,), "only Triggered incidents can be acknowledged")
    now, person_id = ctx.now_s, ctx.caller.person_id
    for row in rows:
        await repo.update_incident(ctx.conn, row.incident_id, {
            "progress": PROCESSING,
            # ack_time is the first acknowledgement; a later ack after an unack keeps it.
            "ack_time": row.ack_time or now,
            "responders": dumps(responders_with_ack(row.responders, person_id, now)),
            "updated_at": now,
        })
        await record(ctx, row, feed_type=feed.ACK, detail={}, kind=events.ACKED,
                     payload={"progress": PROCESSING})


async def unack(ctx: Context, req: IncidentIdsRequest) -> None:
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    require_progress(rows, (PROCESSING,), "only Processing incidents can be unacknowledged")
    now = ctx.now_s
    for row in rows:
        await repo.update_incident(ctx.conn, row.incident_id, {
            "progress": TRIGGERED, "responders": dumps(responders_unacked(row.responders)),
            "updated_at": now,
        })
        await record(ctx, row, feed_type=feed.UNACK, detail={}, kind=events.UNACKED,
                     payload={"progress": TRIGGERED})


async def resolve(ctx: Context, req: ResolveIncidentRequest) -> None:
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    require_progress(rows, OPEN, "already Closed")
    now = ctx.now_s
    for row in rows:
        values: dict[str, Any] = {
            "progress": CLOSED, "incident_status": "Ok", "close_time": now, "end_time": now,
            "closer_id": ctx.caller.person_id, "snoozed_before": 0, "active_alert_cnt": 0,
            "updated_at": now,
        }
        if req.root_cause is not None:
            values["root_cause"] = req.root_cause
        if req.resolution is not None:
            values["resolution"] = req.resolution
        recovered = await repo.resolve_alerts(ctx.conn, row.incident_id, now)
        await repo.update_incident(ctx.conn, row.incident_id, values)
        await record(ctx, row, feed_type=feed.RESOLVE, detail={"from": "console"},
                     kind=events.RESOLVED,
                     payload={"progress": CLOSED, "recovered_alerts": recovered})


async def reopen(ctx: Context, req: ReopenIncidentRequest) -> None:
    """decisions.md §3: every id Closed or nothing changes; back to Triggered with the close
    fields cleared, and a new assignment of type `reopen` for the escalation engine."""
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    require_progress(rows, (CLOSED,), "only Closed incidents can be reopened")
    now = ctx.now_s
    for row in rows:
        previous: dict[str, Any] = loads(row.assigned_to)
        assignment = {**previous, "type": "reopen", "assigned_at": now, "id": hex_id()}
        await repo.update_incident(ctx.conn, row.incident_id, {
            "progress": TRIGGERED, "incident_status": row.incident_severity,
            "close_time": 0, "end_time": 0, "closer_id": 0, "merged_into": None,
            "assigned_to": dumps(assignment),
            "responders": dumps(responders_unacked(row.responders)),
            "last_time": now, "updated_at": now,
        })
        await record(ctx, row, feed_type=feed.REOPEN, detail={"reason": req.reason},
                     kind=events.REOPENED,
                     payload={"progress": TRIGGERED, "reason": req.reason,
                              "severity": row.incident_severity, "assignment": assignment})


async def snooze(ctx: Context, req: SnoozeIncidentRequest) -> None:
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    require_progress(rows, OPEN, "Closed incidents cannot be snoozed")
    now = ctx.now_s
    until = now + req.minutes * 60
    for row in rows:
        await repo.update_incident(ctx.conn, row.incident_id,
                                   {"snoozed_before": until, "updated_at": now})
        await record(ctx, row, feed_type=feed.SNOOZE, detail={"minutes": req.minutes},
                     kind=events.SNOOZED, payload={"snoozed_before": until})


async def wake(ctx: Context, req: IncidentIdsRequest) -> None:
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    now = ctx.now_s
    asleep = [r.incident_id for r in rows if r.snoozed_before > now]
    if len(asleep) != len(rows):
        awake = [r.incident_id for r in rows if r.snoozed_before <= now]
        raise errors.InvalidParameter(
            "Invalid parameter {field}: {reason}: {ids}", field="incident_ids",
            reason="not snoozed", ids=", ".join(awake))
    for row in rows:
        await repo.update_incident(ctx.conn, row.incident_id,
                                   {"snoozed_before": 0, "updated_at": now})
        await record(ctx, row, feed_type=feed.WAKE,
                     detail={"snoozedBefore": row.snoozed_before}, kind=events.WOKEN)


async def comment(ctx: Context, req: CommentIncidentRequest) -> None:
    text = req.comment.strip()
    if not text:
        raise errors.invalid("comment", "is required")
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    for row in rows:
        await repo.update_incident(ctx.conn, row.incident_id, {"updated_at": ctx.now_s})
        await record(ctx, row, feed_type=feed.COMMENT,
                     detail={"comment": text, "mute_reply": req.mute_reply},
                     kind=events.UPDATED, payload={"change": "comment",
                                                   "mute_reply": req.mute_reply})


async def remove(ctx: Context, req: RemoveIncidentRequest) -> None:
    """Soft delete: the row stays (its feed and events too) but reads no longer see it. The
    feed has no entry type for a removal; the event and the audit log say who and when."""
    rows = await load_all(ctx, unique_ids(req.incident_ids))
    now = ctx.now_s
    for row in rows:
        await repo.update_incident(ctx.conn, row.incident_id,
                                   {"deleted_at": now, "updated_at": now})
        await record(ctx, row, feed_type=None, detail={}, kind=events.REMOVED,
                     payload={"progress": row.progress})


async def assign_responders(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                            person_ids: list[int], assignment: dict[str, Any]) -> None:
    """The escalation engine paged a layer: its persons join the responders and the
    incident's `assigned_to` names the rule and layer. No feed entry and no event here: the
    engine writes its own `i_assign`, and an `assigned` event would start dispatch again."""
    found = await repo.lock(conn, visibility.Scope(actor.account_id, None), [incident_id])
    row = found.get(incident_id)
    if row is None or row.progress == CLOSED:
        return
    await repo.update_incident(conn, incident_id, {
        "assigned_to": dumps(assignment),
        "responders": dumps(responders_adding(row.responders, person_ids, actor.now_s)),
        "updated_at": actor.now_s,
    })
