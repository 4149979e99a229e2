"""What a post-mortem is drafted from: its incidents, their timelines (the feed, notes
included), their alerts and the changes of their channel just before them. Gathered through
the incident reads, as the actor sees them, and rendered as plain lines that the template and
the model's prompt share."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.incident import feed
from dutyline.incident.alert.schemas import AlertInfo
from dutyline.incident.change.schemas import ChangeItem
from dutyline.incident.query import service as query
from dutyline.incident.query.schemas import IncidentFeedItem, IncidentInfo

MAX_FEED_ENTRIES = 500  # per incident
MAX_ALERTS = 50  # per incident
# What the model is sent at most (about 25k tokens); the incidents and notes come first, so a
# long timeline or alert list is what gets cut.
MAX_PROMPT_CHARS = 100_000


@dataclass(frozen=True)
class TimelineEntry:
    at: int  # Unix seconds
    incident_num: str
    text: str


@dataclass(frozen=True)
class Note:
    at: int
    incident_num: str
    author: str
    text: str


@dataclass
class Material:
    incidents: list[IncidentInfo]
    timeline: list[TimelineEntry] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    alerts: list[AlertInfo] = field(default_factory=list)
    changes: list[ChangeItem] = field(default_factory=list)


def when(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "-"


def duration(seconds: int) -> str:
    seconds = max(0, seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


async def gather(conn: AsyncConnection, actor: Actor, *, incident_ids: list[str],
                 deps: Deps) -> Material:
    """The incidents (ResourceNotFound for one the actor does not see), oldest first."""
    incidents = [await query.incident_info(conn, actor, incident_id=i, deps=deps,
                                           sources=False, with_changes=True)
                 for i in incident_ids]
    incidents.sort(key=lambda i: (i.start_time, i.incident_id))
    material = Material(incidents=incidents)
    for inc in incidents:
        page = await query.incident_feed(conn, actor, incident_id=inc.incident_id, asc=True,
                                         limit=MAX_FEED_ENTRIES)
        for item in page.items:
            at = item.created_at // 1000  # the feed speaks milliseconds
            material.timeline.append(TimelineEntry(at, inc.num, _feed_text(item)))
            if item.type == feed.COMMENT:
                material.notes.append(Note(at, inc.num, item.creator_name or "someone",
                                           str(item.detail.get("comment", ""))))
        alerts = await query.incident_alerts(conn, actor, incident_id=inc.incident_id,
                                             limit=MAX_ALERTS)
        material.alerts += alerts.items
    seen: set[str] = set()
    for inc in incidents:  # the incidents of a report share a channel, often its changes
        for change in inc.recent_changes or ():
            if change.change_id not in seen:
                seen.add(change.change_id)
                material.changes.append(change)
    material.changes.sort(key=lambda c: c.start_time)
    material.timeline.sort(key=lambda e: e.at)
    return material


_FIELD_NAMES = {
    feed.RESET_TITLE: "title", feed.RESET_DESCRIPTION: "description",
    feed.RESET_SEVERITY: "severity", feed.RESET_IMPACT: "impact",
    feed.RESET_ROOT_CAUSE: "root cause", feed.RESET_RESOLUTION: "resolution",
    feed.RESET_FIELD: "a custom field",
}


def _feed_text(item: IncidentFeedItem) -> str:
    """One feed entry as a sentence; types without one are named by their code."""
    who = item.creator_name or ("the system" if item.creator_id == 0 else
                                f"member {item.creator_id}")
    d: dict[str, Any] = item.detail
    match item.type:
        case feed.NEW:
            return f"Opened by {who}"
        case feed.ACK:
            return f"Acknowledged by {who}"
        case feed.UNACK:
            return f"Acknowledgement withdrawn by {who}"
        case feed.COMMENT:
            return f"Note by {who}: {d.get('comment', '')}"
        case feed.RESOLVE:
            if item.creator_id == 0:
                reason = str(d.get("reason") or "")
                return "Closed: " + ("the alerts recovered" if d.get("from") == "event"
                                     else reason or "by the system")
            return f"Closed by {who}"
        case feed.REOPEN:
            reason = str(d.get("reason") or "")
            return f"Reopened by {who}" + (f": {reason}" if reason else "")
        case feed.ASSIGN:
            return f"Assigned to members {', '.join(map(str, d.get('to', [])))}"
        case feed.ADD_RESPONDER:
            return f"Responders {', '.join(map(str, d.get('to', [])))} added by {who}"
        case feed.SNOOZE:
            return f"Notifications snoozed by {who}"
        case feed.WAKE:
            return f"Snooze ended by {who}"
        case feed.ALERT_MERGE:
            return f"Alerts merged in by {who}"
        case feed.MERGE:
            return f"Incidents merged in by {who}"
    if item.type in _FIELD_NAMES:
        return f"{_FIELD_NAMES[item.type].capitalize()} changed by {who}"
    return f"{item.type} by {who}"


def timeline_lines(m: Material) -> list[str]:
    several = len(m.incidents) > 1
    return [f"{when(e.at)}" + (f" #{e.incident_num}" if several else "") + f" — {e.text}"
            for e in m.timeline]


def alert_lines(m: Material) -> list[str]:
    return [f"[{a.alert_severity}] {a.title} — {a.event_cnt} event(s), "
            f"{when(a.start_time)} to {when(a.end_time) if a.end_time else 'still firing'}"
            for a in m.alerts]


def change_lines(m: Material) -> list[str]:
    return [f"{when(c.start_time)} [{c.type}, {c.status}] {c.title}"
            + (f" — {c.description.strip()}" if c.description.strip() else "")
            for c in m.changes]


def incident_lines(m: Material) -> list[str]:
    return [f"#{i.num} {i.title} ({i.incident_severity}) in "
            f"{i.channel_name or 'no channel'}: started {when(i.start_time)}, closed "
            f"{when(i.close_time)}, {duration(i.close_time - i.start_time)}"
            for i in m.incidents]


def as_prompt(m: Material) -> str:
    """The material as the model reads it."""
    parts = ["Incidents:", *(f"- {line}" for line in incident_lines(m))]
    for i in m.incidents:
        for label, text in (("Description", i.description), ("Impact noted", i.impact),
                            ("Root cause noted", i.root_cause),
                            ("Resolution noted", i.resolution)):
            if text.strip():
                parts.append(f"{label} (#{i.num}): {text.strip()}")
    parts += ["", "Timeline (UTC):", *(f"- {line}" for line in timeline_lines(m))]
    parts += ["", "Alerts:", *(f"- {line}" for line in alert_lines(m) or ["none"])]
    parts += ["", "Changes just before (UTC):",
              *(f"- {line}" for line in change_lines(m) or ["none"])]
    text = "\n".join(parts)
    return text if len(text) <= MAX_PROMPT_CHARS else text[:MAX_PROMPT_CHARS] + " …[truncated]"
