"""The channel's noise rules at ingest (docs/noise-rules.md), on the sync connection of a push.

For a new alert, in order:
1. drop rules: a match is counted on the rule and nothing is stored;
2. inhibit rules whose `target_filters` match: a source is an active alert of the channel
   (not recovered, its incident not acknowledged or closed) seen in the last 10 minutes that
   matches the rule's `source_filters` and agrees on every `equals` path. `is_directly_discard`
   drops the alert (counted); otherwise it is stored, marked with the rule and the source,
   and opens no incident;
3. silence rules in effect now whose `filters` match: the alert is stored, marked with the
   rule, and opens no incident (or is dropped and counted with `is_directly_discard`).

Finding sources never scans the channel's alerts: every active alert matching an enabled
rule's `source_filters` has a row in `inhibit_source` keyed by (rule, hash of its values at
the rule's `equals` paths), written when the alert starts or its labels change and when a
rule is written (the backfill below). A target computes the same hash from its own values and
looks its sources up by primary key prefix, joined to the alert for the live conditions.

An alert held back (inhibited or silenced) is looked at again on each of its events: once no
rule holds it any more it goes through grouping like a new alert. A source's recovery releases
the alerts it inhibited at once (Alertmanager's behaviour)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.channel.noise import service as noise
from dutyline.channel.noise.service import ChannelRules, InhibitRule, LocalDays
from dutyline.incident.ingest import repository as repo

_decode_labels = msgspec.json.Decoder(dict[str, str])
# Alerts a rule write re-indexes at most (the channel's alerts seen in the last 10 minutes).
MAX_BACKFILL = 100_000


@dataclass(frozen=True, slots=True)
class Hold:
    """Why an alert opens no incident; all "" when nothing holds it."""

    inhibit_rule_id: str = ""
    inhibited_by: str = ""
    silence_rule_id: str = ""

    @property
    def held(self) -> bool:
        return bool(self.inhibit_rule_id or self.silence_rule_id)

    def values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "inhibited": bool(self.inhibit_rule_id), "inhibit_rule_id": self.inhibit_rule_id,
            "inhibited_by": self.inhibited_by, "silence_rule_id": self.silence_rule_id,
        }
        if self.held:
            values["ever_muted"] = True  # "ever": a release leaves it set
        return values


NOT_HELD = Hold()
DROP = Hold(inhibit_rule_id="-drop-")  # sentinel: not stored


def subject(*, title: str, title_rule: str, severity: str, description: str, alert_key: str,
            labels: dict[str, str], integration_id: int) -> dict[str, Any]:
    """What filters read of an alert (kit/filters keys)."""
    return {"severity": severity, "alert_severity": severity, "title": title,
            "title_rule": title_rule, "description": description, "alert_key": alert_key,
            "labels": labels, "integration_id": integration_id}


def match_key(rule: InhibitRule, subject_: dict[str, Any]) -> str:
    values = msgspec.json.encode(rule.equals_values(subject_))
    return hashlib.md5(values, usedforsecurity=False).hexdigest()


# Rules looked up in one statement at most (more are looked up in several).
_LOOKUP_CHUNK = 16


def _inhibitor(conn: Connection, rules: ChannelRules, subject_: dict[str, Any],
               now_s: int) -> tuple[InhibitRule, str] | None:
    """The first rule (by priority) of those whose target_filters match that has a live
    source for this alert, and that source."""
    matched = rules.inhibit_targets.matching(subject_)
    since = now_s - noise.SOURCE_FRESH_S
    for start in range(0, len(matched), _LOOKUP_CHUNK):
        chunk = matched[start:start + _LOOKUP_CHUNK]
        found = repo.find_sources(
            conn, [(rule.rule_id, match_key(rule, subject_)) for rule in chunk], since)
        for rule in chunk:
            if rule.rule_id in found:
                return rule, found[rule.rule_id]
    return None


def decide_new(conn: Connection, rules: ChannelRules, subject_: dict[str, Any],
               now_s: int, local_days: LocalDays | None = None) -> Hold:
    """DROP (counted on its rule, store nothing), a Hold, or NOT_HELD for a new alert.
    `local_days`: the account's time zone and calendars, which silence windows are read in."""
    if rules.empty:
        return NOT_HELD
    for rule_id in rules.drops.matching(subject_):
        noise.count_drop_sync(conn, rule_id)
        return DROP
    found = _inhibitor(conn, rules, subject_, now_s)
    if found is not None:
        rule, source = found
        if rule.discard:
            noise.count_drop_sync(conn, rule.rule_id)
            return DROP
        return Hold(inhibit_rule_id=rule.rule_id, inhibited_by=source)
    for silence in rules.silences.matching(subject_):
        if silence.effective(now_s, local_days):
            if silence.discard:
                noise.count_drop_sync(conn, silence.rule_id)
                return DROP
            return Hold(silence_rule_id=silence.rule_id)
    return NOT_HELD


def recheck(conn: Connection, rules: ChannelRules, hold: Hold, subject_: dict[str, Any],
            now_s: int, local_days: LocalDays | None = None) -> Hold:
    """What holds an alert that was held, at its new event (never a drop: it is stored)."""
    if hold.inhibit_rule_id and hold.inhibit_rule_id in rules.inhibit and (
        repo.source_still_live(conn, hold.inhibited_by, now_s - noise.SOURCE_FRESH_S)
    ) and rules.inhibit[hold.inhibit_rule_id].target.matches(subject_):
        return hold
    silence = rules.silence.get(hold.silence_rule_id)
    if silence is not None and silence.effective(now_s, local_days) and \
            silence.filter.matches(subject_):
        return hold
    found = _inhibitor(conn, rules, subject_, now_s)
    if found is not None:
        return Hold(inhibit_rule_id=found[0].rule_id, inhibited_by=found[1])
    for candidate in rules.silences.matching(subject_):
        if candidate.effective(now_s, local_days):
            return Hold(silence_rule_id=candidate.rule_id)
    return NOT_HELD


def set_hold(conn: Connection, alert_id: str, hold: Hold, now_s: int) -> None:
    repo.set_alert_values(conn, alert_id, {"updated_at": now_s, **hold.values()})


def index_source(conn: Connection, rules: ChannelRules, *, alert_id: str, channel_id: int,
                 subject_: dict[str, Any], relabelled: bool = False) -> None:
    """Record the alert as a possible source of every enabled rule whose source_filters it
    matches (again, after its labels changed)."""
    if relabelled:
        repo.unindex_source(conn, alert_id)
    matched = rules.inhibit_sources.matching(subject_) if rules.inhibit else []
    if matched:
        repo.index_sources(conn, [
            {"rule_id": r.rule_id, "match_key": match_key(r, subject_), "alert_id": alert_id,
             "channel_id": channel_id} for r in matched
        ])


def recovered(conn: Connection, alert_id: str) -> list[Any]:
    """An alert recovered: it is nobody's source any more; the still-firing alerts it
    inhibited, to be looked at again."""
    repo.unindex_source(conn, alert_id)
    return repo.held_by(conn, alert_id)


def row_subject(row: Any) -> dict[str, Any]:
    return subject(title=row.title, title_rule=row.title_rule, severity=row.alert_severity,
                   description=row.description, alert_key=row.alert_key,
                   labels=_decode_labels.decode(row.labels), integration_id=row.integration_id)


def reindex_rule(conn: Connection, channel_id: int, rule_id: str, rule: InhibitRule | None,
                 now_s: int) -> None:
    """A rule was written (the channel domain calls this in the writer's transaction):
    its index rows are rebuilt from the channel's alerts seen in the last 10 minutes (the
    only ones that can be sources), or removed when it is gone."""
    repo.drop_rule_sources(conn, rule_id)
    if rule is None:
        return
    rows = repo.recent_active_alerts(conn, channel_id, now_s - noise.SOURCE_FRESH_S,
                                     MAX_BACKFILL)
    batch: list[dict[str, Any]] = []
    for row in rows:
        found = row_subject(row)
        if rule.source.matches(found):
            batch.append({"rule_id": rule_id, "match_key": match_key(rule, found),
                          "alert_id": row.alert_id, "channel_id": channel_id})
    repo.index_sources(conn, batch)
