"""Alert rows: find the active alert of a key, update or recover it, start a new one, and
record every push as an alert_event."""

from __future__ import annotations

import functools
import itertools
import secrets
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection, bindparam, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from dutyline.db.tables.incident import alert, alert_event, incident
from dutyline.incident.ingest.schemas import PushRequest
from dutyline.kit.ids import hex_id

SEVERITY_RANK = {"Ok": 0, "Info": 1, "Warning": 2, "Critical": 3}
OK = "Ok"

_decode_labels = msgspec.json.Decoder(dict[str, str])

# Event ids are shaped like MongoDB ObjectIds (seconds, a random process part, a counter),
# so events of one alert sort in arrival order even within one second.
_PROCESS_PART = secrets.token_hex(5)
_event_counter = itertools.count(secrets.randbelow(1 << 20))


def new_event_id(now_s: int) -> str:
    return f"{now_s & 0xFFFFFFFF:08x}{_PROCESS_PART}{next(_event_counter) & 0xFFFFFF:06x}"


def worst(a: str, b: str) -> str:
    return a if SEVERITY_RANK.get(a, 0) >= SEVERITY_RANK.get(b, 0) else b


def encode(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _insert(conn: Connection) -> Any:
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert


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


# Statements on every push are built once with bound parameters: building them per call
# (and SQLAlchemy regenerating their cache keys) was over a third of a push's CPU.
_FIND_ACTIVE = (
    select(
        alert.c.alert_id, alert.c.incident_id, alert.c.alert_severity, alert.c.labels,
        incident.c.progress, alert.c.inhibit_rule_id, alert.c.inhibited_by,
        alert.c.silence_rule_id,
    )
    .select_from(alert.outerjoin(incident, incident.c.incident_id == alert.c.incident_id))
    .where(
        alert.c.integration_id == bindparam("integration_id"),
        alert.c.alert_key == bindparam("alert_key"),
        alert.c.end_time == 0,
    )
    .with_for_update(of=alert)
)
_INSERT_EVENT = alert_event.insert()


@functools.cache
def _update_statement(columns: frozenset[str]) -> Any:
    """UPDATE of an active alert setting `columns` (bound as v_<name>) and counting one
    event; one cached statement per combination of optional columns."""
    values: dict[str, Any] = {name: bindparam(f"v_{name}") for name in sorted(columns)}
    values["event_cnt"] = alert.c.event_cnt + 1
    return update(alert).where(alert.c.alert_id == bindparam("v_alert_id")).values(values)


def find_active(
    conn: Connection, integration_id: int, alert_key: str
) -> ActiveAlert | None:
    """The active alert of a key, with its incident's progress. On PostgreSQL the alert row
    is locked, so concurrent pushes of one key queue here and no count or worst severity is
    lost; SQLite writers are serialized already."""
    params = {"integration_id": integration_id, "alert_key": alert_key}
    row = conn.execute(_FIND_ACTIVE, params).first()
    if row is None:
        return None
    return ActiveAlert(row[0], row[1], row[2], _decode_labels.decode(row[3]), row[4],
                       row[5], row[6], row[7])


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
    params = {f"v_{name}": value for name, value in values.items()}
    params["v_alert_id"] = active.alert_id
    conn.execute(_update_statement(frozenset(values)), params)
    return severity


def insert_new(
    conn: Connection, *, account_id: int, channel_id: int, integration_id: int,
    alert_key: str, req: PushRequest, title: str, now_s: int,
    hold: dict[str, Any] | None = None,
) -> str | None:
    """Start an alert for the key; None when a concurrent push already holds the key's
    active slot (the partial unique index), and the caller updates that alert instead."""
    alert_id = hex_id()
    stmt = (
        _insert(conn)(alert)
        .values(
            alert_id=alert_id, account_id=account_id, channel_id=channel_id,
            integration_id=integration_id, alert_key=alert_key, title=title,
            title_rule=req.title_rule, description=req.description,
            alert_severity=req.event_status, alert_status=req.event_status,
            labels=encode(req.labels), images=encode(req.images), event_cnt=1,
            start_time=now_s, last_time=now_s, end_time=0, created_at=now_s, updated_at=now_s,
            **(hold or {}),
        )
        .on_conflict_do_nothing(
            index_elements=[alert.c.integration_id, alert.c.alert_key],
            # A literal, not a bound parameter: PostgreSQL infers the partial index from this
            # predicate, and once asyncpg's prepared statement switches to a generic plan a
            # `$1` no longer implies `end_time = 0` ("no unique or exclusion constraint
            # matching the ON CONFLICT specification" from the sixth new alert on).
            index_where=text("end_time = 0"),
        )
        .returning(alert.c.alert_id)
    )
    row = conn.execute(stmt).first()
    return None if row is None else str(row[0])


def end_silently(conn: Connection, alert_id: str, *, now_s: int) -> None:
    """End an alert without an Ok event (its incident was closed while it still fired)."""
    conn.execute(
        update(alert)
        .where(alert.c.alert_id == alert_id, alert.c.end_time == 0)
        .values(end_time=now_s, updated_at=now_s)
    )


def set_incident(conn: Connection, alert_id: str, incident_id: str) -> None:
    conn.execute(
        update(alert).where(alert.c.alert_id == alert_id).values(incident_id=incident_id)
    )


def add_event(
    conn: Connection, *, alert_id: str, account_id: int, channel_id: int,
    integration_id: int, req: PushRequest, title: str, now_s: int,
) -> None:
    # Events of an unknown key's Ok have no alert: alert_id "" records them all the same.
    conn.execute(_INSERT_EVENT, {
        "event_id": new_event_id(now_s), "alert_id": alert_id, "account_id": account_id,
        "channel_id": channel_id, "integration_id": integration_id,
        "event_status": req.event_status, "event_severity": req.event_status, "title": title,
        "description": req.description, "labels": encode(req.labels),
        "images": encode(req.images), "event_time": now_s, "created_at": now_s,
    })
