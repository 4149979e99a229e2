"""The transitions: each checks its precondition, writes its values and its alert side effects,
and records its feed entry and event, in the caller's transaction. Sync functions of a
`Connection`: ingestion calls them on its own sync connection, services through
`await conn.run_sync(state.<transition>, ...)`.

The transitions a person makes take the incident rows the service read and locked, and the
actor; they refuse the whole batch (naming the ids) before the first write. The system's own
(close, severity) take ids and guard in their SQL, so a push stays one statement where it was.

Every close goes through `_close`: one UPDATE guarded on "not closed", the active alerts
ended by one query (repository.end_active_alerts), and one `resolved` event whose payload
names why (`reason`), so whoever paged or told of the incident hears that it closed,
however it closed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.incident import events, feed
from dutyline.incident.state import repository as repo
from dutyline.incident.state import values as v
from dutyline.kit.ids import hex_id
from dutyline.kit.vocabulary import CLOSED, PROCESSING, TRIGGERED, worst_severity

# Why an incident closed: the `reason` of its `resolved` event.
RECOVERED = "all alerts recovered"
TIMED_OUT = "auto_resolve_timeout"
BY_HAND = "resolved"
MERGED = "merged"

Row = Any  # an incident row (sqlalchemy Row) as the lifecycle repository locked it


class By(NamedTuple):
    """Who makes a change (person 0: the system), in which account, when."""

    account_id: int
    person_id: int
    now_s: int


def by(actor: Actor) -> By:
    return By(actor.account_id, actor.person_id, actor.now_s)


def require(rows: Sequence[Row], guard: v.Guard, now_s: int,
            field: str = "incident_ids") -> None:
    """Refuse the batch, naming every incident the transition does not accept."""
    wrong = [r.incident_id for r in rows
             if not guard.accepts(r.progress, r.snoozed_before, now_s)]
    if wrong:
        raise errors.InvalidParameter(
            "Invalid parameter {field}: {reason}: {ids}", field=field, reason=guard.refusal,
            ids=", ".join(wrong))


def record(conn: Connection, who: By, incident_id: str, channel_id: int, *,
           feed_type: str | None, detail: dict[str, Any], kind: str,
           payload: dict[str, Any] | None = None) -> None:
    """The feed entry (who, when, what) and the event of one change of one incident."""
    if feed_type is not None:
        feed.add_sync(conn, incident_id=incident_id, account_id=who.account_id,
                      feed_type=feed_type, creator_id=who.person_id, detail=detail,
                      now_s=who.now_s)
    events.emit_sync(conn, account_id=who.account_id, incident_id=incident_id, kind=kind,
                     now_s=who.now_s, person_id=who.person_id,
                     payload={"channel_id": channel_id, **(payload or {})})


def _close(conn: Connection, who: By, incident_id: str, channel_id: int, values: v.Values, *,
           reason: str, end_alerts: bool, feed_detail: dict[str, Any] | None,
           extra: dict[str, Any] | None = None,
           if_last_time_at_most: int | None = None) -> bool:
    """Close the incident unless it is closed already; whether it did. `end_alerts`: end
    its active alerts with it (else the caller knows none is left: they recovered or
    moved). `feed_detail`: its i_rslv entry (None: the caller's own entry tells it)."""
    if not repo.close_incident(conn, incident_id, values,
                               if_last_time_at_most=if_last_time_at_most):
        return False
    recovered = repo.end_active_alerts(conn, incident_id, now_s=who.now_s) if end_alerts else 0
    record(conn, who, incident_id, channel_id,
           feed_type=None if feed_detail is None else feed.RESOLVE, detail=feed_detail or {},
           kind=events.RESOLVED, payload={"progress": CLOSED, "reason": reason,
                                          "recovered_alerts": recovered, **(extra or {})})
    return True


# --- open -----------------------------------------------------------------------------------


def begin(conn: Connection, who: By, incident_id: str, channel_id: int, *, severity: str,
          detail: dict[str, Any]) -> None:
    """An incident was inserted with values.opened (creation.py draws its number): its
    i_new entry and `created` event."""
    record(conn, who, incident_id, channel_id, feed_type=feed.NEW, detail=detail,
           kind=events.CREATED, payload={"severity": severity})


# --- a person's transitions -----------------------------------------------------------------


def acknowledge(conn: Connection, actor: Actor, rows: Sequence[Row]) -> list[str]:
    who = by(actor)
    require(rows, v.ACKNOWLEDGE, who.now_s)
    for row in rows:
        repo.update_incident(conn, row.incident_id, {
            **v.acked(row.ack_time, who.now_s),
            "responders": v.dumps(v.responders_with_ack(row.responders, who.person_id,
                                                        who.now_s)),
        })
        record(conn, who, row.incident_id, row.channel_id, feed_type=feed.ACK, detail={},
               kind=events.ACKED, payload={"progress": PROCESSING})
    return [r.incident_id for r in rows]


def unacknowledge(conn: Connection, actor: Actor, rows: Sequence[Row]) -> list[str]:
    who = by(actor)
    require(rows, v.UNACKNOWLEDGE, who.now_s)
    for row in rows:
        repo.update_incident(conn, row.incident_id, {
            **v.unacked(who.now_s),
            "responders": v.dumps(v.responders_unacked(row.responders)),
        })
        record(conn, who, row.incident_id, row.channel_id, feed_type=feed.UNACK, detail={},
               kind=events.UNACKED, payload={"progress": TRIGGERED})
    return [r.incident_id for r in rows]


def snooze(conn: Connection, actor: Actor, rows: Sequence[Row], *, minutes: int) -> list[str]:
    who = by(actor)
    require(rows, v.SNOOZE, who.now_s)
    until = who.now_s + minutes * 60
    for row in rows:
        repo.update_incident(conn, row.incident_id, v.snoozed(until, who.now_s))
        record(conn, who, row.incident_id, row.channel_id, feed_type=feed.SNOOZE,
               detail={"minutes": minutes}, kind=events.SNOOZED,
               payload={"snoozed_before": until})
    return [r.incident_id for r in rows]


def wake(conn: Connection, actor: Actor, rows: Sequence[Row]) -> list[str]:
    who = by(actor)
    require(rows, v.WAKE, who.now_s)
    for row in rows:
        repo.update_incident(conn, row.incident_id, v.woken(who.now_s))
        record(conn, who, row.incident_id, row.channel_id, feed_type=feed.WAKE,
               detail={"snoozedBefore": row.snoozed_before}, kind=events.WOKEN)
    return [r.incident_id for r in rows]


def resolve(conn: Connection, actor: Actor, rows: Sequence[Row], *,
            root_cause: str | None = None, resolution: str | None = None) -> list[str]:
    """A person closes: the incidents' active alerts end with them."""
    who = by(actor)
    require(rows, v.RESOLVE, who.now_s)
    notes = {k: text for k, text in (("root_cause", root_cause), ("resolution", resolution))
             if text is not None}
    detail = feed.closed_by_detail(actor)
    for row in rows:
        _close(conn, who, row.incident_id, row.channel_id,
               {**v.closed(who.now_s, who.person_id), **notes}, reason=BY_HAND,
               end_alerts=True, feed_detail=detail)
    return [r.incident_id for r in rows]


def reopen(conn: Connection, actor: Actor, rows: Sequence[Row], *, reason: str) -> list[str]:
    """Back to Triggered with the close fields cleared, and a new assignment of type
    `reopen` for the escalation engine."""
    who = by(actor)
    require(rows, v.REOPEN, who.now_s)
    for row in rows:
        previous: dict[str, Any] = v.loads(row.assigned_to)
        assignment = {**previous, "type": "reopen", "assigned_at": who.now_s, "id": hex_id()}
        repo.update_incident(conn, row.incident_id, {
            **v.reopened(row.incident_severity, who.now_s),
            "assigned_to": v.dumps(assignment),
            "responders": v.dumps(v.responders_unacked(row.responders)),
        })
        record(conn, who, row.incident_id, row.channel_id, feed_type=feed.REOPEN,
               detail={"reason": reason}, kind=events.REOPENED,
               payload={"progress": TRIGGERED, "reason": reason,
                        "severity": row.incident_severity, "assignment": assignment})
    return [r.incident_id for r in rows]


# --- merges ---------------------------------------------------------------------------------


def merge_away(conn: Connection, actor: Actor, sources: Sequence[Row], target_id: str, *,
               remove: bool, detail: dict[str, Any]) -> None:
    """Sources of /incident/merge: their alerts move to the target; each is marked
    merged into it (and removed with `remove`), with its i_merge entry (`detail`) and
    `merged` event; an open one closes."""
    who = by(actor)
    repo.move_incidents_alerts(conn, [s.incident_id for s in sources], target_id, who.now_s)
    for source in sources:
        was_open = source.progress != CLOSED
        values = v.merged_away(target_id, who.now_s, who.person_id, was_open=was_open)
        if remove:
            values["deleted_at"] = who.now_s
        record(conn, who, source.incident_id, source.channel_id, feed_type=feed.MERGE,
               detail=detail, kind=events.MERGED,
               payload={"role": "source", "target_incident_id": target_id,
                        "closed": was_open})
        if was_open:
            _close(conn, who, source.incident_id, source.channel_id, values, reason=MERGED,
                   end_alerts=False, feed_detail=None, extra={"merged_into": target_id})
        else:
            repo.update_incident(conn, source.incident_id, values)


def counts(conn: Connection, incident_id: str) -> v.Values:
    """An incident's alert counters, counted from its alerts."""
    alert_cnt, active, event_cnt = repo.alert_counts(conn, incident_id)
    return {"alert_cnt": alert_cnt, "active_alert_cnt": active, "alert_event_cnt": event_cnt}


def recounted(conn: Connection, row: Row, now_s: int) -> v.Values:
    """An incident whose alerts changed (some joined or left): its counters, and its
    severity (values.recomputed_severity)."""
    return {**counts(conn, row.incident_id), "updated_at": now_s,
            **v.recomputed_severity(repo.active_alert_severities(conn, row.incident_id),
                                    row.progress)}


def alerts_joined(conn: Connection, actor: Actor, target: Row, alert_ids: list[str], *,
                  changes: v.Values) -> v.Values:
    """Alerts of /alert/merge join the open target (`alert_ids`: those not in it already):
    they move, and it is recounted (its severity follows its alerts) and takes `changes`
    (title, owner, last_time). Returns what it wrote; its entry is the caller's, which
    names the incidents the alerts left too."""
    who = by(actor)
    require([target], v.MERGE_TARGET, who.now_s, "incident_id")
    if alert_ids:
        repo.move_alerts(conn, alert_ids, target.incident_id, who.now_s)
    values = {**recounted(conn, target, who.now_s), **changes}
    repo.update_incident(conn, target.incident_id, values)
    return values


def alerts_left(conn: Connection, actor: Actor, source: Row, target_id: str, *,
                alert_ids: list[str], detail: dict[str, Any]) -> None:
    """Alerts left `source` for the target of /alert/merge (they moved already): it is
    recounted, with its a_merge entry (`detail`) and `alerts_merged` event; an open one
    left with no alert at all closes as merged into the target."""
    who = by(actor)
    values = recounted(conn, source, who.now_s)
    emptied = values["alert_cnt"] == 0 and source.progress != CLOSED
    record(conn, who, source.incident_id, source.channel_id, feed_type=feed.ALERT_MERGE,
           detail=detail, kind=events.ALERTS_MERGED,
           payload={"role": "source", "alert_ids": alert_ids,
                    "target_incident_id": target_id, "closed": emptied})
    if emptied:
        _close(conn, who, source.incident_id, source.channel_id,
               {**values, **v.emptied(target_id, who.now_s, who.person_id)}, reason=MERGED,
               end_alerts=False, feed_detail=None, extra={"merged_into": target_id})
    else:
        repo.update_incident(conn, source.incident_id, values)


# --- the system's transitions (ingestion's hot path, the auto-resolve timer) ---------------


def close(conn: Connection, *, incident_id: str, account_id: int, channel_id: int, now_s: int,
          reason: str, end_alerts: bool = False,
          if_last_time_at_most: int | None = None) -> bool:
    """Close an incident on the system's behalf: its alerts recovered (RECOVERED: none is
    active), or the channel's timeout passed (TIMED_OUT, with `end_alerts`: the next event
    of those keys starts fresh). `if_last_time_at_most` guards against an event that
    arrived after the caller looked. Returns whether it closed."""
    return _close(conn, By(account_id, 0, now_s), incident_id, channel_id, v.closed(now_s, 0),
                  reason=reason, end_alerts=end_alerts, feed_detail=feed.resolve_detail(reason),
                  if_last_time_at_most=if_last_time_at_most)


def recompute_severity(conn: Connection, incident_id: str) -> None:
    """An alert of the open incident recovered and others are still active: the incident's
    severity becomes the worst of those. (A joining or worsening alert raises it in
    ingestion's own UPDATE: repository.raised_severity.)"""
    worst = worst_severity(repo.active_alert_severities(conn, incident_id))
    if worst is not None:
        repo.set_open_incident_values(conn, incident_id, v.with_severity(worst))
