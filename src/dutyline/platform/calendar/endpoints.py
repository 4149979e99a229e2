"""/calendar/* operations: service calendars and their events."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.platform.calendar import service
from dutyline.platform.calendar.schemas import (
    CalendarCreateRequest,
    CalendarCreateResponse,
    CalendarIDRequest,
    CalendarItem,
    CalendarListRequest,
    CalendarListResponse,
    CalendarUpdateRequest,
    CalEventIDRequest,
    CalEventListRequest,
    CalEventListResponse,
    CalEventUpsertRequest,
    CalEventUpsertResponse,
)

router = Router("Calendars")


@router.post("/calendar/create", service=service.create_calendar, write=True)
async def calendar_create(ctx: Context, req: CalendarCreateRequest) -> CalendarCreateResponse:
    """Create a service calendar (at most 5 an account)."""
    cal_id, cal_name = await service.create_calendar(
        ctx.conn, ctx.actor, calendar=service.CalendarChanges(
            cal_name=req.cal_name, description=req.description, timezone=req.timezone,
            team_id=req.team_id, workdays=req.workdays, extra_cal_ids=req.extra_cal_ids))
    return CalendarCreateResponse(cal_id=cal_id, cal_name=cal_name)


@router.post("/calendar/update", service=service.update_calendar, write=True)
async def calendar_update(ctx: Context, req: CalendarUpdateRequest) -> None:
    """Update a service calendar: only the fields given (not null) change."""
    await service.update_calendar(ctx.conn, ctx.actor, cal_id=req.cal_id,
                                  changes=service.CalendarChanges(
                                      cal_name=req.cal_name, description=req.description,
                                      timezone=req.timezone, team_id=req.team_id,
                                      workdays=req.workdays, extra_cal_ids=req.extra_cal_ids))


@router.post("/calendar/delete", service=service.delete_calendar, write=True)
async def calendar_delete(ctx: Context, req: CalendarIDRequest) -> None:
    """Delete a service calendar and its events; refused while a rule's time window uses it."""
    await service.delete_calendar(ctx.conn, ctx.actor, cal_id=req.cal_id)


@router.post("/calendar/info")
def calendar_info(conn: Connection, ctx: Context, req: CalendarIDRequest) -> CalendarItem:
    """One service calendar."""
    return service.calendar_info_sync(conn, ctx.actor, cal_id=req.cal_id)


@router.post("/calendar/list")
def calendar_list(conn: Connection, ctx: Context,
                  req: CalendarListRequest) -> CalendarListResponse:
    """The account's service calendars."""
    items = service.list_calendars_sync(conn, ctx.actor, kind=req.kind)
    return CalendarListResponse(items=items, total=len(items))


@router.post("/calendar/event/upsert", service=service.upsert_event, write=True)
async def calendar_event_upsert(ctx: Context,
                                req: CalEventUpsertRequest) -> CalEventUpsertResponse:
    """Create (no event_id) or replace a holiday or working-day event."""
    event_id = await service.upsert_event(
        ctx.conn, ctx.actor, cal_id=req.cal_id, event_id=req.event_id,
        event=service.EventChanges(summary=req.summary, description=req.description,
                                   start_at=req.start_at, end_at=req.end_at,
                                   is_off=req.is_off))
    return CalEventUpsertResponse(cal_id=req.cal_id, event_id=event_id,
                                  summary=req.summary.strip())


@router.post("/calendar/event/delete", service=service.delete_event, write=True)
async def calendar_event_delete(ctx: Context, req: CalEventIDRequest) -> None:
    """Delete one event of a calendar."""
    await service.delete_event(ctx.conn, ctx.actor, cal_id=req.cal_id, event_id=req.event_id)


@router.post("/calendar/event/list")
def calendar_event_list(conn: Connection, ctx: Context,
                        req: CalEventListRequest) -> CalEventListResponse:
    """A calendar's events in a year, month or day, with its weekdays off."""
    items = service.list_events_sync(conn, ctx.actor, cal_id=req.cal_id, year=req.year,
                                     month=req.month, day=req.day)
    return CalEventListResponse(items=items, total=len(items))
