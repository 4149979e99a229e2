"""/schedule/* operations, and the caller's calendar feed URL."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Empty, Router
from dutyline.api.permissions import SCHEDULE_MANAGE, SCHEDULE_VIEW
from dutyline.api.types import SaveWarnings
from dutyline.schedule import feed, service
from dutyline.schedule.schemas import (
    FeedCreateResponse,
    FeedInfoResponse,
    ScheduleIDResponse,
    ScheduleIDsBodyRequest,
    ScheduleInfoRequest,
    ScheduleItem,
    ScheduleListRequest,
    ScheduleListResponse,
    ScheduleSelfRequest,
    ScheduleSelfResponse,
    ScheduleUpsertRequest,
)

router = Router("On-call schedules")
_VIEW = (SCHEDULE_VIEW, SCHEDULE_MANAGE)


@router.post("/schedule/create", service=service.create_schedule, write=True)
async def schedule_create(ctx: Context, req: ScheduleUpsertRequest) -> ScheduleIDResponse:
    """Create an on-call schedule: layers of rotating groups, restrictions, overrides."""
    schedule_id = await service.create_schedule(
        ctx.conn, ctx.actor, schedule_name=req.schedule_name or req.name,
        description=req.description, team_id=req.team_id, time_zone=req.time_zone,
        layers=req.layers, notify=req.notify, deps=ctx.runtime.deps)
    ctx.audit_targets.append(schedule_id)
    return ScheduleIDResponse(schedule_id=schedule_id, warnings=service.delivery_warnings(
        ctx.runtime.settings, req.notify))


@router.post("/schedule/update", service=service.update_schedule, write=True)
async def schedule_update(ctx: Context, req: ScheduleUpsertRequest) -> SaveWarnings:
    """Update a schedule; fields left out keep their value, `layers` replaces the stack;
    `warnings` names what the server's settings cannot send."""
    await service.update_schedule(
        ctx.conn, ctx.actor, schedule_id=req.schedule_id,
        schedule_name=req.schedule_name or req.name, description=req.description,
        team_id=req.team_id, time_zone=req.time_zone, layers=req.layers, notify=req.notify,
        deps=ctx.runtime.deps)
    ctx.audit_targets.append(req.schedule_id)
    return SaveWarnings(warnings=service.delivery_warnings(ctx.runtime.settings, req.notify))


@router.post("/schedule/delete", service=service.delete_schedules, write=True)
async def schedule_delete(ctx: Context, req: ScheduleIDsBodyRequest) -> None:
    """Delete schedules by id (all or nothing)."""
    ctx.audit_targets.extend(
        await service.delete_schedules(ctx.conn, ctx.actor, schedule_ids=req.schedule_ids))


@router.post("/schedule/info", service=service.schedule_info_sync)
def schedule_info(conn: Connection, ctx: Context, req: ScheduleInfoRequest) -> ScheduleItem:
    """A schedule with its computed layers and final timeline for a window (≤ 45 days)."""
    return service.schedule_info_sync(conn, ctx.actor, schedule_id=req.schedule_id,
                                      start=req.start, end=req.end)


@router.post("/schedule/infos", service=service.schedule_infos_sync)
def schedule_infos(conn: Connection, ctx: Context,
                   req: ScheduleIDsBodyRequest) -> ScheduleSelfResponse:
    """Schedules by id; unknown ids are left out."""
    return ScheduleSelfResponse(items=service.schedule_infos_sync(
        conn, ctx.actor, schedule_ids=req.schedule_ids))


@router.post("/schedule/list")
def schedule_list(conn: Connection, ctx: Context,
                  req: ScheduleListRequest) -> ScheduleListResponse:
    """The account's schedules, a page at a time; with start and end, their timelines."""
    total, items = service.list_schedules_sync(
        conn, ctx.actor, query=req.query, p=req.p, limit=req.limit,
        is_my_team=req.is_my_team, is_my_manage=req.is_my_manage, team_ids=req.team_ids,
        start=req.start, end=req.end)
    return ScheduleListResponse(items=items, total=total)


@router.post("/schedule/preview", service=service.preview_sync)
def schedule_preview(conn: Connection, ctx: Context,
                     req: ScheduleUpsertRequest) -> ScheduleItem:
    """The timeline a definition would give in a window (≤ 45 days); nothing is stored."""
    return service.preview_sync(conn, ctx.actor, time_zone=req.time_zone,
                                layers=req.layers, start=req.start, end=req.end)


@router.post("/schedule/self", service=service.my_schedules_sync)
def schedule_self(conn: Connection, ctx: Context,
                  req: ScheduleSelfRequest) -> ScheduleSelfResponse:
    """The caller's schedules with only the caller's shifts (window ≤ 30 days; default the
    next 7 days)."""
    return ScheduleSelfResponse(items=service.my_schedules_sync(
        conn, ctx.actor, start=req.start, end=req.end))


@router.post("/schedule/feed/create", write=True)
async def feed_create(ctx: Context, req: Empty) -> FeedCreateResponse:
    """Create, or rotate, the caller's secret iCalendar feed URL (shown only here)."""
    url, created_at = await feed.create_feed(ctx.conn, ctx.actor, deps=ctx.runtime.deps)
    ctx.audit_targets.append(ctx.actor.person_id)
    return FeedCreateResponse(feed_url=url, created_at=created_at)


@router.post("/schedule/feed/info")
def feed_info(conn: Connection, ctx: Context, req: Empty) -> FeedInfoResponse:
    """Whether the caller has a feed URL (never the URL itself)."""
    created_at = feed.feed_created_at_sync(conn, ctx.actor)
    return FeedInfoResponse(enabled=created_at is not None, created_at=created_at or 0)


@router.post("/schedule/feed/revoke", write=True)
async def feed_revoke(ctx: Context, req: Empty) -> None:
    """Revoke the caller's feed URL: it answers 404 from now on."""
    await feed.revoke_feed(ctx.conn, ctx.actor)
    ctx.audit_targets.append(ctx.actor.person_id)
