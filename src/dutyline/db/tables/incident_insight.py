"""Indexes of the incident tables for the analytics reads (incident/analytics, which the
/insight/* operations call), migration 0008.

Insights add no table of their own: every figure is an aggregate over `incident` and its
event stream. These indexes live in their own module (the incident table module is busy with
other work) and attach to the incident tables when it is imported (db/tables/__init__.py)."""

from __future__ import annotations

from sqlalchemy import ColumnElement, Index, and_, literal_column

from dutyline.db.tables.incident import incident, incident_event

# /insight/account|channel|team and their exports: every column the aggregate reads, after the
# window's prefix, so a window is one range of this index and never a table lookup per
# incident (bench/insight.py: 100,000 incidents).
ix_incident_insight = Index(
    "ix_incident_insight",
    incident.c.account_id, incident.c.deleted_at, incident.c.start_time,
    incident.c.channel_id, incident.c.incident_severity, incident.c.progress,
    incident.c.ack_time, incident.c.close_time, incident.c.closer_id,
    incident.c.alert_cnt, incident.c.alert_event_cnt,
    incident.c.incident_id,  # joins the event-stream flags without a lookup of the row
)

# The per-incident flags (escalated, reassigned, closed by the auto-resolve timeout, reopened)
# come from the incident event stream. Reading every assignment's and close's payload costs a
# table lookup per event (0.6 s for 100,000 incidents on SQLite); these partial indexes hold
# only the few events that raise a flag, so the flags are index-only reads. The predicates
# match the payloads as the incident package writes them (msgspec: compact JSON), and the
# queries (incident/analytics/repository.py) repeat them word for word, literals included,
# which is what lets both databases use a partial index.
_ev = incident_event.c
ESCALATION: ColumnElement[bool] = and_(
    _ev.kind == literal_column("'assigned'"),
    _ev.payload.like(literal_column("""'%"type":"escalate"%'""")))
REASSIGNMENT: ColumnElement[bool] = and_(
    _ev.kind == literal_column("'assigned'"),
    _ev.payload.like(literal_column("""'%"type":"reassign"%'""")))
TIMEOUT_CLOSE: ColumnElement[bool] = and_(
    _ev.kind == literal_column("'resolved'"),
    _ev.payload.like(literal_column("""'%"reason":"auto_resolve_timeout"%'""")))
REOPEN: ColumnElement[bool] = _ev.kind == literal_column("'reopened'")


def _flag_index(name: str, where: ColumnElement[bool]) -> Index:
    return Index(name, _ev.account_id, _ev.created_at, _ev.incident_id, _ev.person_id, _ev.id,
                 sqlite_where=where, postgresql_where=where)


ix_incident_event_escalations = _flag_index("ix_incident_event_escalations", ESCALATION)
ix_incident_event_reassignments = _flag_index("ix_incident_event_reassignments", REASSIGNMENT)
ix_incident_event_timeout_closes = _flag_index("ix_incident_event_timeout_closes", TIMEOUT_CLOSE)
ix_incident_event_reopens = _flag_index("ix_incident_event_reopens", REOPEN)
