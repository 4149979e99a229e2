"""The incident state machine: the column values every transition writes, computed here and
nowhere else, and the entry points the system's own transitions take.

    Triggered -(ack)-> Processing -(unack)-> Triggered
    Triggered | Processing -(close: resolve, recovery, auto-resolve, merge)-> Closed
    Closed -(reopen)-> Triggered
    snooze / wake: open incidents only; closing ends a snooze.
    severity: while open, the worst of its active alerts (kept when none is active); the
    status follows the severity while open and reads Ok once closed.

The value builders are pure (they check no precondition: each caller refuses what the
transition does not accept, with the error its endpoint names). The system's close and the
severity recompute run on the hot ingest path inside a sync `Connection`; their async entry
points reach the same code through `run_sync`, as `creation.open_incident` does."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.incident import events, feed
from dutyline.incident import repository as repo
from dutyline.kit.vocabulary import (
    CLOSED,
    OK,
    PROCESSING,
    TRIGGERED,
    worst_severity,
)

Values = dict[str, Any]


def opened(severity: str) -> Values:
    """A new incident's progress and status (the rest of its insert is creation's)."""
    return {"progress": TRIGGERED, **with_severity(severity)}


def with_severity(severity: str) -> Values:
    """An open incident's severity; its status follows it."""
    return {"incident_severity": severity, "incident_status": severity}


def recomputed_severity(severities: Iterable[str], progress: str) -> Values:
    """The severity of an incident whose alerts changed: the worst active one while open;
    nothing when it is closed or no alert is active."""
    worst = worst_severity(severities)
    return {} if worst is None or progress == CLOSED else with_severity(worst)


def acked(ack_time: int, now_s: int) -> Values:
    # ack_time is when the incident's current acknowledgement began: an ack of an
    # acknowledged incident keeps it; an unack clears it, so the next ack sets it anew.
    return {"progress": PROCESSING, "ack_time": ack_time or now_s, "updated_at": now_s}


def unacked(now_s: int) -> Values:
    return {"progress": TRIGGERED, "ack_time": 0, "updated_at": now_s}


def snoozed(until_s: int, now_s: int) -> Values:
    return {"snoozed_before": until_s, "updated_at": now_s}


def woken(now_s: int) -> Values:
    return {"snoozed_before": 0, "updated_at": now_s}


def closed(now_s: int, closer_id: int, *, alerts_ended: bool) -> Values:
    """Closing, whoever closes (`closer_id` 0: the system): the close times, status Ok, and
    no snooze left. `alerts_ended`: its active alerts ended with it (none is left active)."""
    values: Values = {
        "progress": CLOSED, "incident_status": OK, "close_time": now_s, "end_time": now_s,
        "closer_id": closer_id, "snoozed_before": 0, "updated_at": now_s,
    }
    if alerts_ended:
        values["active_alert_cnt"] = 0
    return values


def merged_away(target_id: str, now_s: int, closer_id: int, *, was_open: bool) -> Values:
    """A source of /incident/merge: its alerts moved to the target, so it counts none; an
    open one closes."""
    values: Values = {
        "merged_into": target_id, "alert_cnt": 0, "active_alert_cnt": 0,
        "alert_event_cnt": 0, "snoozed_before": 0, "updated_at": now_s,
    }
    if was_open:
        values.update(closed(now_s, closer_id, alerts_ended=True))
    return values


def emptied(target_id: str, now_s: int, closer_id: int) -> Values:
    """An open incident every alert left by /alert/merge: closed as merged into the target."""
    return {**closed(now_s, closer_id, alerts_ended=True), "merged_into": target_id}


def reopened(severity: str, now_s: int) -> Values:
    """Back to Triggered with the close fields cleared (assignment and responders are the
    caller's)."""
    return {
        "progress": TRIGGERED, "incident_status": severity, "close_time": 0, "end_time": 0,
        "closer_id": 0, "merged_into": None, "last_time": now_s, "updated_at": now_s,
    }


# --- entry points of the system's transitions (sync: the hot ingest path) -------------------


def close_sync(
    conn: Connection, *, incident_id: str, account_id: int, now_s: int, reason: str,
    recover_alerts: bool = False, if_last_time_at_most: int | None = None,
) -> bool:
    """Close an incident on the system's behalf. `recover_alerts` also ends its active alerts
    (a timeout: the next event of those keys starts fresh). `if_last_time_at_most` guards
    against an event that arrived after the caller looked. Returns whether it closed."""
    values = closed(now_s, 0, alerts_ended=recover_alerts)
    if not repo.close_incident(conn, incident_id, values,
                               if_last_time_at_most=if_last_time_at_most):
        return False
    if recover_alerts:
        repo.end_active_alerts(conn, incident_id, now_s=now_s)
    feed.add_sync(
        conn, incident_id=incident_id, account_id=account_id, feed_type=feed.RESOLVE,
        creator_id=0, detail=feed.resolve_detail(reason), now_s=now_s,
    )
    events.emit_sync(
        conn, account_id=account_id, incident_id=incident_id, kind=events.RESOLVED,
        now_s=now_s, payload={"reason": reason},
    )
    return True


async def close(
    conn: AsyncConnection, *, incident_id: str, account_id: int, now_s: int, reason: str,
    recover_alerts: bool = False, if_last_time_at_most: int | None = None,
) -> bool:
    return await conn.run_sync(
        lambda sync: close_sync(sync, incident_id=incident_id, account_id=account_id,
                                now_s=now_s, reason=reason, recover_alerts=recover_alerts,
                                if_last_time_at_most=if_last_time_at_most))


def recompute_severity_sync(conn: Connection, incident_id: str) -> None:
    """An alert of the open incident recovered and others are still active: the incident's
    severity becomes the worst of those."""
    worst = worst_severity(repo.active_alert_severities(conn, incident_id))
    if worst is not None:
        repo.set_open_incident_values(conn, incident_id, with_severity(worst))


async def recompute_severity(conn: AsyncConnection, incident_id: str) -> None:
    await conn.run_sync(recompute_severity_sync, incident_id)
