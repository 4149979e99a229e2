"""/incident/info|list|list-by-ids|feed|alert/list|past/list: reads, for any member who may view
channels (channel_view) or manage incidents (incident_manage)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.incident.query import service, similar
from dutyline.incident.query.schemas import (
    IncidentInfo,
    IncidentInfoRequest,
    IncidentListResponse,
    ListIncidentAlertsRequest,
    ListIncidentAlertsResponse,
    ListIncidentFeedRequest,
    ListIncidentFeedResponse,
    ListIncidentsByIdsRequest,
    ListIncidentsRequest,
    ListPastIncidentsRequest,
    ListPastIncidentsResponse,
)

router = Router("Incidents")
_READ = service.VIEW_PERMISSIONS


@router.post("/incident/info", service=service.incident_info_sync)
def incident_info(conn: Connection, ctx: Context, req: IncidentInfoRequest) -> IncidentInfo:
    """Get one incident of the account, with the changes of its channel just before it."""
    return service.incident_info_sync(conn, ctx.actor, incident_id=req.incident_id,
                                      include_alerts=req.include_alerts,
                                      deps=ctx.runtime.deps, with_changes=True)


@router.post("/incident/list", service=service.list_incidents_sync)
def incident_list(conn: Connection, ctx: Context, req: ListIncidentsRequest
                  ) -> IncidentListResponse:
    """List incidents started in a window of at most 31 days, filtered, by page or cursor."""
    return service.list_incidents_sync(
        conn, ctx.actor, start_time=req.start_time, end_time=req.end_time, asc=req.asc,
        offset=req.offset, limit=req.limit, search_after_ctx=req.search_after_ctx,
        progress=req.progress, incident_severity=req.incident_severity,
        channel_ids=req.channel_ids, team_ids=req.team_ids, is_my_team=req.is_my_team,
        is_my_channel=req.is_my_channel, responder_ids=req.responder_ids,
        acker_ids=req.acker_ids, creator_ids=req.creator_ids, closer_ids=req.closer_ids,
        incident_ids=req.incident_ids, nums=req.nums, query=req.query,
        is_snoozed=req.is_snoozed, ever_muted=req.ever_muted,
        deps=ctx.runtime.deps)


@router.post("/incident/list-by-ids", service=service.list_by_ids_sync)
def incident_list_by_ids(
    conn: Connection, ctx: Context, req: ListIncidentsByIdsRequest
) -> IncidentListResponse:
    """Get up to 100 incidents by id; unknown ids are left out."""
    return service.list_by_ids_sync(conn, ctx.actor, incident_ids=req.incident_ids,
                                    include_alerts=req.include_alerts,
                                    deps=ctx.runtime.deps)


@router.post("/incident/feed", service=service.incident_feed_sync)
def incident_feed(conn: Connection, ctx: Context, req: ListIncidentFeedRequest
                  ) -> ListIncidentFeedResponse:
    """The incident's timeline: who did what, and when."""
    return service.incident_feed_sync(conn, ctx.actor, incident_id=req.incident_id,
                                      types=req.types, asc=req.asc, offset=req.offset,
                                      limit=req.limit)


@router.post("/incident/alert/list", service=service.incident_alerts_sync)
def incident_alert_list(
    conn: Connection, ctx: Context, req: ListIncidentAlertsRequest
) -> ListIncidentAlertsResponse:
    """The alerts grouped into an incident."""
    return service.incident_alerts_sync(
        conn, ctx.actor, incident_id=req.incident_id, is_active=req.is_active,
        include_events=req.include_events, offset=(req.p - 1) * req.limit, limit=req.limit)


@router.post("/incident/past/list", service=similar.past_incidents_sync)
def incident_past_list(
    conn: Connection, ctx: Context, req: ListPastIncidentsRequest
) -> ListPastIncidentsResponse:
    """Earlier incidents of the same channel, most similar by title and labels first."""
    limit = req.limit or similar.DEFAULT_LIMIT
    total, items = similar.past_incidents_sync(
        conn, ctx.actor, incident_id=req.incident_id, limit=limit,
        offset=(req.p - 1) * limit, deps=ctx.runtime.deps)
    return ListPastIncidentsResponse(items=items, total=total)
