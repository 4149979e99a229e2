"""What each transition accepts and the column values it writes, computed here and nowhere
else. Pure: no connection, no clock (the time comes in as `now_s`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from dutyline.kit.vocabulary import (
    CLOSED,
    OK,
    OPEN,
    PROCESSING,
    PROGRESSES,
    TRIGGERED,
    worst_severity,
)

Values = dict[str, Any]


# --- preconditions --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Guard:
    """The incidents a transition accepts: those in one of `progress`, and with `snoozed`
    only those snoozed now. `refusal` is the reason an endpoint names with the refused ids."""

    refusal: str
    progress: tuple[str, ...] = PROGRESSES
    snoozed: bool = False

    def accepts(self, progress: str, snoozed_before: int, now_s: int) -> bool:
        return progress in self.progress and (not self.snoozed or snoozed_before > now_s)


ACKNOWLEDGE = Guard("only Triggered incidents can be acknowledged", (TRIGGERED,))
UNACKNOWLEDGE = Guard("only Processing incidents can be unacknowledged", (PROCESSING,))
RESOLVE = Guard("already Closed", OPEN)
REOPEN = Guard("only Closed incidents can be reopened", (CLOSED,))
SNOOZE = Guard("Closed incidents cannot be snoozed", OPEN)
WAKE = Guard("not snoozed", snoozed=True)
# The incident a merge (of incidents, or of alerts) joins.
MERGE_TARGET = Guard("the target is Closed", OPEN)


# --- values ---------------------------------------------------------------------------------


def opened(severity: str) -> Values:
    """A new incident's progress and status (the rest of its insert is creation's)."""
    return {"progress": TRIGGERED, **with_severity(severity)}


def with_severity(severity: str) -> Values:
    """An open incident's severity; its status follows it (the SQL twin, for ingestion's
    single statement, is repository.raised_severity)."""
    return {"incident_severity": severity, "incident_status": severity}


def severity_set(severity: str, progress: str) -> Values:
    """A person set the severity: an open incident's status follows it, a closed one's
    stays Ok."""
    return {"incident_severity": severity} if progress == CLOSED else with_severity(severity)


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


def closed(now_s: int, closer_id: int) -> Values:
    """Closing, whoever closes (`closer_id` 0: the system): the close times, status Ok, no
    snooze left, and no active alert (each close ends them, or they moved or had ended)."""
    return {
        "progress": CLOSED, "incident_status": OK, "close_time": now_s, "end_time": now_s,
        "closer_id": closer_id, "snoozed_before": 0, "active_alert_cnt": 0,
        "updated_at": now_s,
    }


def merged_away(target_id: str, now_s: int, closer_id: int, *, was_open: bool) -> Values:
    """A source of /incident/merge: its alerts moved to the target, so it counts none; an
    open one closes."""
    values: Values = {
        "merged_into": target_id, "alert_cnt": 0, "active_alert_cnt": 0,
        "alert_event_cnt": 0, "snoozed_before": 0, "updated_at": now_s,
    }
    if was_open:
        values.update(closed(now_s, closer_id))
    return values


def emptied(target_id: str, now_s: int, closer_id: int) -> Values:
    """An open incident every alert left by /alert/merge: closed as merged into the target."""
    return {**closed(now_s, closer_id), "merged_into": target_id}


def reopened(severity: str, now_s: int) -> Values:
    """Back to Triggered with the close fields cleared (assignment and responders are the
    caller's)."""
    return {
        "progress": TRIGGERED, "incident_status": severity, "close_time": 0, "end_time": 0,
        "closer_id": 0, "merged_into": None, "last_time": now_s, "updated_at": now_s,
    }


# --- responders (the `responders` JSON column) ----------------------------------------------

_json = msgspec.json.Decoder()


def dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def loads(text: str) -> Any:
    return _json.decode(text)


def responders_with_ack(text: str, person_id: int, now_s: int) -> list[dict[str, Any]]:
    """The caller acknowledges: their responder entry gets acknowledged_at (an acker who was
    not assigned joins the responders)."""
    responders: list[dict[str, Any]] = loads(text)
    for r in responders:
        if r.get("person_id") == person_id:
            r["acknowledged_at"] = now_s
            return responders
    responders.append({"person_id": person_id, "assigned_at": now_s, "acknowledged_at": now_s})
    return responders


def responders_unacked(text: str) -> list[dict[str, Any]]:
    responders: list[dict[str, Any]] = loads(text)
    for r in responders:
        r["acknowledged_at"] = 0
    return responders


def responders_adding(text: str, person_ids: Iterable[int], now_s: int) -> list[dict[str, Any]]:
    responders: list[dict[str, Any]] = loads(text)
    present = {r.get("person_id") for r in responders}
    for p in person_ids:
        if p not in present:
            responders.append({"person_id": p, "assigned_at": now_s, "acknowledged_at": 0})
            present.add(p)
    return responders
