"""What the incident page shows, read through the same services as the API's reads
(/incident/info, /incident/feed, /incident/alert/list, /incident/past/list, /field/list):
the page never queries tables itself. The values are turned into plain text here (times in
the reader's zone, feed entries as sentences), so the templates only lay them out and
Jinja's autoescape is the one place markup is made safe."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident.service import AlertInfo, IncidentInfo, fields, query, similar
from dutyline.kit.vocabulary import CLOSED, SEVERITIES
from dutyline.platform.member import service as members
from dutyline.web import times

FEED_LIMIT = 100
ALERT_LIMIT = 50
SIMILAR_LIMIT = 5
MEMBER_CHOICES = 200
PAGE_PATH = "/console/incidents/"


@dataclass(frozen=True)
class Entry:
    """One line of the timeline."""

    at: str
    who: str
    text: str
    kind: str  # the feed type, for styling
    failed: list[str] = field(default_factory=list)  # failed deliveries' "to: reason"


@dataclass(frozen=True)
class Label:
    key: str
    value: str
    href: str  # "" unless the value is an http(s) URL


@dataclass(frozen=True)
class AlertEvent:
    at: str
    status: str
    severity: str
    title: str


@dataclass(frozen=True)
class Alert:
    alert_id: str
    title: str
    severity: str
    status: str
    started: str
    labels: list[Label]
    events: list[AlertEvent]


@dataclass(frozen=True)
class FieldRow:
    name: str
    label: str
    kind: str  # text | single_select | multi_select | checkbox
    options: list[str]
    value: Any
    shown: str


@dataclass(frozen=True)
class Similar:
    incident_id: str
    num: str
    title: str
    progress: str
    score: int  # percent


@dataclass
class ChangeRow:
    """A change of the incident's channel just before it opened (incident/change)."""

    title: str
    href: str  # its link in the tool that made it, when that is a web address
    kind: str
    status: str
    started: str


@dataclass
class IncidentView:
    info: IncidentInfo
    started: str
    timeline: list[Entry]
    more_feed: bool
    alerts: list[Alert]
    alert_total: int
    fields: list[FieldRow]
    similar: list[Similar]
    on_call: list[str]  # who is paged for it now, by name
    escalation: str  # the escalation rule and layer paging it, when one does
    responders: list[tuple[str, bool]]  # (name, acknowledged)
    can_manage: bool
    members: list[tuple[int, str]] = field(default_factory=list)
    severities: tuple[str, ...] = SEVERITIES
    changes: list[ChangeRow] = field(default_factory=list)

    @property
    def path(self) -> str:
        return PAGE_PATH + self.info.incident_id

    @property
    def is_open(self) -> bool:
        return self.info.progress != CLOSED

    @property
    def snoozed(self) -> bool:
        return self.info.snoozed_before > 0


def _clock(tz: tzinfo) -> Any:
    """Times in the reader's zone, to the second, with its abbreviation (web/times.py); each
    also carries its instant for `<time datetime>`."""

    def fmt(t: int) -> str:
        if not t:
            return ""
        return times.Stamp(t, tz, seconds=True)

    return fmt


def _is_url(value: str) -> bool:
    # Only web addresses become links: a `javascript:` or `data:` label stays text.
    return value.lower().startswith(("http://", "https://"))


def labels_of(raw: dict[str, Any]) -> list[Label]:
    out = []
    for key, value in sorted(raw.items()):
        text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        out.append(Label(key, text, text if _is_url(text) else ""))
    return out


def load_sync(conn: Connection, actor: Actor, *, incident_id: str, deps: Deps,
              read_only: bool = False, tz: tzinfo | None = None) -> IncidentView:
    """The page of one incident the actor sees (ResourceNotFound otherwise), read as one
    unit of database work (`runtime.db.run_sync`). `read_only`: what a signed link shows,
    without the parts that lead to actions. Times are in `tz`, the reader's zone (else the
    account's)."""
    info = query.incident_info_sync(conn, actor, incident_id=incident_id, deps=deps,
                                    with_changes=True)
    fmt = _clock(tz or times.reader_zone(info.account_time_zone)[1])
    feed = query.incident_feed_sync(conn, actor, incident_id=info.incident_id,
                                    limit=FEED_LIMIT)
    alerts = query.incident_alerts_sync(conn, actor, incident_id=info.incident_id,
                                        include_events=True, limit=ALERT_LIMIT)
    names = members.member_names_sync(conn, actor, _people_in(info, feed.items))
    view = IncidentView(
        info=info, started=fmt(info.start_time),
        timeline=[_entry(item, names, fmt) for item in feed.items],
        more_feed=feed.has_next_page,
        alerts=[_alert(a, fmt) for a in alerts.items], alert_total=alerts.total,
        fields=[], similar=[],
        on_call=_on_call(info, names), escalation=_escalation(info),
        responders=[(r.person_name or f"#{r.person_id}", bool(r.acknowledged_at))
                    for r in info.responders],
        can_manage=not read_only and actor.has(INCIDENT_MANAGE),
        changes=[ChangeRow(c.title, c.link if _is_url(c.link) else "", c.type, c.status,
                           fmt(c.start_time)) for c in info.recent_changes or []],
    )
    if read_only:
        return view
    definitions = fields.list_fields_sync(conn, actor).items
    view.fields = [_field_row(d, info.fields) for d in definitions]
    view.similar = [
        Similar(p.incident_id, p.num, p.title, p.progress, round(p.score * 100))
        for p in similar.past_incidents_sync(conn, actor, incident_id=info.incident_id,
                                             limit=SIMILAR_LIMIT, deps=deps)[1]]
    if view.can_manage:
        _, people = members.list_members_sync(conn, actor, asc=True, offset=0,
                                              limit=MEMBER_CHOICES)
        view.members = sorted(((m.member_id, m.member_name) for m in people
                               if m.status == "enabled"), key=lambda m: m[1].lower())
    return view


async def load(conn: AsyncConnection, actor: Actor, *, incident_id: str, deps: Deps,
               read_only: bool = False, tz: tzinfo | None = None) -> IncidentView:
    """`load_sync` on an async connection."""
    return await conn.run_sync(lambda sync: load_sync(
        sync, actor, incident_id=incident_id, deps=deps, read_only=read_only, tz=tz))


def _people_in(info: IncidentInfo, items: list[Any]) -> set[int]:
    ids: set[int] = set(info.assigned_to.get("person_ids") or [])
    for item in items:
        for key in ("to", "persons"):
            for p in item.detail.get(key) or []:
                person = p.get("person_id") if isinstance(p, dict) else p
                if isinstance(person, int):
                    ids.add(person)
    return ids


def _on_call(info: IncidentInfo, names: dict[int, tuple[str, str]]) -> list[str]:
    """Who the incident's current assignment pages (the escalation layer's people, or the
    members it was assigned to); else its responders."""
    people = [p for p in info.assigned_to.get("person_ids") or [] if isinstance(p, int)]
    if people:
        return [names[p][0] if p in names else f"#{p}" for p in people]
    return [r.person_name or f"#{r.person_id}" for r in info.responders]


def _escalation(info: IncidentInfo) -> str:
    rule = info.assigned_to.get("escalate_rule_name") or info.assigned_to.get(
        "escalate_rule_id")
    if not rule:
        return ""
    layer = info.assigned_to.get("layer_idx")
    return f"{rule}, layer {layer + 1}" if isinstance(layer, int) else str(rule)


def _alert(a: AlertInfo, fmt: Any) -> Alert:
    return Alert(
        alert_id=a.alert_id, title=a.title, severity=a.alert_severity, status=a.alert_status,
        started=fmt(a.start_time), labels=labels_of(a.labels),
        events=[AlertEvent(fmt(e.event_time), e.event_status, e.event_severity, e.title)
                for e in a.events or []])


def _field_row(definition: Any, values: dict[str, Any]) -> FieldRow:
    value = values.get(definition.field_name)
    if value is None:
        shown = ""
    elif isinstance(value, bool):
        shown = "yes" if value else "no"
    elif isinstance(value, list):
        shown = ", ".join(str(v) for v in value)
    else:
        shown = str(value)
    return FieldRow(definition.field_name, definition.display_name or definition.field_name,
                    definition.field_type, list(definition.options), value, shown)


# --- the timeline -------------------------------------------------------------------------

def _who(names: dict[int, tuple[str, str]], ids: Any) -> str:
    found = [names[i][0] if i in names else f"#{i}" for i in ids or [] if isinstance(i, int)]
    return ", ".join(found)


def _target_name(key: str, target: dict[str, Any], names: dict[int, tuple[str, str]]) -> str:
    if key == "persons":
        return _who(names, [target.get("person_id")])
    if key == "emails":
        return str(target.get("email", ""))
    if key == "chats":
        return str(target.get("chat_name") or target.get("chat_id", ""))
    return str(target.get("alias", ""))


def _deliveries(detail: dict[str, Any], names: dict[int, tuple[str, str]]
                ) -> tuple[list[str], list[str]]:
    """(who a notification went to, "who: reason" of those it failed for)."""
    to: list[str] = []
    failed: list[str] = []
    for key in ("persons", "emails", "chats", "robots"):
        for target in detail.get(key) or []:
            if not isinstance(target, dict):
                continue
            who = _target_name(key, target, names)
            to.append(who)
            if target.get("failed_reason"):
                failed.append(f"{who}: {target['failed_reason']}")
    if detail.get("failed_reason"):
        failed.append(str(detail["failed_reason"]))
    return to, failed


def _text(kind: str, d: dict[str, Any], names: dict[int, tuple[str, str]]) -> str:
    simple = {
        "i_new": "opened the incident", "i_ack": "acknowledged",
        "i_unack": "took back the acknowledgement", "i_wake": "ended the snooze",
        "i_r_desc": "edited the description", "i_r_impact": "edited the impact",
        "i_r_rc": "edited the root cause", "i_r_rsltn": "edited the resolution",
    }
    if kind in simple:
        return simple[kind]
    if kind == "i_rslv":
        return "resolved" + ({"event": " (all alerts recovered)",
                              "autorslv": " (auto-resolve timeout)",
                              "wcard": " (through a notification's link)"}
                             .get(d.get("from", ""), ""))
    if kind == "i_reopen":
        return "reopened" + (f": {d['reason']}" if d.get("reason") else "")
    if kind == "i_snooze":
        return f"snoozed for {d.get('minutes', '?')} minutes"
    if kind == "i_comm":
        return f"commented: {d.get('comment', '')}"
    if kind == "i_assign":
        rule = d.get("escalate_rule_name") or d.get("escalate_rule_id")
        to = _who(names, d.get("to"))
        return "assigned to " + (to or "-") + (f" (escalation rule {rule})" if rule else "")
    if kind == "i_a_rspd":
        return "added responders: " + _who(names, d.get("to"))
    if kind == "i_merge":
        target = d.get("target_incident") or {}
        sources = d.get("source_incidents")
        if sources:
            return "merged in: " + ", ".join(str(s.get("title", "")) for s in sources)
        return f"merged into {target.get('title', '')}"
    if kind == "i_r_title":
        return f"changed the title to {d.get('to', '')}"
    if kind == "i_r_severity":
        return f"changed the severity from {d.get('from', '')} to {d.get('to', '')}"
    if kind == "i_r_field":
        value = d.get("to")
        shown = "(cleared)" if value is None else (
            ", ".join(map(str, value)) if isinstance(value, list) else str(value))
        return f"set {d.get('field_name', '')} to {shown}"
    if kind == "a_merge":
        return "alerts merged into the incident"
    if kind == "i_custom":
        outcome = d.get("message") or f"HTTP {d.get('status_code', '?')}"
        return f"ran the custom action {d.get('integration_name', '')}: {outcome}"
    if kind == "i_notify":
        sent_to = _deliveries(d, names)[0]
        state = "failed" if d.get("status") == "failed" else "sent"
        return f"notification by {d.get('by', '?')} {state}" + (
            f" to {', '.join(sent_to)}" if sent_to else "")
    return kind


def _entry(item: Any, names: dict[int, tuple[str, str]], fmt: Any) -> Entry:
    detail = item.detail if isinstance(item.detail, dict) else {}
    failed = _deliveries(detail, names)[1] if item.type == "i_notify" else []
    who = item.creator_name or ("dutyline" if not item.creator_id else f"#{item.creator_id}")
    return Entry(fmt(item.created_at // 1000), who, _text(item.type, detail, names),
                 item.type, failed)
