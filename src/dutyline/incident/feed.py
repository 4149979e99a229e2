"""The incident feed: who did what to an incident, and when (reference FeedDetail* types)."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor, Credential
from dutyline.incident import repository as repo

# Feed entry types used by this service (reference IncidentFeedType).
NEW = "i_new"
ACK = "i_ack"
UNACK = "i_unack"
RESOLVE = "i_rslv"
REOPEN = "i_reopen"
SNOOZE = "i_snooze"
WAKE = "i_wake"
COMMENT = "i_comm"
ASSIGN = "i_assign"
ADD_RESPONDER = "i_a_rspd"
ALERT_MERGE = "a_merge"
MERGE = "i_merge"
RESET_FIELD = "i_r_field"
RESET_TITLE = "i_r_title"
RESET_DESCRIPTION = "i_r_desc"
RESET_SEVERITY = "i_r_severity"
RESET_IMPACT = "i_r_impact"
RESET_ROOT_CAUSE = "i_r_rc"
RESET_RESOLUTION = "i_r_rsltn"
CUSTOM_ACTION = "i_custom"

# Reference FeedDetailIncidentResolve.from, per reason an incident closed by itself.
RESOLVED_BY_RECOVERY = "event"  # its alerts recovered
RESOLVED_BY_TIMEOUT = "autorslv"  # the channel's auto-resolve timeout
_RESOLVE_FROM = {"all alerts recovered": RESOLVED_BY_RECOVERY,
                 "auto_resolve_timeout": RESOLVED_BY_TIMEOUT}
# Reference FeedDetailIncidentResolve.from, per way a caller closed it (the actor's
# credential). The reference names no value for the API, which runs the same operations as
# the console: "console" (the feed's person and the audit log's credential tell them apart).
# A notification's signed link opens the incident's web card, whose button closes it. The
# service acting by itself (a job) is "escalation": the one value naming the platform's own
# machinery rather than a person's device or the alerts' state.
_CLOSED_BY: dict[Credential, str] = {"session": "console", "app_key": "console",
                                     "signed_link": "wcard", "system": "escalation"}
# Reference types whose detail has no fields (additionalProperties false).
_NO_FIELDS = {RESET_DESCRIPTION, RESET_IMPACT, RESET_ROOT_CAUSE, RESET_RESOLUTION,
              "i_m_reply", "i_auto_refresh"}


class Entry(NamedTuple):
    account_id: int
    incident_id: str
    feed_type: str
    detail: dict[str, Any]


def resolve_detail(reason: str) -> dict[str, Any]:
    """The detail of an i_rslv an incident wrote itself: the reference's `from`, and our
    own reason beside it."""
    return {"from": _RESOLVE_FROM.get(reason, RESOLVED_BY_RECOVERY), "reason": reason}


def closed_by_detail(actor: Actor) -> dict[str, Any]:
    """The detail of an i_rslv a caller wrote (/incident/resolve, the console, a link)."""
    return {"from": _CLOSED_BY[actor.credential]}


def assign_detail(assignment: dict[str, Any]) -> dict[str, Any]:
    """Reference FeedDetailIncidentAssign: the AssignedTo fields at the top, and the members
    who received the assignment under `to`."""
    return {**assignment, "to": list(assignment.get("person_ids", []))}


def reference_detail(feed_type: str, detail: Any) -> dict[str, Any]:
    """A stored detail in the shape of the reference's FeedDetail* schema of its type.
    Applied when reading, so entries written before the shapes were aligned read the same."""
    if not isinstance(detail, dict):
        return {}
    if feed_type in _NO_FIELDS:
        return {}
    if feed_type == ASSIGN and isinstance(detail.get("assigned_to"), dict):
        return assign_detail(detail["assigned_to"])
    if feed_type == ASSIGN and "to" not in detail:
        return assign_detail(detail)
    if feed_type == ADD_RESPONDER and "to" not in detail:
        return {**detail, "to": list(detail.get("person_ids", []))}
    if feed_type == RESOLVE and "from" not in detail:
        return {**detail, **resolve_detail(str(detail.get("reason", "")))}
    return detail


def add_sync(
    conn: Connection,
    *,
    incident_id: str,
    account_id: int,
    feed_type: str,
    creator_id: int,
    detail: dict[str, Any] | None = None,
    now_s: int,
) -> None:
    repo.insert_feed_entry(conn, {
        "incident_id": incident_id, "account_id": account_id, "type": feed_type,
        "creator_id": creator_id, "detail": msgspec.json.encode(detail or {}).decode(),
        "created_at": now_s,
    })


async def add_many(conn: AsyncConnection, entries: list[Entry], *, creator_id: int,
                   now_s: int) -> None:
    """Several entries by one creator (person 0: the system) at one time, in one insert;
    they may be of several accounts (a batch of deliveries)."""
    await conn.run_sync(repo.insert_feed_entries, [
        {"incident_id": e.incident_id, "account_id": e.account_id, "type": e.feed_type,
         "creator_id": creator_id, "detail": msgspec.json.encode(e.detail).decode(),
         "created_at": now_s}
        for e in entries
    ])


async def add(
    conn: AsyncConnection,
    actor: Actor,
    *,
    incident_id: str,
    feed_type: str,
    detail: dict[str, Any] | None = None,
) -> None:
    """One entry written by the actor (person 0 for the system: an escalation, a delivery),
    at the actor's time. `add_sync` is its twin for the ingestion hot path."""
    await conn.run_sync(
        add_sync, incident_id=incident_id, account_id=actor.account_id, feed_type=feed_type,
        creator_id=actor.person_id, detail=detail, now_s=actor.now_s,
    )
