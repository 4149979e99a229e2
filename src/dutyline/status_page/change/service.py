"""Rules of status page events (changes): create, update, delete, list, info.

Services take `(conn, actor, *, domain arguments)`, raise ApiErrors, read the time from
`actor.clock` and never commit. Writes need status page event management and note their
audit entry (the page and the event); reads admit either status page permission. Timeline
entries live in `timeline.py`; how statuses follow from the timeline, in `rules.py`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import STATUS_PAGE_EVENT_MANAGE, STATUS_PAGE_MANAGE
from dutyline.kit.ids import hex_id, numeric_id
from dutyline.platform.member import service as members
from dutyline.status_page import notify
from dutyline.status_page.change import repository as repo
from dutyline.status_page.change import rules
from dutyline.status_page.change.schemas import (
    ActiveChangeItem,
    ActiveChangeTimeline,
    AffectedComponentItem,
    ChangeItem,
    ChangeUpdateItem,
    ComponentChangeItem,
)
from dutyline.status_page.page import repository as page_repo
from dutyline.status_page.page import service as pages

CHANGE = "status page event"


@dataclass(frozen=True)
class EntryIn:
    """One timeline entry to create. `status` None: the status in force before it."""

    status: str | None = None
    description: str = ""
    at_seconds: int | None = None
    component_changes: Sequence[tuple[str, str]] = field(default_factory=tuple)


@dataclass(frozen=True)
class NewChange:
    """An incident or maintenance to create, with its first timeline entries."""

    page_id: int
    change_type: str
    title: str
    status: str
    updates: Sequence[EntryIn]
    description: str = ""
    start_at_seconds: int | None = None
    close_at_seconds: int | None = None
    responders: Sequence[int] = ()
    linked_changes: Sequence[str] = ()
    notify_subscribers: bool = False
    auto_update_by_schedule: bool = False
    is_retrospective: bool = False


@dataclass(frozen=True)
class CreatedChange:
    page_id: int
    change_id: int
    title: str
    # The entries' ids in the order they were given.
    update_ids: list[str]


async def require_change(
    conn: AsyncConnection, actor: Actor, *, page_id: int, change_id: int, lock: bool = False,
) -> Any:
    """The actor's change on that page, or 400 ResourceNotFound. The page is checked first
    so an unknown page is named as such; `lock` holds it (see pages.require_page)."""
    await pages.require_page(conn, actor, page_id=page_id, lock=lock)
    row = await repo.get_change(conn, actor.account_id, page_id, change_id)
    if row is None:
        raise errors.not_found(CHANGE, change_id)
    return row


def require_change_sync(conn: Connection, actor: Actor, *, page_id: int,
                        change_id: int) -> Any:
    """`require_change` inside a sync unit of database work (never locking: it reads)."""
    pages.require_page_sync(conn, actor, page_id=page_id)
    row = repo.get_change_sync(conn, actor.account_id, page_id, change_id)
    if row is None:
        raise errors.not_found(CHANGE, change_id)
    return row


async def _check_responders(conn: AsyncConnection, actor: Actor, field_name: str,
                            responders: Sequence[int]) -> list[int]:
    wanted = list(dict.fromkeys(responders))
    if wanted:
        found = await members.existing_member_ids(conn, actor, wanted)
        if missing := [p for p in wanted if p not in found]:
            raise errors.invalid(field_name, "unknown members: " + ", ".join(map(str, missing)))
    return wanted


async def _check_linked(conn: AsyncConnection, actor: Actor,
                        linked: Sequence[str]) -> list[str]:
    """Only the account's own events may be linked; any other id is not found, whether it
    is malformed, unknown or another account's."""
    wanted = list(dict.fromkeys(linked))
    numeric = [int(c) for c in wanted if c.isdigit() and len(c) < 19]
    own = await repo.own_change_ids(conn, actor.account_id, numeric)
    for cid in wanted:
        if not (cid.isdigit() and len(cid) < 19 and int(cid) in own):
            raise errors.not_found(CHANGE, cid)
    return wanted


def _check_new(new: NewChange) -> str:
    """The checks that need no database; returns the clean title."""
    if new.change_type not in rules.COMPONENT_STATUSES_BY_TYPE:
        raise errors.invalid("type", "must be incident or maintenance")
    clean_title = new.title.strip()
    if not clean_title:
        raise errors.invalid("title", "is required")
    rules.check_status("status", new.change_type, new.status)
    if not new.updates:
        raise errors.invalid("updates", "needs at least one entry")
    if new.is_retrospective and len(new.updates) < 2:
        raise errors.invalid("updates", "a retrospective event needs at least two entries")
    return clean_title


async def _entry_rows(
    conn: AsyncConnection, actor: Actor, new: NewChange, *, change_id: int, start_at: int,
    update_ids: list[str],
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The entries' rows in time order (ties: as given; a missing status carries the previous
    one on), and the components they affect with their latest status."""
    updates = new.updates
    order = sorted(range(len(updates)), key=lambda i: (
        start_at if updates[i].at_seconds is None else updates[i].at_seconds, i))
    all_ids = [cid for u in updates for cid, _ in u.component_changes]
    known = await page_repo.components_by_id(conn, new.page_id, set(all_ids))
    running = new.status
    rows: list[dict[str, Any]] = []
    affected: dict[str, str] = {}
    for seq, i in enumerate(order, start=1):
        entry = updates[i]
        where = f"updates[{i}]"
        if entry.status is not None:
            rules.check_status(f"{where}.status", new.change_type, entry.status)
            running = entry.status
        changes = list(entry.component_changes)
        if any(cid not in known for cid, _ in changes):
            raise errors.invalid(f"{where}.component_changes",
                                 "names a component that is not on this page")
        rules.check_entry_changes(f"{where}.component_changes", new.change_type, running,
                                  changes)
        affected.update(changes)
        rows.append({
            "update_id": update_ids[i], "change_id": change_id, "page_id": new.page_id,
            "account_id": actor.account_id,
            "at_seconds": start_at if entry.at_seconds is None else entry.at_seconds,
            "status": running, "description": entry.description,
            "component_changes": rules.encode_component_changes(changes), "seq": seq,
            "created_at": actor.now_s,
        })
    return rows, affected


@writes("/status-page/change/create", STATUS_PAGE_EVENT_MANAGE,
        targets=lambda created: [created.page_id, created.change_id])
async def create_change(conn: AsyncConnection, actor: Actor, *, new: NewChange) -> CreatedChange:
    """Create an incident or maintenance with its first timeline entries (at least one).
    With `notify_subscribers`, the page's subscribers are emailed (a job enqueued here)."""
    page_id, now_s = new.page_id, actor.now_s
    await pages.require_page(conn, actor, page_id=page_id, lock=True)
    clean_title = _check_new(new)
    start_at = now_s if new.start_at_seconds is None else new.start_at_seconds
    if new.close_at_seconds and new.close_at_seconds <= start_at:
        raise errors.invalid("close_at_seconds", "must be after start_at_seconds")
    responder_ids = await _check_responders(conn, actor, "responders", new.responders)
    linked_ids = await _check_linked(conn, actor, new.linked_changes)
    change_id = numeric_id()
    update_ids = [hex_id() for _ in new.updates]
    rows, affected = await _entry_rows(conn, actor, new, change_id=change_id,
                                       start_at=start_at, update_ids=update_ids)
    latest = rows[-1]
    closed = latest["status"] in rules.CLOSED
    if closed:
        affected = dict.fromkeys(affected, rules.OPERATIONAL)
    await repo.insert_change(conn, {
        "change_id": change_id, "page_id": page_id, "account_id": actor.account_id,
        "type": new.change_type, "title": clean_title, "description": new.description,
        "status": latest["status"],
        "affected_components": json.dumps(
            [{"component_id": c, "status": s} for c, s in affected.items()],
            separators=(",", ":")),
        "responder_ids": json.dumps(responder_ids),
        "linked_change_ids": json.dumps(linked_ids),
        "start_at_seconds": start_at,
        "close_at_seconds": new.close_at_seconds or (latest["at_seconds"] if closed else 0),
        "scheduled_close_at_seconds": new.close_at_seconds or 0,
        "is_retrospective": new.is_retrospective,
        "notify_subscribers": new.notify_subscribers,
        "auto_update_by_schedule": new.auto_update_by_schedule,
        "created_at": now_s, "updated_at": now_s,
    })
    await repo.insert_entries(conn, rows)
    if not closed:
        # A closed event never moves a component; an open one may.
        await rules.recompute_components(conn, page_id, set(affected), now_s)
    await pages.mark_page_changed(conn, actor, page_id=page_id)
    if new.notify_subscribers:
        await notify.enqueue(conn, page_id=page_id, change_id=change_id,
                             update_id=latest["update_id"], event="created", now_s=now_s)
    return CreatedChange(page_id, change_id, clean_title, update_ids)


@writes("/status-page/change/update", STATUS_PAGE_EVENT_MANAGE)
async def update_change(
    conn: AsyncConnection, actor: Actor, *, page_id: int, change_id: int,
    title: str | None = None, description: str | None = None,
    responders: Sequence[int] | None = None, linked_changes: Sequence[str] | None = None,
    start_at_seconds: int | None = None, close_at_seconds: int | None = None,
    notify_subscribers: bool | None = None, auto_update_by_schedule: bool | None = None,
) -> None:
    """Change an event's own fields (None leaves one unchanged). Its status comes from the
    timeline and is changed there."""
    change = await require_change(conn, actor, page_id=page_id, change_id=change_id, lock=True)
    now_s = actor.now_s
    values: dict[str, Any] = {"updated_at": max(now_s, change.updated_at)}
    if title is not None:
        if not title.strip():
            raise errors.invalid("title", "is required")
        values["title"] = title.strip()
    if description is not None:
        values["description"] = description
    if responders is not None:
        values["responder_ids"] = json.dumps(
            await _check_responders(conn, actor, "responders", responders))
    if linked_changes is not None:
        values["linked_change_ids"] = json.dumps(
            await _check_linked(conn, actor, linked_changes))
    start_at = change.start_at_seconds if start_at_seconds is None else start_at_seconds
    scheduled = (change.scheduled_close_at_seconds if close_at_seconds is None
                 else close_at_seconds)
    if scheduled and scheduled <= start_at:
        raise errors.invalid("close_at_seconds", "must be after start_at_seconds")
    values["start_at_seconds"] = start_at
    values["scheduled_close_at_seconds"] = scheduled
    if notify_subscribers is not None:
        values["notify_subscribers"] = notify_subscribers
    if auto_update_by_schedule is not None:
        values["auto_update_by_schedule"] = auto_update_by_schedule
    await repo.update_change(conn, change_id, values)
    fresh = await repo.get_change(conn, actor.account_id, page_id, change_id)
    await rules.recompute_change(conn, fresh, now_s)  # the close time may follow the schedule
    await pages.mark_page_changed(conn, actor, page_id=page_id)
    actor.note_audit_targets(page_id, change_id)


@writes("/status-page/change/delete", STATUS_PAGE_EVENT_MANAGE)
async def delete_change(
    conn: AsyncConnection, actor: Actor, *, page_id: int, change_id: int
) -> None:
    """Delete an event with its timeline; the components it affected are recomputed."""
    change = await require_change(conn, actor, page_id=page_id, change_id=change_id, lock=True)
    await repo.delete_change(conn, change_id)
    touched = set(rules.affected_of(change.affected_components))
    await rules.recompute_components(conn, page_id, touched, actor.now_s)
    await pages.mark_page_changed(conn, actor, page_id=page_id)
    actor.note_audit_targets(page_id, change_id)


@reads_sync(STATUS_PAGE_MANAGE, STATUS_PAGE_EVENT_MANAGE)
def list_changes_sync(
    conn: Connection, actor: Actor, *, page_id: int, change_type: str,
    status: str | None, start_from: int | None, start_to: int | None, offset: int, limit: int,
) -> tuple[int, list[ChangeItem]]:
    """(total, one page of the page's events of one type), newest start first."""
    pages.require_page_sync(conn, actor, page_id=page_id)
    if status is not None:
        rules.check_status("status", change_type, status)
    total, rows = repo.list_changes_sync(
        conn, actor.account_id, page_id, change_type=change_type, status=status,
        start_from=start_from, start_to=start_to, offset=offset, limit=limit,
    )
    return total, change_items_sync(conn, page_id, rows)


@reads_sync(STATUS_PAGE_MANAGE, STATUS_PAGE_EVENT_MANAGE)
def active_changes_sync(
    conn: Connection, actor: Actor, *, page_id: int, change_type: str | None = None
) -> list[ActiveChangeItem]:
    """The page's open changes (not resolved or completed), of one type or both."""
    pages.require_page_sync(conn, actor, page_id=page_id)
    rows = repo.active_changes_sync(conn, actor.account_id, page_id, change_type)
    items = change_items_sync(conn, page_id, rows)
    return [
        ActiveChangeItem(
            **msgspec.structs.asdict(item), created_at=r.created_at, updated_at=r.updated_at,
            timelines=[ActiveChangeTimeline(timeline_id=timeline_id(u.update_id),
                                            at=u.at_seconds, status=u.status,
                                            description=u.description)
                       for u in item.updates])
        for item, r in zip(items, rows, strict=True)
    ]


def timeline_id(update_id: str) -> int:
    """An update's id as a JSON integer: its first 52 random bits (update ids are random hex),
    below 2**53 so JavaScript reads it exactly."""
    return int(update_id[:13], 16)


@reads_sync(STATUS_PAGE_MANAGE, STATUS_PAGE_EVENT_MANAGE)
def change_info_sync(conn: Connection, actor: Actor, *, page_id: int,
                     change_id: int) -> ChangeItem:
    row = require_change_sync(conn, actor, page_id=page_id, change_id=change_id)
    return change_items_sync(conn, page_id, [row])[0]


def change_items_sync(conn: Connection, page_id: int, rows: list[Any]) -> list[ChangeItem]:
    """Records for changes of one page: two queries however many changes."""
    entries = repo.entries_sync(conn, [r.change_id for r in rows])
    decoded = {e.update_id: rules.decode_component_changes(e.component_changes)
               for es in entries.values() for e in es}
    affected = {r.change_id: rules.affected_of(r.affected_components) for r in rows}
    wanted = {cid for changes in decoded.values() for cid, _ in changes}
    wanted.update(cid for a in affected.values() for cid in a)
    components = page_repo.components_by_id_sync(conn, page_id, wanted)
    items = []
    for r in rows:
        items.append(ChangeItem(
            change_id=r.change_id, page_id=r.page_id, type=r.type, title=r.title,
            description=r.description, status=r.status,
            affected_components=[
                AffectedComponentItem(**pages.component_fields(c), status=status)
                for cid, status in affected[r.change_id].items()
                if (c := components.get(cid)) is not None
            ],
            responder_ids=json.loads(r.responder_ids),
            linked_change_ids=json.loads(r.linked_change_ids),
            start_at_seconds=r.start_at_seconds, close_at_seconds=r.close_at_seconds,
            is_retrospective=bool(r.is_retrospective),
            updates=[
                ChangeUpdateItem(
                    update_id=e.update_id, at_seconds=e.at_seconds, status=e.status,
                    description=e.description,
                    component_changes=[
                        ComponentChangeItem(
                            component_id=cid, status=status,
                            component_name=c.name if (c := components.get(cid)) else "")
                        for cid, status in decoded[e.update_id]
                    ],
                )
                for e in entries[r.change_id]
            ],
            notify_subscribers=bool(r.notify_subscribers),
            auto_update_by_schedule=bool(r.auto_update_by_schedule),
        ))
    return items
