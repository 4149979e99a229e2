"""What became of each event an integration received: the small, bounded record its console
page lists (the last events with their outcome).

Written in the push's own transaction (one short insert beside the event's rows), so a
rolled-back push records nothing of its own; a refused push (its transaction rolled back)
is recorded apart by the endpoint, after its rate limit, so a flood costs no more writes
than the limit lets through. About the last KEPT rows of an integration stay: one write in
PRUNE_EVERY, drawn at random, deletes the older ones (retention also removes rows older
than the alert events' retention)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from sqlalchemy import Connection

from dutyline.incident.ingest import repository as repo

KEPT = 50
PRUNE_EVERY = 10

OPENED = "opened"  # a new alert opened an incident
GROUPED = "grouped"  # joined an open incident, or updated an alert already in one
RECOVERED = "recovered"  # an Ok event of a firing alert
HELD = "held"  # a silence or an inhibit rule holds the alert back from an incident
DROPPED = "dropped"  # a drop rule or the integration's pipeline dropped it
IGNORED = "ignored"  # an Ok event of no firing alert: kept as an event, opens nothing
REFUSED = "refused"  # answered with an error, nothing stored

# Which push path an event came through (incident/ingest/endpoint.py), or the console's test.
SOURCES = ("standard", "prometheus", "grafana", "webhook", "test")


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str
    incident_id: str = ""
    reason: str = ""


def record(conn: Connection, *, account_id: int, integration_id: int, source: str,
           outcome: Outcome, title: str, alert_key: str, now_s: int) -> None:
    repo.insert_outcome(conn, {
        "account_id": account_id, "integration_id": integration_id, "received_at": now_s,
        "source": source[:16], "outcome": outcome.kind, "title": title[:512],
        "alert_key": alert_key[:255], "incident_id": outcome.incident_id,
        "reason": outcome.reason[:512],
    })
    # Not a secret: which write prunes only spreads the work.
    if random.randrange(PRUNE_EVERY) == 0:
        repo.prune_outcomes(conn, integration_id, KEPT)
