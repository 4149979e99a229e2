"""What an event's timeline decides, in one place.

- An event's status is the status of its latest entry (by `at_seconds`, ties in the order
  the entries were added); every entry carries a status (an entry created without one takes
  the status in force before it).
- Its close time: the close time the caller set, if any; otherwise the latest entry's time
  when the event is resolved or completed; otherwise 0 (still open).
- Its affected components: every component some entry mentions, in first-mention order, with
  the status its latest mention gave it; once the event is closed they are operational
  (a closed event affects nothing any more).
- A component's own status: the status in the latest entry that mentions it among the page's
  still-open events; operational when none does.

Every timeline write (create, update, delete) and every event create or delete recomputes
these from what is stored, so no order of edits can leave a stale status behind."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.status_page.change import repository as repo
from dutyline.status_page.page import repository as page_repo

INCIDENT_STATUSES = ("investigating", "identified", "monitoring", "resolved")
MAINTENANCE_STATUSES = ("scheduled", "ongoing", "completed")
CLOSED = frozenset(repo.CLOSED_STATUSES)
COMPONENT_STATUSES_BY_TYPE = {
    "incident": frozenset({"operational", "degraded", "partial_outage", "full_outage"}),
    "maintenance": frozenset({"operational", "under_maintenance"}),
}
OPERATIONAL = "operational"


def check_status(field: str, change_type: str, status: str) -> None:
    allowed = INCIDENT_STATUSES if change_type == "incident" else MAINTENANCE_STATUSES
    if status not in allowed:
        raise errors.invalid(
            field, "is not a status of an incident" if change_type == "incident"
            else "is not a status of a maintenance")


def check_entry_changes(field: str, change_type: str, status: str,
                        changes: Sequence[tuple[str, str]]) -> None:
    """Component ids unique, statuses allowed for the event type, and all operational on an
    entry that closes the event."""
    ids = [cid for cid, _ in changes]
    if len(set(ids)) != len(ids):
        raise errors.invalid(field, "names a component more than once")
    allowed = COMPONENT_STATUSES_BY_TYPE[change_type]
    for _, component_status in changes:
        if component_status not in allowed:
            raise errors.invalid(
                field, "under_maintenance is for maintenances only" if change_type == "incident"
                else "a maintenance sets components to operational or under_maintenance")
        if status in CLOSED and component_status != OPERATIONAL:
            raise errors.invalid(field, "must all be operational when the event closes")


async def check_component_changes(
    conn: AsyncConnection, page_id: int, field: str, change_type: str, status: str,
    changes: Sequence[tuple[str, str]],
) -> None:
    """As check_entry_changes, and every component on this page."""
    check_entry_changes(field, change_type, status, changes)
    ids = {cid for cid, _ in changes}
    if len(await page_repo.components_by_id(conn, page_id, ids)) != len(ids):
        raise errors.invalid(field, "names a component that is not on this page")


def encode_component_changes(changes: Iterable[tuple[str, str]]) -> str:
    return json.dumps([{"component_id": c, "status": s} for c, s in changes],
                      separators=(",", ":"))


def decode_component_changes(raw: str) -> list[tuple[str, str]]:
    return [(str(c["component_id"]), str(c["status"])) for c in json.loads(raw or "[]")]


def affected_of(raw: str) -> dict[str, str]:
    """A change's stored affected components: id -> status, in first-mention order."""
    return {str(c["component_id"]): str(c["status"]) for c in json.loads(raw or "[]")}


async def recompute_change(conn: AsyncConnection, change: Any, now_s: int) -> set[str]:
    """Status, close time and affected components of one change, from its entries. Returns
    the ids of components it mentioned before or after, the ones whose status may move."""
    entries = (await repo.entries(conn, [change.change_id]))[change.change_id]
    before = set(affected_of(change.affected_components))
    if not entries:  # only while the change itself is being deleted
        return before
    latest = entries[-1]
    status = latest.status
    affected: dict[str, str] = {}
    for entry in entries:
        for component_id, component_status in decode_component_changes(entry.component_changes):
            affected[component_id] = component_status
    if status in CLOSED:
        affected = dict.fromkeys(affected, OPERATIONAL)
    close_at = change.scheduled_close_at_seconds or (
        latest.at_seconds if status in CLOSED else 0)
    await repo.update_change(conn, change.change_id, {
        "status": status,
        "close_at_seconds": close_at,
        "affected_components": json.dumps(
            [{"component_id": c, "status": s} for c, s in affected.items()],
            separators=(",", ":")),
        "updated_at": max(now_s, change.updated_at),
    })
    return before | set(affected)


async def recompute_components(
    conn: AsyncConnection, page_id: int, component_ids: set[str], now_s: int
) -> None:
    """Each named component's status from the latest mention among the page's open changes."""
    if not component_ids:
        return
    statuses = dict.fromkeys(component_ids, OPERATIONAL)
    for entry in await repo.open_change_entries(conn, page_id):
        for component_id, component_status in decode_component_changes(entry.component_changes):
            if component_id in statuses:
                statuses[component_id] = component_status
    await page_repo.set_component_statuses(conn, page_id, statuses, now_s)
