"""Ingesting one pushed event: check its key, find or start its alert, count it, group the
alert into an incident. Everything runs in one transaction, committed before the 200, so a
process killed right after answering has lost nothing.

This is plain code of a sync connection (see Database.run_sync): on SQLite a whole batch of
pushes runs on the database thread in one hop."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
from collections.abc import Sequence
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INTEGRATION_MANAGE, INTEGRATION_VIEW
from dutyline.channel.noise import service as noise_rules
from dutyline.channel.pipeline import service as pipeline
from dutyline.channel.route import service as routes
from dutyline.enrichment import service as enrichment
from dutyline.incident.ingest import alerts, grouping, noise, outcomes
from dutyline.incident.ingest import repository as repo
from dutyline.incident.ingest.alerts import OK
from dutyline.incident.ingest.channels import (
    CHANGE_INTEGRATION,
    IngestSettings,
    Lookup,
    ResolvedIntegration,
    alert_key_hash_sync,
    lookup,
    routed_settings_sync,
)
from dutyline.incident.ingest.schemas import IntakeOutcome, TestAlertResponse
from dutyline.incident.ingest.schemas import PushRequest as PushRequest  # for other domains
from dutyline.kit.vocabulary import CRITICAL

BAD_KEY = "Missing or invalid integration_key"
CHANNEL_OFF = "Channel {channel_id} is {status} and does not accept alerts"

_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}|\$([A-Za-z_][A-Za-z0-9_.\-]*)")
# A key that changes hands more often than this within one push means something is badly
# wrong; fail the request rather than loop.
_MAX_ATTEMPTS = 3


def derive_alert_key(title_rule: str, labels: dict[str, str]) -> str:
    """The key of an event that brings none: the same title rule and labels, the same key."""
    h = hashlib.blake2b(digest_size=16)
    h.update(title_rule.encode())
    for name in sorted(labels):
        h.update(b"\x00" + name.encode() + b"\x01" + labels[name].encode())
    return h.hexdigest()


def render_title(title_rule: str, labels: dict[str, str]) -> str:
    """`$service::${cluster}` -> label values; unknown placeholders stay as written."""
    if "$" not in title_rule:
        return title_rule

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        value = labels.get(name)
        return m.group(0) if value is None else value

    return _PLACEHOLDER.sub(sub, title_rule)[:512]


def takes_alerts(found: Lookup) -> bool:
    """A change integration's key pushes change events only: on an alert path it is as
    unknown as a wrong key."""
    return found.integration.integration_type != CHANGE_INTEGRATION


def check_integration(conn: Connection, key_hash: str) -> tuple[ResolvedIntegration,
                                                                 IngestSettings]:
    """The key's live integration and its channel's settings: 401 for an unknown, deleted
    or revoked key, 400 when the channel does not take alerts."""
    found = lookup(conn, key_hash)
    if found is None or not takes_alerts(found):
        raise errors.Unauthorized(BAD_KEY)
    integration = found.integration
    if integration.channel_status != "enabled":
        raise errors.BadRequest(CHANNEL_OFF, channel_id=integration.channel_id,
                                status=integration.channel_status)
    return integration, found.settings


def ingest_all(conn: Connection, key_hash: str, reqs: list[PushRequest], *,
               now_s: int, answers: enrichment.Answers | None = None,
               source: str = "") -> list[str]:
    """Several events of one push (Alertmanager sends a group of alerts), in one transaction.
    `answers`: the mapping API answers the endpoint fetched after a LookupsNeeded. `source`:
    the push path's name (outcomes.SOURCES), recorded with each event's outcome."""
    if not reqs:
        # Nothing to store (an empty Alertmanager group, a paused Grafana rule), but a key
        # revoked or rotated a moment ago is refused all the same.
        check_integration(conn, key_hash)
        return []
    return [ingest(conn, key_hash, req, now_s=now_s, answers=answers, source=source)
            for req in reqs]


def ingest(conn: Connection, key_hash: str, req: PushRequest, *, now_s: int,
           answers: enrichment.Answers | None = None, source: str = "") -> str:
    """Store one event pushed with the key of `key_hash`; returns its alert_key. The key and
    channel are checked here, in the transaction that stores the event, so a key revoked a
    moment ago stores nothing. The channel's noise rules (incident/ingest/noise.py) may drop
    a new alert or hold it back from an incident. With a `source`, what became of the event
    is recorded for the integration's page (outcomes.py)."""
    return ingest_with_outcome(conn, key_hash, req, now_s=now_s, answers=answers,
                               source=source)[0]


def ingest_with_outcome(conn: Connection, key_hash: str, req: PushRequest, *, now_s: int,
                        answers: enrichment.Answers | None = None,
                        source: str = "") -> tuple[str, outcomes.Outcome]:
    """`ingest`, with what became of the event."""
    integration, settings = check_integration(conn, key_hash)
    alert_key, outcome, title = _ingest(conn, integration, settings, req, now_s=now_s,
                                        answers=answers)
    if source:
        outcomes.record(conn, account_id=integration.account_id,
                        integration_id=integration.integration_id, source=source,
                        outcome=outcome, title=title, alert_key=alert_key, now_s=now_s)
    return alert_key, outcome


TEST_TITLE = "Test alert from dutyline"
RECENT_OUTCOMES = 20


@writes("/integration/test-alert", INTEGRATION_MANAGE)
async def send_test_alert(conn: AsyncConnection, actor: Actor, *, integration_id: int,
                          event_status: str = CRITICAL) -> TestAlertResponse:
    """A real alert through the ingestion a push takes (pipeline, enrichment from cached
    answers, routes, noise rules, grouping), in the name of a standard integration the
    actor sees: it opens or joins an incident and pages like any other."""
    if event_status == OK:
        raise errors.invalid("event_status", "must be Critical, Warning or Info")
    actor.note_audit_targets(integration_id)
    now_s = actor.now_s
    req = PushRequest(
        title_rule=TEST_TITLE, event_status=event_status,  # type: ignore[arg-type]
        alert_key=f"dutyline-test-{secrets.token_hex(6)}",
        description="Sent from the integration's page to check the path from this "
                    "integration to the people it pages.",
        labels={"dutyline_test": "true"})

    def run(sync: Connection) -> tuple[str, outcomes.Outcome]:
        key_hash = alert_key_hash_sync(sync, actor, integration_id=integration_id)
        return ingest_with_outcome(sync, key_hash, req, now_s=now_s, source="test")

    alert_key, outcome = await conn.run_sync(run)
    return TestAlertResponse(alert_key=alert_key, outcome=outcome.kind,
                             incident_id=outcome.incident_id, reason=outcome.reason)


@reads_sync(INTEGRATION_VIEW)
def recent_outcomes_sync(conn: Connection, actor: Actor, *, integration_id: int,
                         limit: int = RECENT_OUTCOMES) -> list[IntakeOutcome]:
    """The last events an integration the actor sees received, newest first, with what
    became of each (outcomes.py)."""
    alert_key_hash_sync(conn, actor, integration_id=integration_id)  # visible, or not found
    return [IntakeOutcome(received_at=r.received_at, source=r.source, outcome=r.outcome,
                          title=r.title, alert_key=r.alert_key, incident_id=r.incident_id,
                          reason=r.reason)
            for r in repo.recent_outcomes(conn, actor.account_id, integration_id, limit)]


def record_refusal(conn: Connection, *, account_id: int, integration_id: int, source: str,
                   reason: str, now_s: int) -> None:
    """A push refused after its key was known (a disabled channel, a body that does not
    read): recorded apart, its own transaction having rolled back."""
    outcomes.record(conn, account_id=account_id, integration_id=integration_id,
                    source=source, outcome=outcomes.Outcome(outcomes.REFUSED, reason=reason),
                    title="", alert_key="", now_s=now_s)


def _ingest(conn: Connection, integration: ResolvedIntegration, settings: IngestSettings,
            req: PushRequest, *, now_s: int, answers: enrichment.Answers | None,
            ) -> tuple[str, outcomes.Outcome, str]:
    if not req.title_rule.strip():
        raise errors.invalid("title_rule", "must not be blank")
    alert_key = req.alert_key or derive_alert_key(req.title_rule, req.labels)
    # The integration's pipeline (channel/pipeline) may rewrite the title, description or
    # severity, or drop the event (answered, not stored).
    state = enrichment.ingest_state_sync(conn, integration.integration_id)
    processed = None if state.pipeline is None else pipeline.apply_sync(
        conn, integration.integration_id, version=state.pipeline, title_rule=req.title_rule,
        description=req.description, severity=req.event_status, alert_key=alert_key,
        labels=req.labels)
    if processed is not None:
        if processed.drop:
            return alert_key, outcomes.Outcome(
                outcomes.DROPPED, reason="dropped by the integration's pipeline"), req.title_rule
        req = msgspec.structs.replace(
            req, title_rule=processed.title_rule, description=processed.description,
            event_status=processed.severity)
    # The integration's enrichment (enrichment/settings.py) runs before anything reads the
    # labels: title placeholders, noise rules and grouping all see the enriched ones. The
    # derived key stays that of the labels as sent, so a mapping edit splits no alert.
    enriched = None if state.enrichment is None else enrichment.enrich_sync(
        conn, integration.integration_id, version=state.enrichment, epoch=state.data_epoch,
        title=req.title_rule, description=req.description, severity=req.event_status,
        labels=req.labels, now_s=now_s, answers=answers)
    if enriched is not None:
        req = msgspec.structs.replace(req, labels=enriched)
    title = render_title(req.title_rule, req.labels)
    targets = [(integration, settings)] if state.route is None else _route(
        conn, integration, settings, req, title, alert_key, state.route)
    found = [_deliver(conn, target, target_settings, req, title, alert_key, now_s)
             for target, target_settings in targets]
    return alert_key, found[0], title


def _deliver(conn: Connection, integration: ResolvedIntegration, settings: IngestSettings,
             req: PushRequest, title: str, alert_key: str,
             now_s: int) -> outcomes.Outcome:
    """The event into one channel (`integration.channel_id`: its own, or one its route
    chose): update or recover the key's active alert there, or start one. Returns what
    became of it."""
    rules = noise_rules.rules_for_sync(conn, integration.channel_id, settings.noise_version)
    scope = {
        "account_id": integration.account_id,
        "channel_id": integration.channel_id,
        "integration_id": integration.integration_id,
    }
    for _ in range(_MAX_ATTEMPTS):
        active = alerts.find_active(conn, integration.integration_id,
                                   integration.channel_id, alert_key)
        if (
            active is not None
            and active.incident_progress == grouping.CLOSED
            and req.event_status != OK
        ):
            # Its incident was closed while the alert still fired: end that alert, and let
            # this trigger start a fresh one that opens or joins a live incident.
            alerts.end_silently(conn, active.alert_id, now_s=now_s)
            if active.incident_id is not None:
                grouping.drop_active_alert(conn, active.incident_id, now_s=now_s)
            noise.recovered(conn, active.alert_id)
            active = None
        if active is not None:
            severity = alerts.update_active(conn, active, req, title=title, now_s=now_s)
            alerts.add_event(
                conn, alert_id=active.alert_id, req=req, title=title, now_s=now_s, **scope
            )
            if active.incident_id is not None:
                grouping.count_event(
                    conn, settings, incident_id=active.incident_id, status=req.event_status,
                    raised_to=severity if severity != active.severity else None, now_s=now_s,
                )
            if req.event_status == OK:
                _release(conn, settings, rules, integration, active.alert_id, now_s)
                return outcomes.Outcome(outcomes.RECOVERED, active.incident_id or "")
            if active.inhibit_rule_id or active.silence_rule_id or (
                rules.inhibit and req.labels
                and any(active.labels.get(k) != v for k, v in req.labels.items())
            ):
                _revisit(conn, settings, rules, integration, active, req, title, alert_key,
                         severity, now_s)
            if active.incident_id is not None:
                return outcomes.Outcome(outcomes.GROUPED, active.incident_id)
            return outcomes.Outcome(outcomes.HELD, reason="held back by a silence or an "
                                    "inhibit rule")
        if req.event_status == OK:
            # Recovery of nothing we know: kept as an event, opens nothing.
            alerts.add_event(conn, alert_id="", req=req, title=title, now_s=now_s, **scope)
            return outcomes.Outcome(outcomes.IGNORED, reason="a recovery of no firing alert")
        subject = noise.subject(
            title=title, title_rule=req.title_rule, severity=req.event_status,
            description=req.description, alert_key=alert_key, labels=req.labels,
            integration_id=integration.integration_id,
        )
        hold = noise.decide_new(conn, rules, subject, now_s,
                                noise_rules.local_days_sync(conn, integration.account_id))
        if hold is noise.DROP:  # counted on its rule, not stored
            return outcomes.Outcome(outcomes.DROPPED, reason="dropped by a drop rule")
        alert_id = alerts.insert_new(
            conn, alert_key=alert_key, req=req, title=title, now_s=now_s,
            hold=hold.values() if hold.held else None, **scope
        )
        if alert_id is None:
            continue  # a concurrent push started this key's alert: update that one
        alerts.add_event(conn, alert_id=alert_id, req=req, title=title, now_s=now_s,
                               **scope)
        if rules.inhibit:
            noise.index_source(conn, rules, alert_id=alert_id,
                               channel_id=integration.channel_id, subject_=subject)
        if hold.held:
            return outcomes.Outcome(outcomes.HELD, reason="held back by a silence or an "
                                    "inhibit rule")
        incident_id, opened = _group(conn, settings, alert_id, alert_key, req, title, now_s,
                                     integration)
        alerts.set_incident(conn, alert_id, incident_id)
        return outcomes.Outcome(outcomes.OPENED if opened else outcomes.GROUPED, incident_id)
    raise RuntimeError(f"alert key {alert_key!r} changed hands {_MAX_ATTEMPTS} times")


def _route(conn: Connection, integration: ResolvedIntegration, settings: IngestSettings,
           req: PushRequest, title: str, alert_key: str, version: int,
           ) -> list[tuple[ResolvedIntegration, IngestSettings]]:
    """The channels the integration's route (channel/route) sends this event to: the live,
    enabled ones of the matching cases, else of the default, else its own channel. A
    recovery goes where the key's alert fires, whatever its labels say now."""
    if req.event_status == OK:
        held = _live(conn, integration, settings,
                     alerts.active_channels(conn, integration.integration_id, alert_key))
        if held:
            return held
    subject = {"title": title, "title_rule": req.title_rule, "description": req.description,
               "severity": req.event_status, "alert_severity": req.event_status,
               "alert_key": alert_key, "labels": req.labels}
    plan = routes.plan_sync(conn, integration.integration_id, account_id=integration.account_id,
                            version=version, subject=subject)
    for channel_ids in () if plan is None else (plan.matched, plan.default):
        found = _live(conn, integration, settings, channel_ids)
        if found:
            return found
    return [(integration, settings)]


def _live(conn: Connection, integration: ResolvedIntegration, settings: IngestSettings,
          channel_ids: Sequence[int]) -> list[tuple[ResolvedIntegration, IngestSettings]]:
    """These channels, those live and enabled, with their settings (the integration's own
    channel was checked with its key)."""
    found = []
    for channel_id in channel_ids:
        if channel_id == integration.channel_id:
            found.append((integration, settings))
            continue
        routed = routed_settings_sync(conn, integration.account_id, channel_id)
        if routed is not None:
            found.append((dataclasses.replace(integration, channel_id=channel_id), routed))
    return found


def _revisit(
    conn: Connection, settings: IngestSettings, rules: noise_rules.ChannelRules,
    integration: ResolvedIntegration, active: alerts.ActiveAlert, req: PushRequest,
    title: str, alert_key: str, severity: str, now_s: int,
) -> None:
    """A new event of an alert that is held back, or whose labels changed: re-index it as a
    source, and group it once nothing holds it any more."""
    labels = {**active.labels, **req.labels}
    subject = noise.subject(
        title=title, title_rule=req.title_rule, severity=severity,
        description=req.description, alert_key=alert_key, labels=labels,
        integration_id=integration.integration_id,
    )
    if rules.inhibit and labels != active.labels:
        noise.index_source(conn, rules, alert_id=active.alert_id,
                           channel_id=integration.channel_id, subject_=subject,
                           relabelled=True)
    was = noise.Hold(active.inhibit_rule_id, active.inhibited_by, active.silence_rule_id)
    if active.incident_id is not None or not was.held:
        return
    hold = noise.recheck(conn, rules, was, subject, now_s,
                         noise_rules.local_days_sync(conn, integration.account_id))
    if hold == was:
        return
    noise.set_hold(conn, active.alert_id, hold if hold.held else noise.NOT_HELD, now_s)
    if not hold.held:
        _group_stored(conn, settings, integration.account_id, integration.channel_id,
                      active.alert_id, subject, now_s)


def _release(
    conn: Connection, settings: IngestSettings, rules: noise_rules.ChannelRules,
    integration: ResolvedIntegration, alert_id: str, now_s: int,
) -> None:
    """A recovered alert: the alerts it inhibited that still fire are looked at again."""
    local_days = noise_rules.local_days_sync(conn, integration.account_id)
    for row in noise.recovered(conn, alert_id):
        subject = noise.row_subject(row)
        was = noise.Hold(inhibit_rule_id="?", inhibited_by=alert_id)
        hold = noise.recheck(conn, rules, was, subject, now_s, local_days)
        noise.set_hold(conn, row.alert_id, hold, now_s)
        if not hold.held:
            _group_stored(conn, settings, integration.account_id, integration.channel_id,
                          row.alert_id, subject, now_s)


def _group_stored(conn: Connection, settings: IngestSettings, account_id: int,
                  channel_id: int, alert_id: str, subject: dict[str, Any], now_s: int) -> None:
    """Group an alert stored earlier (held back until now), as a new alert is grouped."""
    fields = {k: subject[k] for k in ("title", "title_rule", "severity", "alert_severity",
                                      "description", "alert_key")}
    incident_id = grouping.attach(
        conn, settings, account_id=account_id, channel_id=channel_id,
        integration_id=subject["integration_id"], alert_id=alert_id, title=subject["title"],
        description=subject["description"], severity=subject["severity"],
        labels=subject["labels"], fields=fields, now_s=now_s,
    )
    alerts.set_incident(conn, alert_id, incident_id)


def _group(
    conn: Connection, settings: IngestSettings, alert_id: str, alert_key: str,
    req: PushRequest, title: str, now_s: int, integration: ResolvedIntegration,
) -> tuple[str, bool]:
    fields = {
        "title": title, "title_rule": req.title_rule, "severity": req.event_status,
        "alert_severity": req.event_status, "description": req.description,
        "alert_key": alert_key,
    }
    return grouping.attach_telling(
        conn, settings, account_id=integration.account_id, channel_id=integration.channel_id,
        integration_id=integration.integration_id, alert_id=alert_id, title=title,
        description=req.description, severity=req.event_status, labels=req.labels,
        fields=fields, now_s=now_s,
    )
