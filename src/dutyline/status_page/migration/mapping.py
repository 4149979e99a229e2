"""From Statuspage's vocabulary to ours: statuses, times, and the shape of a change.

Only statuses whose meaning is the same on both sides are mapped. Anything else is reported
as a warning and the item is left out: a guessed status would show visitors a history that
never happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

COMPONENT_STATUS = {
    "operational": "operational",
    "degraded_performance": "degraded",
    "partial_outage": "partial_outage",
    "major_outage": "full_outage",
    "under_maintenance": "under_maintenance",
}
INCIDENT_STATUS = {
    "investigating": "investigating",
    "identified": "identified",
    "monitoring": "monitoring",
    "resolved": "resolved",
    # Statuspage's step after resolved (a postmortem was published): still resolved here.
    "postmortem": "resolved",
}
MAINTENANCE_STATUS = {
    "scheduled": "scheduled",
    "in_progress": "ongoing",
    "verifying": "ongoing",
    "completed": "completed",
}
MAX_WARNINGS = 200


def to_seconds(value: Any) -> int:
    """An ISO 8601 time of the API (`2024-03-01T10:00:00.000Z`, or with an offset) -> Unix
    seconds; 0 for null or an unreadable value."""
    if not isinstance(value, str) or not value:
        return 0
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0
    # A bare date (a component's start_date) or a time without offset is taken as UTC.
    return int((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp())


def text(value: Any, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def is_maintenance(incident: dict[str, Any]) -> bool:
    """Scheduled maintenances come through the same /incidents list; they carry a schedule
    (and impact `maintenance`)."""
    return bool(incident.get("scheduled_for")) or incident.get("impact") == "maintenance"


# What an entry of each type may set a component to (the timeline rules of status_page/change).
_ENTRY_COMPONENT_STATUS = {
    "incident": frozenset({"operational", "degraded", "partial_outage", "full_outage"}),
    "maintenance": frozenset({"operational", "under_maintenance"}),
}
CLOSED = frozenset({"resolved", "completed"})


@dataclass
class MappedUpdate:
    source_id: str
    at_seconds: int
    status: str
    description: str
    component_changes: list[tuple[str, str]]  # (our component id, status)


@dataclass
class MappedChange:
    source_id: str
    type: str  # incident | maintenance
    title: str
    status: str
    start_at_seconds: int
    close_at_seconds: int
    scheduled_close_at_seconds: int
    is_retrospective: bool
    auto_update_by_schedule: bool
    affected_components: list[dict[str, str]]
    created_at: int
    updates: list[MappedUpdate] = field(default_factory=list)


def map_change(
    incident: dict[str, Any], components: dict[str, str], warnings: list[str]
) -> MappedChange | None:
    """One source incident (or maintenance) with its updates, oldest update first.

    `components` maps a source component id to ours. Status, close time and affected
    components follow the timeline rules of status_page/change/rules.py (the latest entry
    decides; a closed event leaves its components operational). None when nothing of it can
    be imported faithfully (every update had an unknown status)."""
    source_id = str(incident.get("id") or "")
    name = text(incident.get("name"), 512) or "(untitled)"
    maintenance = is_maintenance(incident)
    statuses = MAINTENANCE_STATUS if maintenance else INCIDENT_STATUS
    kind = "maintenance" if maintenance else "incident"
    allowed = _ENTRY_COMPONENT_STATUS[kind]
    label = f"{kind} {source_id} ({name})"
    raw_updates = incident.get("incident_updates")
    # The API lists updates newest first: reversed, a stable sort by time keeps entries of
    # the same second in the order they were posted.
    raw_list = [u for u in reversed(raw_updates) if isinstance(u, dict)] if isinstance(
        raw_updates, list) else []
    updates: list[MappedUpdate] = []
    for raw in raw_list:
        status = statuses.get(str(raw.get("status")))
        if status is None:
            warn(warnings, f"{label}: update {raw.get('id')} has unknown status "
                           f"{raw.get('status')!r}; that update was not imported")
            continue
        changes: list[tuple[str, str]] = []
        for affected in raw.get("affected_components") or []:
            if not isinstance(affected, dict):
                continue
            target = components.get(str(affected.get("code")))
            if target is None or any(c == target for c, _ in changes):
                continue
            raw_new = affected.get("new_status")
            new_status = COMPONENT_STATUS.get(str(raw_new))
            if new_status is None:
                warn(warnings, f"{label}: component status {raw_new!r} is unknown; left out")
            elif new_status not in allowed or (status in CLOSED and new_status != "operational"):
                warn(warnings, f"{label}: an update with status {status} cannot set a "
                               f"component to {new_status} here; that component change was "
                               "left out")
            else:
                changes.append((target, new_status))
        at = to_seconds(raw.get("display_at")) or to_seconds(raw.get("created_at"))
        updates.append(MappedUpdate(str(raw.get("id") or ""), at, status,
                                    text(raw.get("body"), 65_536), changes))
    if not updates:
        warn(warnings, f"{label} has no update with a known status; not imported")
        return None
    updates.sort(key=lambda u: u.at_seconds)
    latest = updates[-1]
    affected_now: dict[str, str] = {}
    for u in updates:
        for component_id, component_status in u.component_changes:
            affected_now[component_id] = component_status
    if latest.status in CLOSED:
        affected_now = dict.fromkeys(affected_now, "operational")
    created = to_seconds(incident.get("created_at"))
    if maintenance:
        start = to_seconds(incident.get("scheduled_for")) or created
        scheduled_close = to_seconds(incident.get("scheduled_until"))
        auto = bool(incident.get("scheduled_auto_in_progress")) and bool(
            incident.get("scheduled_auto_completed"))
    else:
        start = to_seconds(incident.get("started_at")) or created
        scheduled_close, auto = 0, False
    return MappedChange(
        source_id=source_id, type=kind, title=name, status=latest.status,
        start_at_seconds=start or updates[0].at_seconds,
        close_at_seconds=scheduled_close or (latest.at_seconds if latest.status in CLOSED
                                             else 0),
        scheduled_close_at_seconds=scheduled_close,
        is_retrospective=bool(incident.get("backfilled")), auto_update_by_schedule=auto,
        affected_components=[{"component_id": c, "status": s} for c, s in affected_now.items()],
        created_at=created or updates[0].at_seconds, updates=updates,
    )


def warn(warnings: list[str], message: str) -> None:
    """Keep the first MAX_WARNINGS; after that one line counts the rest."""
    if len(warnings) < MAX_WARNINGS:
        warnings.append(message)
        return
    tail = warnings[-1]
    more = int(tail.split(" ", 2)[1]) + 1 if tail.startswith("and ") else 1
    if tail.startswith("and "):
        warnings[-1] = f"and {more} more warnings"
    else:
        warnings.append("and 1 more warnings")
