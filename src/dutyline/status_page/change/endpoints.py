"""/status-page/change/* and /status-page/change/timeline/*: writes need status page event
management; reads are open to either status page permission (GET and POST)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.permissions import STATUS_PAGE_EVENT_MANAGE, STATUS_PAGE_MANAGE
from dutyline.status_page.change import service, timeline
from dutyline.status_page.change.schemas import (
    ActiveChangeListRequest,
    ActiveChangeListResponse,
    ChangeCreateRequest,
    ChangeCreateResponse,
    ChangeItem,
    ChangeListRequest,
    ChangeListResponse,
    ChangeLookup,
    ChangeUpdateRequest,
    TimelineCreateRequest,
    TimelineCreateResponse,
    TimelineDeleteRequest,
    TimelineUpdateRequest,
)

router = Router("Status page events")
EVENTS = (STATUS_PAGE_EVENT_MANAGE,)
READ = (STATUS_PAGE_MANAGE, STATUS_PAGE_EVENT_MANAGE)


@router.post("/status-page/change/create", service=service.create_change, write=True)
async def change_create(ctx: Context, req: ChangeCreateRequest) -> ChangeCreateResponse:
    """Create an incident or maintenance with its first timeline entries."""
    created = await service.create_change(ctx.conn, ctx.actor, new=service.NewChange(
        page_id=req.page_id, change_type=req.type, title=req.title, status=req.status,
        description=req.description,
        updates=[service.EntryIn(status=u.status, description=u.description,
                                 at_seconds=u.at_seconds,
                                 component_changes=[(c.component_id, c.status)
                                                    for c in u.component_changes])
                 for u in req.updates],
        start_at_seconds=req.start_at_seconds, close_at_seconds=req.close_at_seconds,
        responders=req.responders, linked_changes=req.linked_changes,
        notify_subscribers=req.notify_subscribers,
        auto_update_by_schedule=req.auto_update_by_schedule,
        is_retrospective=req.is_retrospective,
    ))
    ctx.audit_targets.extend([req.page_id, created.change_id])
    return ChangeCreateResponse(change_id=created.change_id, change_name=created.title)


@router.post("/status-page/change/update", service=service.update_change, write=True)
async def change_update(ctx: Context, req: ChangeUpdateRequest) -> None:
    """Update an event's own fields; omitted fields are left unchanged."""
    await service.update_change(
        ctx.conn, ctx.actor, page_id=req.page_id, change_id=req.change_id, title=req.title,
        description=req.description, responders=req.responders,
        linked_changes=req.linked_changes, start_at_seconds=req.start_at_seconds,
        close_at_seconds=req.close_at_seconds, notify_subscribers=req.notify_subscribers,
        auto_update_by_schedule=req.auto_update_by_schedule,
    )
    ctx.audit_targets.extend([req.page_id, req.change_id])


@router.post("/status-page/change/delete", service=service.delete_change, write=True)
async def change_delete(ctx: Context, req: ChangeLookup) -> None:
    """Delete an event and its timeline."""
    await service.delete_change(ctx.conn, ctx.actor, page_id=req.page_id,
                                change_id=req.change_id)
    ctx.audit_targets.extend([req.page_id, req.change_id])


@router.post("/status-page/change/list", service=service.list_changes_sync, also_get=True)
def change_list(conn: Connection, ctx: Context, req: ChangeListRequest) -> ChangeListResponse:
    """List a page's events of one type, newest start first."""
    total, items = service.list_changes_sync(
        conn, ctx.actor, page_id=req.page_id, change_type=req.type, status=req.status,
        start_from=req.start_at_seconds, start_to=req.end_at_seconds, offset=req.offset,
        limit=req.limit)
    return ChangeListResponse(p=req.p, limit=req.limit, total=total,
                              has_next_page=req.offset + len(items) < total, items=items)


@router.post("/status-page/change/active/list", service=service.active_changes_sync, also_get=True)
def change_active_list(
    conn: Connection, ctx: Context, req: ActiveChangeListRequest
) -> ActiveChangeListResponse:
    """A page's open incidents and maintenances, with their timelines."""
    items = service.active_changes_sync(conn, ctx.actor, page_id=req.page_id,
                                        change_type=req.type)
    return ActiveChangeListResponse(items=items, total=len(items))


@router.post("/status-page/change/info", service=service.change_info_sync, also_get=True)
def change_info(conn: Connection, ctx: Context, req: ChangeLookup) -> ChangeItem:
    """Get one event with its timeline."""
    return service.change_info_sync(conn, ctx.actor, page_id=req.page_id,
                                    change_id=req.change_id)


@router.post("/status-page/change/timeline/create", service=timeline.add_update, write=True)
async def timeline_create(ctx: Context, req: TimelineCreateRequest) -> TimelineCreateResponse:
    """Add a timeline entry to an event."""
    update_id = await timeline.add_update(
        ctx.conn, ctx.actor, page_id=req.page_id, change_id=req.change_id, status=req.status,
        description=req.description, at_seconds=req.at_seconds,
        component_changes=[(c.component_id, c.status) for c in req.component_changes],
        notify_subscribers=req.notify_subscribers,
    )
    ctx.audit_targets.extend([req.page_id, req.change_id, update_id])
    return TimelineCreateResponse(update_id=update_id)


@router.post("/status-page/change/timeline/update", service=timeline.edit_update, write=True)
async def timeline_update(ctx: Context, req: TimelineUpdateRequest) -> None:
    """Edit a timeline entry; statuses are recomputed."""
    await timeline.edit_update(
        ctx.conn, ctx.actor, page_id=req.page_id, change_id=req.change_id,
        update_id=req.update_id, at_seconds=req.at_seconds, description=req.description,
        status=req.status,
        component_changes=None if req.component_changes is None else [
            (c.component_id, c.status) for c in req.component_changes],
        notify_subscribers=req.notify_subscribers,
    )
    ctx.audit_targets.extend([req.page_id, req.change_id, req.update_id])


@router.post("/status-page/change/timeline/delete", service=timeline.delete_update, write=True)
async def timeline_delete(ctx: Context, req: TimelineDeleteRequest) -> None:
    """Delete a timeline entry; the event keeps at least one."""
    await timeline.delete_update(ctx.conn, ctx.actor, page_id=req.page_id,
                                 change_id=req.change_id, update_id=req.update_id)
    ctx.audit_targets.extend([req.page_id, req.change_id, req.update_id])
