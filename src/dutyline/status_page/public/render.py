"""Turning a page's rows into HTML and feeds: the view model and the Jinja2 templates.

Autoescaping is on for every template (HTML and XML): page names, titles and update texts
are written by users of the API and shown to anonymous visitors. Descriptions are Markdown in
the API; here they are shown as plain text with their line breaks, so no markup a writer
typed can ever reach a visitor's browser as markup."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import escape
from sqlalchemy.engine import Row

from dutyline.status_page.public.snapshot import HISTORY_DAYS, Snapshot

TEMPLATES = Path(__file__).parent / "templates"

# Worst last: the overall status is the worst component's. Maintenance is planned work, so it
# ranks below every kind of unplanned degradation.
SEVERITY = ("operational", "under_maintenance", "degraded", "partial_outage", "full_outage")
COMPONENT_LABEL = {
    "operational": "Operational",
    "under_maintenance": "Under maintenance",
    "degraded": "Degraded performance",
    "partial_outage": "Partial outage",
    "full_outage": "Major outage",
}
OVERALL_LABEL = {
    "operational": "All systems operational",
    "under_maintenance": "Maintenance in progress",
    "degraded": "Degraded performance",
    "partial_outage": "Partial outage",
    "full_outage": "Major outage",
}
CHANGE_LABEL = {
    "investigating": "Investigating",
    "identified": "Identified",
    "monitoring": "Monitoring",
    "resolved": "Resolved",
    "scheduled": "Scheduled",
    "ongoing": "In progress",
    "completed": "Completed",
}


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        # Plain-text email bodies (.txt) are the one thing not escaped.
        autoescape=select_autoescape(["html", "xml"], default_for_string=True, default=False),
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.globals.update(component_label=COMPONENT_LABEL, change_label=CHANGE_LABEL)
    env.filters.update(rfc822=_rfc822, rfc3339=_rfc3339)
    return env


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def worst(statuses: list[str]) -> str:
    rank = {s: i for i, s in enumerate(SEVERITY)}
    return max(statuses, key=lambda s: rank.get(s, 0), default="operational")


@dataclass
class Stamp:
    """A moment shown to people (in the page's zone) and to machines (ISO 8601, UTC)."""

    iso: str
    text: str

    @classmethod
    def of(cls, seconds: int, zone: ZoneInfo) -> Stamp:
        moment = datetime.fromtimestamp(seconds, UTC)
        local = moment.astimezone(zone)
        return cls(moment.isoformat().replace("+00:00", "Z"),
                   local.strftime("%b %d, %Y %H:%M ") + (local.tzname() or ""))


@dataclass
class UpdateView:
    status: str
    description: str
    at: Stamp


@dataclass
class ChangeView:
    change_id: int
    type: str
    title: str
    description: str
    status: str
    start: Stamp
    close: Stamp | None
    affected: list[tuple[str, str]]  # (component name, status)
    updates: list[UpdateView]


@dataclass
class SectionView:
    name: str
    description: str
    components: list[Row[Any]] = field(default_factory=list)


@dataclass
class DayView:
    day: date
    incidents: int
    maintenances: int

    @property
    def level(self) -> str:
        if self.incidents >= 3:
            return "high"
        if self.incidents:
            return "low"
        return "maint" if self.maintenances else "none"

    @property
    def summary(self) -> str:
        parts = []
        if self.incidents:
            parts.append(f"{self.incidents} incident{'s' if self.incidents != 1 else ''}")
        if self.maintenances:
            parts.append(
                f"{self.maintenances} maintenance{'s' if self.maintenances != 1 else ''}"
            )
        return ", ".join(parts) or "No incidents"


def _json_list(text: str) -> list[Any]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def change_view(
    row: Row[Any], updates: list[Row[Any]], names: dict[str, str], zone: ZoneInfo
) -> ChangeView:
    affected = []
    for item in _json_list(row.affected_components):
        if isinstance(item, dict) and str(item.get("component_id", "")) in names:
            affected.append((names[str(item["component_id"])], str(item.get("status", ""))))
    close = int(row.close_at_seconds or 0)
    return ChangeView(
        change_id=int(row.change_id), type=row.type, title=row.title,
        description=row.description, status=row.status,
        start=Stamp.of(int(row.start_at_seconds), zone),
        close=Stamp.of(close, zone) if close else None,
        affected=affected,
        updates=[UpdateView(u.status, u.description, Stamp.of(int(u.at_seconds), zone))
                 for u in updates],
    )


def history_days(history: list[tuple[int, str]], zone: ZoneInfo, now_s: int) -> list[DayView]:
    incidents: Counter[date] = Counter()
    maintenances: Counter[date] = Counter()
    for start, kind in history:
        day = datetime.fromtimestamp(start, zone).date()
        (maintenances if kind == "maintenance" else incidents)[day] += 1
    today = datetime.fromtimestamp(now_s, zone).date()
    days = [today - timedelta(days=n) for n in range(HISTORY_DAYS - 1, -1, -1)]
    return [DayView(d, incidents[d], maintenances[d]) for d in days]


def page_context(snap: Snapshot, *, now_s: int, subscribe_enabled: bool) -> dict[str, Any]:
    page = snap.page
    zone = _zone(page.time_zone)
    names = {c.component_id: c.name for c in snap.components}
    by_section: dict[str, SectionView] = {
        s.section_id: SectionView(s.name, s.description) for s in snap.sections
    }
    loose = SectionView("", "")
    for comp in snap.components:
        by_section.get(comp.section_id, loose).components.append(comp)
    sections = [s for s in (loose, *by_section.values()) if s.components]
    overall = worst([c.status for c in snap.components])
    active = [change_view(c, snap.updates.get(int(c.change_id), []), names, zone)
              for c in snap.active]
    days = history_days(snap.history, zone, now_s)
    return {
        "page": page,
        "lang": "en",
        "overall": overall,
        "overall_label": OVERALL_LABEL.get(overall, overall),
        "sections": sections,
        "incidents": [c for c in active if c.type != "maintenance"],
        "maintenances": [c for c in active if c.type == "maintenance"],
        "recent": [change_view(c, snap.updates.get(int(c.change_id), []), names, zone)
                   for c in snap.recent],
        "days": days,
        "history_incidents": sum(d.incidents for d in days),
        "history_maintenances": sum(d.maintenances for d in days),
        "generated": Stamp.of(now_s, zone),
        "subscribe_enabled": subscribe_enabled,
        "zone": page.time_zone or "UTC",
    }


def render_page(snap: Snapshot, *, now_s: int, subscribe_enabled: bool) -> str:
    ctx = page_context(snap, now_s=now_s, subscribe_enabled=subscribe_enabled)
    return environment().get_template("page.html").render(ctx)


def _entry_html(description: str, timeline: list[Row[Any]]) -> str:
    parts = [f"<p>{escape(description)}</p>"] if description else []
    for u in timeline:
        at = datetime.fromtimestamp(int(u.at_seconds), UTC).strftime("%Y-%m-%d %H:%M UTC")
        text = f": {escape(u.description)}" if u.description else ""
        parts.append(
            f"<p><strong>{escape(CHANGE_LABEL.get(u.status, u.status))}</strong> ({at}){text}</p>"
        )
    return "".join(parts)


def _feed_entries(
    changes: list[Row[Any]], updates: dict[int, list[Row[Any]]], page_url: str
) -> list[dict[str, Any]]:
    entries = []
    for change in changes:
        timeline = updates.get(int(change.change_id), [])
        last = max([int(change.updated_at), *(int(u.at_seconds) for u in timeline)])
        entries.append({
            "id": f"{page_url}#change-{change.change_id}",
            "link": f"{page_url}#change-{change.change_id}",
            "title": f"{change.title} ({CHANGE_LABEL.get(change.status, change.status)})",
            "type": change.type,
            "published": int(change.start_at_seconds),
            "updated": last,
            # HTML as text: the template escapes it once more, as RSS and Atom want.
            "html": _entry_html(change.description, timeline),
        })
    return entries


def _rfc822(seconds: int) -> str:
    return format_datetime(datetime.fromtimestamp(seconds, UTC), usegmt=True)


def _rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def render_feed(
    kind: str, page: Row[Any], changes: list[Row[Any]], updates: dict[int, list[Row[Any]]],
    *, base_url: str,
) -> str:
    """`kind` is rss or atom. Newest change first; each carries its timeline, newest first."""
    page_url = f"{base_url}/status/{page.url_name}"
    entries = _feed_entries(changes, updates, page_url)
    updated = max([int(page.updated_at), *(e["updated"] for e in entries)])
    return environment().get_template(f"feed.{kind}.xml").render(
        page=page, page_url=page_url, entries=entries, updated=updated,
        feed_url=f"{page_url}/history.{kind}",
    )


def render_message(
    *, title: str, message: str, status_name: str = "", page_url: str = "",
    form: dict[str, str] | None = None, login: str = "",
) -> str:
    """A small page for errors (404, 401) and the subscription steps (confirm buttons)."""
    return environment().get_template("message.html").render(
        lang="en", title=title, message=message, page_name=status_name, page_url=page_url,
        form=form, login=login,
    )


def render_email(name: str, **ctx: Any) -> str:
    return environment().get_template(name).render(**ctx)
