"""The incident operations of progress (ack, unack, resolve, reopen, snooze, wake: the
transitions of incident/state, which each of these loads the incidents for and calls),
comment and remove.

Every batch is all or nothing: each id must be a visible incident of the caller's account
(else ResourceNotFound naming the ids) in a state the transition accepts (else
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
    dumps,
    load_all,
    record,
    responders_adding,
    unique_ids,
)
from dutyline.incident.lifecycle.schemas import CommentInput as CommentInput  # records taken
from dutyline.incident.lifecycle.schemas import ReopenInput as ReopenInput
from dutyline.incident.lifecycle.schemas import ResolveInput as ResolveInput
from dutyline.incident.lifecycle.schemas import SnoozeInput as SnoozeInput


@writes("/incident/ack", INCIDENT_MANAGE)
async def ack(conn: AsyncConnection, actor: Actor, *,
              incident_ids: Sequence[str]) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    return await conn.run_sync(state.acknowledge, actor, rows)


@writes("/incident/unack", INCIDENT_MANAGE)
async def unack(conn: AsyncConnection, actor: Actor, *,
                incident_ids: Sequence[str]) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    return await conn.run_sync(state.unacknowledge, actor, rows)


@writes("/incident/resolve", INCIDENT_MANAGE, inputs=ResolveInput)
async def resolve(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                  root_cause: str | None = None, resolution: str | None = None) -> list[str]:
    """Close (all or nothing); their active alerts end with them."""
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    return await conn.run_sync(state.resolve, actor, rows, root_cause=root_cause,
                               resolution=resolution)


@writes("/incident/reopen", INCIDENT_MANAGE, inputs=ReopenInput)
async def reopen(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                 reason: str = "") -> list[str]:
    """All or nothing: every id Closed or nothing changes; back to Triggered with the close
    fields cleared, and a new assignment of type `reopen` for the escalation engine."""
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    return await conn.run_sync(state.reopen, actor, rows, reason=reason)


@writes("/incident/snooze", INCIDENT_MANAGE, inputs=SnoozeInput)
async def snooze(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                 minutes: int) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    return await conn.run_sync(state.snooze, actor, rows, minutes=minutes)


@writes("/incident/wake", INCIDENT_MANAGE)
async def wake(conn: AsyncConnection, actor: Actor, *,
               incident_ids: Sequence[str]) -> list[str]:
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    return await conn.run_sync(state.wake, actor, rows)


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
