"""The state machine's own writes (incident/state/transitions.py): sync, because ingestion
runs them inside its one sync connection, and the services reach them through `run_sync`."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Connection, bindparam, case, delete, func, select, update

from dutyline.db.tables.incident import alert, incident
from dutyline.db.tables.incident_noise import inhibit_source
from dutyline.kit.vocabulary import CLOSED, OK, SEVERITY_RANK


def update_incident(conn: Connection, incident_id: str, values: dict[str, Any]) -> None:
    conn.execute(update(incident).where(incident.c.incident_id == incident_id).values(values))


def close_incident(conn: Connection, incident_id: str, values: dict[str, Any], *,
                   if_last_time_at_most: int | None = None) -> bool:
    """Set these values on the incident unless it is closed (or had an event after
    `if_last_time_at_most`); whether it did."""
    conditions = [incident.c.incident_id == incident_id, incident.c.progress != CLOSED]
    if if_last_time_at_most is not None:
        conditions.append(incident.c.last_time <= if_last_time_at_most)
    return conn.execute(update(incident).where(*conditions).values(values)).rowcount == 1


_ACTIVE_OF = (select(alert.c.alert_id)
              .where(alert.c.incident_id == bindparam("of_incident"), alert.c.end_time == 0))
_UNINDEX_ACTIVE = delete(inhibit_source).where(inhibit_source.c.alert_id.in_(_ACTIVE_OF))
_END_ACTIVE = (update(alert)
               .where(alert.c.incident_id == bindparam("of_incident"), alert.c.end_time == 0)
               .values(end_time=bindparam("ended_at"), alert_status=OK,
                       updated_at=bindparam("ended_at")))


def end_active_alerts(conn: Connection, incident_id: str, *, now_s: int) -> int:
    """End the incident's active alerts as recovered: they are nobody's inhibit source any
    more (incident/ingest/noise.py). Returns how many were active. Every close that ends
    alerts ends them here."""
    conn.execute(_UNINDEX_ACTIVE, {"of_incident": incident_id})
    result = conn.execute(_END_ACTIVE, {"of_incident": incident_id, "ended_at": now_s})
    return int(result.rowcount or 0)


def active_alert_severities(conn: Connection, incident_id: str) -> list[str]:
    """The severities of the incident's active (not removed) alerts."""
    rows = conn.execute(select(alert.c.alert_severity).where(
        alert.c.incident_id == incident_id, alert.c.end_time == 0, alert.c.deleted_at == 0))
    return [r[0] for r in rows]


def set_open_incident_values(conn: Connection, incident_id: str,
                             values: dict[str, Any]) -> None:
    """Set these values on the incident unless it is closed."""
    conn.execute(update(incident)
                 .where(incident.c.incident_id == incident_id, incident.c.progress != CLOSED)
                 .values(values))


def alert_counts(conn: Connection, incident_id: str) -> tuple[int, int, int]:
    """(alerts, active alerts, alert events) of an incident, counted from its alerts."""
    stmt = select(
        func.count(),
        func.coalesce(func.sum(case((alert.c.end_time == 0, 1), else_=0)), 0),
        func.coalesce(func.sum(alert.c.event_cnt), 0),
    ).where(alert.c.incident_id == incident_id, alert.c.deleted_at == 0)
    total, active, events = conn.execute(stmt).one()
    return int(total), int(active), int(events)


def move_incidents_alerts(conn: Connection, source_ids: list[str], target_id: str,
                          now_s: int) -> None:
    conn.execute(update(alert).where(alert.c.incident_id.in_(source_ids))
                 .values(incident_id=target_id, updated_at=now_s))


def move_alerts(conn: Connection, alert_ids: list[str], target_id: str, now_s: int) -> None:
    conn.execute(update(alert).where(alert.c.alert_id.in_(alert_ids))
                 .values(incident_id=target_id, updated_at=now_s))


# -- severity follows status, as SQL: the values of an UPDATE that ingestion runs as one
# statement (incident/ingest/repository.py builds it once per severity and caches it)


def _rank(column: Any) -> Any:
    return case(SEVERITY_RANK, value=column, else_=0)


@functools.cache
def raised_severity(severity: str) -> dict[str, Any]:
    """Values that raise the incident's severity to `severity` if that is worse; the
    status follows the severity while the incident is open and stays Ok once closed
    (values.with_severity, in SQL)."""
    raised = case(
        (_rank(incident.c.incident_severity) < SEVERITY_RANK[severity], severity),
        else_=incident.c.incident_severity,
    )
    return {
        "incident_severity": raised,
        "incident_status": case(
            (incident.c.progress == CLOSED, incident.c.incident_status), else_=raised
        ),
    }
