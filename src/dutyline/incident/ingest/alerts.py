"""Alert rows: find the active alert of a key, update or recover it, start a new one, and
record every push as an alert_event."""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.incident.ingest import repository as repo
from dutyline.incident.ingest.schemas import PushRequest
from dutyline.kit.ids import hex_id
from dutyline.kit.vocabulary import OK, SEVERITY_RANK
from dutyline.kit.vocabulary import worse as worst

__all__ = [
    "OK",
    "SEVERITY_RANK",
    "ActiveAlert",
    "active_channels",
    "add_event",
    "encode",
    "end_silently",
    "find_active",
    "insert_new",
    "new_event_id",
    "set_incident",
    "update_active",
    "worst",
]

_decode_labels = msgspec.json.Decoder(dict[str, str])

# Event ids are shaped like MongoDB ObjectIds (seconds, a random process part, a counter),
# so events of one alert sort in arrival order even within one second.
_PROCESS_PART = secrets.token_hex(5)
_event_counter = itertools.count(secrets.randbelow(1 << 20))


def new_event_id(now_s: int) -> str:
    return f"{now_s & 0xFFFFFFFF:08x}{_PROCESS_PART}{next(_event_counter) & 0xFFFFFF:06x}"


def encode(value: Any) -> str:
    return msgspec.json.encode(value).decode()


@dataclass(frozen=True, slots=True)
class ActiveAlert:
    alert_id: str
    incident_id: str | None
    severity: str  # worst seen while active
    labels: dict[str, str]
    incident_progress: str | None
    # What holds it back from an incident (incident/ingest/noise.py); "" when nothing.
    inhibit_rule_id: str = ""
    inhibited_by: str = ""
    silence_rule_id: str = ""


def find_active(
    conn: Connection, integration_id: int, channel_id: int, alert_key: str
) -> ActiveAlert | None:
    """The active alert of a key in a channel (a route may deliver one event to several),
    with its incident's progress. On PostgreSQL the alert row is locked, so concurrent
    pushes of one key queue here and no count or worst severity is lost; SQLite writers are
    serialized already."""
    row = repo.find_active_alert(conn, integration_id, channel_id, alert_key)
    if row is None:
        return None
    return ActiveAlert(row[0], row[1], row[2], _decode_labels.decode(row[3]), row[4],
                       row[5], row[6], row[7])


def active_channels(conn: Connection, integration_id: int, alert_key: str) -> list[int]:
    """The channels where a key of the integration has an active alert."""
    return repo.active_channels(conn, integration_id, alert_key)


def update_active(
    conn: Connection, active: ActiveAlert, req: PushRequest, *, title: str, now_s: int
) -> str:
    """Count the event on the alert (recovering it on Ok); returns its new worst severity.

    Labels merge (the event's values win, keys it leaves out stay); title and status follow
    the latest event; description and images only when the event carries them."""
    recovered = req.event_status == OK
    severity = active.severity if recovered else worst(active.severity, req.event_status)
    values: dict[str, Any] = {
        "last_time": now_s,
        "updated_at": now_s,
        "title": title,
        "title_rule": req.title_rule,
        "alert_status": req.event_status,
        "alert_severity": severity,
    }
    if req.labels and any(active.labels.get(k) != v for k, v in req.labels.items()):
        values["labels"] = encode({**active.labels, **req.labels})
    if req.description:
        values["description"] = req.description
    if req.images:
        values["images"] = encode(req.images)
    if recovered:
        values["end_time"] = now_s
    repo.update_active_alert(conn, active.alert_id, values)
    return severity


def insert_new(
    conn: Connection, *, account_id: int, channel_id: int, integration_id: int,
    alert_key: str, req: PushRequest, title: str, now_s: int,
    hold: dict[str, Any] | None = None,
) -> str | None:
    """Start an alert for the key; None when a concurrent push already holds the key's
    active slot (the partial unique index), and the caller updates that alert instead."""
    return repo.insert_alert(conn, {
        "alert_id": hex_id(), "account_id": account_id, "channel_id": channel_id,
        "integration_id": integration_id, "alert_key": alert_key, "title": title,
        "title_rule": req.title_rule, "description": req.description,
        "alert_severity": req.event_status, "alert_status": req.event_status,
        "labels": encode(req.labels), "images": encode(req.images), "event_cnt": 1,
        "start_time": now_s, "last_time": now_s, "end_time": 0, "created_at": now_s,
        "updated_at": now_s, **(hold or {}),
    })


def end_silently(conn: Connection, alert_id: str, *, now_s: int) -> None:
    """End an alert without an Ok event (its incident was closed while it still fired)."""
    repo.end_alert(conn, alert_id, now_s=now_s)


def set_incident(conn: Connection, alert_id: str, incident_id: str) -> None:
    repo.set_alert_incident(conn, alert_id, incident_id)


def add_event(
    conn: Connection, *, alert_id: str, account_id: int, channel_id: int,
    integration_id: int, req: PushRequest, title: str, now_s: int,
) -> None:
    # Events of an unknown key's Ok have no alert: alert_id "" records them all the same.
    repo.insert_event(conn, {
        "event_id": new_event_id(now_s), "alert_id": alert_id, "account_id": account_id,
        "channel_id": channel_id, "integration_id": integration_id,
        "event_status": req.event_status, "event_severity": req.event_status, "title": title,
        "description": req.description, "labels": encode(req.labels),
        "images": encode(req.images), "event_time": now_s, "created_at": now_s,
    })
