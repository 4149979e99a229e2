"""Progress transitions: Triggered -(ack)-> Processing -(resolve)-> Closed,
unack back to Triggered, reopen from Closed back to Triggered; snooze/wake on open incidents;
comment and remove on any.

Every batch is all or nothing: each id must be a visible incident of the caller's account
(else ResourceNotFound naming the ids) in a progress the transition accepts (else
InvalidParameter naming the ids), checked before the first write. Each changed incident gets
its feed entry and its event in the same transaction; each service returns the ids it
changed, which its endpoint names as the audit targets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident import events, feed, state, visibility
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
from dutyline.incident.lifecycle.schemas import CommentInput as CommentInput  # records taken
from dutyline.incident.lifecycle.schemas import ReopenInput as ReopenInput
from dutyline.incident.lifecycle.schemas import ResolveInput as ResolveInput
from dutyline.incident.lifecycle.schemas import SnoozeInput as SnoozeInput
from dutyline.kit.ids import hex_id


@writes("/incident/ack", INCIDENT_MANAGE)
async def ack(conn: AsyncConnection, actor: Actor, *,
              incident_ids: Sequence[str]) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    require_progress(rows, (TRIGGERED,), "only Triggered incidents can be acknowledged")
    now, person_id = actor.now_s, actor.person_id
    for row in rows:
        await repo.update_incident(conn, row.incident_id, {
            **state.acked(row.ack_time, now),
            "responders": dumps(responders_with_ack(row.responders, person_id, now)),
        })
        await record(conn, actor, row, feed_type=feed.ACK, detail={}, kind=events.ACKED,
                     payload={"progress": PROCESSING})
    return [r.incident_id for r in rows]


@writes("/incident/unack", INCIDENT_MANAGE)
async def unack(conn: AsyncConnection, actor: Actor, *,
                incident_ids: Sequence[str]) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    require_progress(rows, (PROCESSING,), "only Processing incidents can be unacknowledged")
    now = actor.now_s
    for row in rows:
        await repo.update_incident(conn, row.incident_id, {
            **state.unacked(now), "responders": dumps(responders_unacked(row.responders)),
        })
        await record(conn, actor, row, feed_type=feed.UNACK, detail={}, kind=events.UNACKED,
                     payload={"progress": TRIGGERED})
    return [r.incident_id for r in rows]


@writes("/incident/resolve", INCIDENT_MANAGE, inputs=ResolveInput)
async def resolve(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                  root_cause: str | None = None, resolution: str | None = None) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    require_progress(rows, OPEN, "already Closed")
    now = actor.now_s
    for row in rows:
        # Its active alerts end with it (resolve_alerts below).
        values = state.closed(now, actor.person_id, alerts_ended=True)
        if root_cause is not None:
            values["root_cause"] = root_cause
        if resolution is not None:
            values["resolution"] = resolution
        recovered = await repo.resolve_alerts(conn, row.incident_id, now)
        await repo.update_incident(conn, row.incident_id, values)
        await record(conn, actor, row, feed_type=feed.RESOLVE, detail=feed.closed_by_detail(actor),
                     kind=events.RESOLVED,
                     payload={"progress": CLOSED, "recovered_alerts": recovered})
    return [r.incident_id for r in rows]


@writes("/incident/reopen", INCIDENT_MANAGE, inputs=ReopenInput)
async def reopen(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                 reason: str = "") -> list[str]:
    """All or nothing: every id Closed or nothing changes; back to Triggered with the close
    fields cleared, and a new assignment of type `reopen` for the escalation engine."""
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    require_progress(rows, (CLOSED,), "only Closed incidents can be reopened")
    now = actor.now_s
    for row in rows:
        previous: dict[str, Any] = loads(row.assigned_to)
        assignment = {**previous, "type": "reopen", "assigned_at": now, "id": hex_id()}
        await repo.update_incident(conn, row.incident_id, {
            **state.reopened(row.incident_severity, now),
            "assigned_to": dumps(assignment),
            "responders": dumps(responders_unacked(row.responders)),
        })
        await record(conn, actor, row, feed_type=feed.REOPEN, detail={"reason": reason},
                     kind=events.REOPENED,
                     payload={"progress": TRIGGERED, "reason": reason,
                              "severity": row.incident_severity, "assignment": assignment})
    return [r.incident_id for r in rows]


@writes("/incident/snooze", INCIDENT_MANAGE, inputs=SnoozeInput)
async def snooze(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                 minutes: int) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    require_progress(rows, OPEN, "Closed incidents cannot be snoozed")
    now = actor.now_s
    until = now + minutes * 60
    for row in rows:
        await repo.update_incident(conn, row.incident_id, state.snoozed(until, now))
        await record(conn, actor, row, feed_type=feed.SNOOZE, detail={"minutes": minutes},
                     kind=events.SNOOZED, payload={"snoozed_before": until})
    return [r.incident_id for r in rows]


@writes("/incident/wake", INCIDENT_MANAGE)
async def wake(conn: AsyncConnection, actor: Actor, *,
               incident_ids: Sequence[str]) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    now = actor.now_s
    asleep = [r.incident_id for r in rows if r.snoozed_before > now]
    if len(asleep) != len(rows):
        awake = [r.incident_id for r in rows if r.snoozed_before <= now]
        raise errors.InvalidParameter(
            "Invalid parameter {field}: {reason}: {ids}", field="incident_ids",
            reason="not snoozed", ids=", ".join(awake))
    for row in rows:
        await repo.update_incident(conn, row.incident_id, state.woken(now))
        await record(conn, actor, row, feed_type=feed.WAKE,
                     detail={"snoozedBefore": row.snoozed_before}, kind=events.WOKEN)
    return [r.incident_id for r in rows]


@writes("/incident/comment", INCIDENT_MANAGE, inputs=CommentInput)
async def comment(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                  comment: str, mute_reply: bool = False) -> list[str]:
    text = comment.strip()
    if not text:
        raise errors.invalid("comment", "is required")
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    for row in rows:
        await repo.update_incident(conn, row.incident_id, {"updated_at": actor.now_s})
        await record(conn, actor, row, feed_type=feed.COMMENT,
                     detail={"comment": text, "mute_reply": mute_reply},
                     kind=events.UPDATED, payload={"change": "comment",
                                                   "mute_reply": mute_reply})
    return [r.incident_id for r in rows]


@writes("/incident/remove", INCIDENT_MANAGE, dangerous=True)
async def remove(conn: AsyncConnection, actor: Actor, *,
                 incident_ids: Sequence[str]) -> list[str]:
    """Soft delete: the row stays (its feed and events too) but reads no longer see it. The
    feed has no entry type for a removal; the event and the audit log say who and when."""
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    now = actor.now_s
    for row in rows:
        await repo.update_incident(conn, row.incident_id,
                                   {"deleted_at": now, "updated_at": now})
        await record(conn, actor, row, feed_type=None, detail={}, kind=events.REMOVED,
                     payload={"progress": row.progress})
    return [r.incident_id for r in rows]


class Assignment(NamedTuple):
    """A layer the escalation engine paged: its persons and the incident's `assigned_to`."""

    incident_id: str
    person_ids: list[int]
    assignment: dict[str, Any]


async def assign_responders(conn: AsyncConnection, actor: Actor,
                            assignments: list[Assignment]) -> None:
    """The escalation engine paged layers of incidents of the actor's account: each layer's
    persons join the incident's responders and its `assigned_to` names the rule and layer.
    The incidents are locked together (one read) and updated in one executemany. No feed
    entry and no event here: the engine writes its own `i_assign`, and an `assigned` event
    would start dispatch again. Closed and removed incidents are left as they are."""
    if not assignments:
        return
    found = await repo.lock(conn, visibility.Scope(actor.account_id, None),
                            sorted({a.incident_id for a in assignments}))
    responders = {incident_id: row.responders for incident_id, row in found.items()
                  if row.progress != CLOSED}
    changes: dict[str, dict[str, Any]] = {}
    for a in assignments:  # in order: a later layer of the same incident wins
        if a.incident_id in responders:
            responders[a.incident_id] = dumps(responders_adding(
                responders[a.incident_id], a.person_ids, actor.now_s))
            changes[a.incident_id] = {"assigned_to": dumps(a.assignment),
                                      "responders": responders[a.incident_id],
                                      "updated_at": actor.now_s}
    await repo.update_incidents(conn, changes)
