"""Timeline entries of an event: add, edit, delete. Each write recomputes the event's status,
close time and affected components, and the statuses of the components it touched
(rules.py). An event keeps at least one entry: deleting the last one is refused. Each needs
status page event management and notes its audit entry (the page, the event, the entry)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import STATUS_PAGE_EVENT_MANAGE
from dutyline.kit.ids import hex_id
from dutyline.status_page import notify
from dutyline.status_page.change import repository as repo
from dutyline.status_page.change import rules
from dutyline.status_page.change.service import require_change
from dutyline.status_page.page import service as pages

ENTRY = "timeline entry"


def _noted_only(_update_id: str) -> tuple[()]:
    # The new entry's id is noted after its page's and event's, in the API row's order.
    return ()


async def _require_entry(conn: AsyncConnection, actor: Actor, page_id: int, change_id: int,
                         update_id: str) -> tuple[Any, Any]:
    change = await require_change(conn, actor, page_id=page_id, change_id=change_id,
                                  lock=True)
    entry = await repo.get_entry(conn, actor.account_id, page_id, change_id, update_id)
    if entry is None:
        raise errors.not_found(ENTRY, update_id)
    return change, entry


async def _recompute(conn: AsyncConnection, actor: Actor, change: Any) -> None:
    fresh = await repo.get_change(conn, actor.account_id, change.page_id, change.change_id)
    touched = await rules.recompute_change(conn, fresh, actor.now_s)
    await rules.recompute_components(conn, change.page_id, touched, actor.now_s)
    await pages.mark_page_changed(conn, actor, page_id=change.page_id)


@writes("/status-page/change/timeline/create", STATUS_PAGE_EVENT_MANAGE,
        targets=_noted_only)
async def add_update(
    conn: AsyncConnection, actor: Actor, *, page_id: int, change_id: int, status: str,
    description: str = "", at_seconds: int | None = None,
    component_changes: Sequence[tuple[str, str]] = (), notify_subscribers: bool | None = None,
) -> str:
    """Add a timeline entry; returns its update_id. Subscribers are emailed when
    `notify_subscribers` says so, or (None) when the event was created to notify them."""
    change = await require_change(conn, actor, page_id=page_id, change_id=change_id,
                                  lock=True)
    now_s = actor.now_s
    rules.check_status("status", change.type, status)
    changes = list(component_changes)
    await rules.check_component_changes(conn, page_id, "component_changes", change.type,
                                        status, changes)
    update_id = hex_id()
    await repo.insert_entries(conn, [{
        "update_id": update_id, "change_id": change_id, "page_id": page_id,
        "account_id": actor.account_id, "at_seconds": now_s if at_seconds is None else at_seconds,
        "status": status, "description": description,
        "component_changes": rules.encode_component_changes(changes),
        "seq": await repo.next_seq(conn, change_id), "created_at": now_s,
    }])
    await _recompute(conn, actor, change)
    actor.note_audit_targets(page_id, change_id, update_id)
    notify_now = change.notify_subscribers if notify_subscribers is None else notify_subscribers
    if notify_now:
        await notify.enqueue(conn, page_id=page_id, change_id=change_id, update_id=update_id,
                             event="updated", now_s=now_s)
    return update_id


@writes("/status-page/change/timeline/update", STATUS_PAGE_EVENT_MANAGE)
async def edit_update(
    conn: AsyncConnection, actor: Actor, *, page_id: int, change_id: int, update_id: str,
    at_seconds: int | None = None, description: str | None = None, status: str | None = None,
    component_changes: Sequence[tuple[str, str]] | None = None,
    notify_subscribers: bool = False,
) -> None:
    """Edit an entry (None leaves a field unchanged); statuses are recomputed, since a new
    time or status can change which entry is the latest."""
    change, entry = await _require_entry(conn, actor, page_id, change_id, update_id)
    new_status = entry.status if status is None else status
    if status is not None:
        rules.check_status("status", change.type, status)
    changes = (rules.decode_component_changes(entry.component_changes)
               if component_changes is None else list(component_changes))
    if component_changes is not None:
        await rules.check_component_changes(conn, page_id, "component_changes", change.type,
                                            new_status, changes)
    else:
        # Existing changes must still fit if the entry now closes the event.
        rules.check_entry_changes("status", change.type, new_status, changes)
    values: dict[str, Any] = {"status": new_status,
                              "component_changes": rules.encode_component_changes(changes)}
    if at_seconds is not None:
        values["at_seconds"] = at_seconds
    if description is not None:
        values["description"] = description
    await repo.update_entry(conn, update_id, values)
    await _recompute(conn, actor, change)
    actor.note_audit_targets(page_id, change_id, update_id)
    if notify_subscribers:
        await notify.enqueue(conn, page_id=page_id, change_id=change_id, update_id=update_id,
                             event="updated", now_s=actor.now_s)


@writes("/status-page/change/timeline/delete", STATUS_PAGE_EVENT_MANAGE)
async def delete_update(
    conn: AsyncConnection, actor: Actor, *, page_id: int, change_id: int, update_id: str
) -> None:
    """Delete an entry, then recompute from what remains. The last entry stays."""
    change, _ = await _require_entry(conn, actor, page_id, change_id, update_id)
    if await repo.count_entries(conn, change_id) <= 1:
        raise errors.invalid(
            "update_id",
            "is the event's only timeline entry; an event keeps at least one (delete the "
            "event instead)")
    await repo.delete_entry(conn, update_id)
    await _recompute(conn, actor, change)
    actor.note_audit_targets(page_id, change_id, update_id)
