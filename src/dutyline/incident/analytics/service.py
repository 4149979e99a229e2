"""Incident analytics for the insight domain: sums over the incidents a caller may see,
grouped in the database (see repository.py). This module owns what the incident tables mean
(progress, responders, the event stream); the insight domain owns the request, the figures
derived from these sums and their presentation.

Who may call is the caller's business (the insight endpoints check permissions); what is
counted is always limited to the caller's scope: the account, live incidents, and no private
channel the caller cannot see (incident/visibility.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.api.actor import Actor
from dutyline.incident import visibility
from dutyline.incident.analytics import repository as repo
from dutyline.incident.analytics.schemas import (
    Dimension,
    Filter,
    Grid,
    IncidentFacts,
    LabelTotals,
    Totals,
)
from dutyline.kit.vocabulary import CLOSED
from dutyline.platform.member import service as member_service
from dutyline.platform.team import service as team_service

__all__ = [
    "Dimension",
    "Filter",
    "Grid",
    "IncidentFacts",
    "LabelTotals",
    "Totals",
    "alert_label_totals_sync",
    "delivery_totals_sync",
    "incident_page_sync",
    "responder_totals_sync",
    "totals_sync",
]

_json = msgspec.json.Decoder()


def _totals(rows: list[dict[str, Any]]) -> list[Totals]:
    names = Totals.__slots__
    out: list[Totals] = []
    for row in rows:
        t = Totals()
        for n, v in row.items():
            if n in names:
                setattr(t, n, str(v or "") if n == "hours" else int(v or 0))
        out.append(t)
    return out


def totals_sync(conn: Connection, actor: Actor, *, filter: Filter, grid: Grid,
                by: Dimension) -> list[Totals]:
    """Sums per bucket (and hours, when split) for the account, each channel or each team."""
    scope = visibility.scope_sync(conn, actor)
    return _totals(repo.totals_sync(conn, scope, filter, grid, by))


def responder_totals_sync(conn: Connection, actor: Actor, *, filter: Filter,
                          grid: Grid) -> list[Totals]:
    """Sums per bucket (and hours) and responder: each person's share of the incidents they
    were responders of (assigned, or acknowledged)."""
    scope = visibility.scope_sync(conn, actor)
    return _totals(repo.responder_totals_sync(conn, scope, filter, grid))


def incident_page_sync(conn: Connection, actor: Actor, *, filter: Filter, asc: bool,
                       offset: int, limit: int,
                       with_total: bool = True) -> tuple[int, list[IncidentFacts]]:
    """A page of the filter's incidents with their handling figures, and the filter's total
    (-1 unless asked)."""
    scope = visibility.scope_sync(conn, actor)
    total = repo.incident_count_sync(conn, scope, filter) if with_total else -1
    rows = repo.incident_page_sync(conn, scope, filter, asc=asc, offset=offset, limit=limit)
    if not rows:
        return total, []
    teams = team_service.team_names_sync(conn, actor, {r.team_id for r in rows})
    creators = member_service.member_names_sync(conn, actor, {r.creator_id for r in rows})
    timeouts = repo.timeout_closed_ids_sync(
        conn, [r.incident_id for r in rows if r.progress == CLOSED and not r.closer_id])
    facts: dict[str, IncidentFacts] = {}
    for r in rows:
        facts[r.incident_id] = IncidentFacts(
            incident_id=r.incident_id, title=r.title, description=r.description,
            channel_id=r.channel_id, channel_name=r.channel_name, team_id=r.team_id,
            team_name=teams.get(r.team_id, ""), progress=r.progress,
            severity=r.incident_severity, start_time=r.start_time, ack_time=r.ack_time,
            close_time=r.close_time, closer_id=r.closer_id, creator_id=r.creator_id,
            creator_name=creators.get(r.creator_id, ("", ""))[0],
            timeout_closed=r.incident_id in timeouts,
            labels=_json.decode(r.labels), fields=_json.decode(r.fields),
            assigned_to=_json.decode(r.assigned_to), responders=_json.decode(r.responders),
        )
    for e in repo.event_counts_sync(conn, list(facts)):
        f = facts[e.incident_id]
        n = int(e.n)
        if e.kind == repo.ACKED:
            f.acknowledgements += n
            continue
        f.assignments += n
        if e.type == "reassign":
            f.reassignments += n
        elif e.type == "escalate":
            f.escalations += n
            if e.system:
                f.timeout_escalations += n
            else:
                f.manual_escalations += n
    people = {p["person_id"] for f in facts.values() for p in f.responders
              if isinstance(p, dict) and "person_id" in p}
    names = member_service.member_names_sync(conn, actor, people)
    for f in facts.values():
        for p in f.responders:
            name, email = names.get(p.get("person_id", 0), ("", ""))
            p["person_name"], p["email"] = name, email
    return total, list(facts.values())


def alert_label_totals_sync(conn: Connection, actor: Actor, *, filter: Filter,
                            grid: Grid, label: str, k: int, by_events: bool,
                            asc: bool) -> list[LabelTotals]:
    """The top k values of an alert label by alerts (or alert events) started in the
    window."""
    scope = visibility.scope_sync(conn, actor)
    rows = repo.alert_label_totals_sync(conn, scope, filter, grid, label=label, k=k,
                                         by_events=by_events, asc=asc)
    return [LabelTotals(label=str(r.label), hours=str(r.hours), alerts=int(r.alerts),
                        alert_events=int(r.alert_events)) for r in rows]




def delivery_totals_sync(conn: Connection, actor: Actor, *, start_time: int,
                         end_time: int, grid: Grid,
                         channel_ids: tuple[int, ...] = ()) -> dict[int, dict[str, int]]:
    """{bucket: {kind: deliveries}} of SMS, voice calls and e-mails made in the window (every
    delivery record, whatever became of it), of the incidents the caller may see."""
    scope = visibility.scope_sync(conn, actor)
    found: dict[int, dict[str, int]] = {}
    for r in repo.delivery_totals_sync(conn, scope, start_time=start_time, end_time=end_time,
                                        grid=grid, channel_ids=channel_ids):
        found.setdefault(int(r.bucket), {})[str(r.kind)] = int(r.n)
    return found
