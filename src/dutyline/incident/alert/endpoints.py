"""/alert/* and /alert-event/list: reads need channel view; /alert/merge, which changes
incidents, needs incident management (the reference lists channel view for it, which the
read-only built-in Member role holds: moving alerts between incidents is a write, and that
role stays read-only)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.permissions import (
    CHANNEL_VIEW,
)
from dutyline.incident.alert import route_preview, service
from dutyline.incident.alert.route_preview import RoutePreviewRequest, RoutePreviewResponse
from dutyline.incident.alert.schemas import (
    AlertEventGlobalListRequest,
    AlertEventGlobalListResponse,
    AlertEventListRequest,
    AlertEventListResponse,
    AlertFeedRequest,
    AlertFeedResponse,
    AlertItem,
    AlertListByIdsRequest,
    AlertListRequest,
    AlertListResponse,
    AlertLookup,
    AlertMergeRequest,
)
from dutyline.incident.ingest import service as ingestion
from dutyline.incident.ingest.schemas import TestAlertRequest, TestAlertResponse
from dutyline.incident.lifecycle import alert_merge

router = Router("Alerts")
VIEW = (CHANNEL_VIEW,)


@router.post("/alert/list", service=service.list_alerts_sync)
def alert_list(conn: Connection, ctx: Context, req: AlertListRequest) -> AlertListResponse:
    """List the account's alerts in a time range (at most 31 days), a page at a time."""
    return service.list_alerts_sync(
        conn, ctx.actor, start_time=req.start_time, end_time=req.end_time, p=req.p,
        limit=req.limit, search_after_ctx=req.search_after_ctx,
        by_updated_at=req.by_updated_at, channel_ids=req.channel_ids,
        integration_ids=req.integration_ids, alert_ids=req.alert_ids,
        alert_keys=req.alert_keys, alert_severity=req.alert_severity,
        is_active=req.is_active, ever_muted=req.ever_muted, orderby=req.orderby, asc=req.asc)


@router.post("/alert/info", service=service.alert_info_sync)
def alert_info(conn: Connection, ctx: Context, req: AlertLookup) -> AlertItem:
    """Get one alert with its incident and event count."""
    return service.alert_info_sync(conn, ctx.actor, alert_id=req.alert_id)


@router.post("/alert/event/list", service=service.list_events_sync)
def alert_event_list(conn: Connection, ctx: Context,
                     req: AlertEventListRequest) -> AlertEventListResponse:
    """List the raw events of one alert in arrival order."""
    return service.list_events_sync(conn, ctx.actor, alert_id=req.alert_id,
                                    offset=req.offset, limit=req.limit)


@router.post("/alert/list-by-ids", service=service.list_by_ids_sync)
def alert_list_by_ids(conn: Connection, ctx: Context,
                      req: AlertListByIdsRequest) -> AlertListResponse:
    """Get up to 100 alerts by id; an unknown id fails the whole call."""
    return service.list_by_ids_sync(conn, ctx.actor, alert_ids=req.alert_ids)


@router.post("/alert/feed", service=service.alert_feed_sync)
def alert_feed(conn: Connection, ctx: Context, req: AlertFeedRequest) -> AlertFeedResponse:
    """The activity of one alert: triggered, closed."""
    return service.alert_feed_sync(conn, ctx.actor, alert_id=req.alert_id, asc=req.asc,
                                   types=req.types, offset=req.offset, limit=req.limit)


@router.post("/alert-event/list", service=service.list_account_events_sync)
def alert_event_global_list(
    conn: Connection, ctx: Context, req: AlertEventGlobalListRequest
) -> AlertEventGlobalListResponse:
    """Raw events across the account's alerts in a window, filtered, a page at a time."""
    return service.list_account_events_sync(
        conn, ctx.actor, start_time=req.start_time, end_time=req.end_time, p=req.p,
        limit=req.limit, search_after_ctx=req.search_after_ctx,
        integration_ids=req.integration_ids, integration_types=req.integration_types,
        channel_ids=req.channel_ids, severities=req.severities, asc=req.asc)


@router.post("/alert/merge", service=alert_merge.merge_alerts, write=True)
async def alert_merge_into_incident(ctx: Context, req: AlertMergeRequest) -> None:
    """Merge alerts into an existing open incident."""
    await alert_merge.merge_alerts(
        ctx.conn, ctx.actor, incident_id=req.incident_id, alert_ids=req.alert_ids,
        comment=req.comment, title=req.title, owner_id=req.owner_id)


@router.post("/route/preview", service=route_preview.preview_sync)
def route_preview_alerts(conn: Connection, ctx: Context,
                         req: RoutePreviewRequest) -> RoutePreviewResponse:
    """Which cases of a proposed route (or of the current one, when `route` gives neither
    cases nor a default) these alerts match and the channels they would go to. Nothing is
    stored."""
    return RoutePreviewResponse(items=route_preview.preview_sync(
        conn, ctx.actor, alert_ids=req.alert_ids, cases=req.route.cases,
        default=req.route.default))


@router.post("/integration/test-alert", service=ingestion.send_test_alert, write=True)
async def integration_test_alert(ctx: Context, req: TestAlertRequest) -> TestAlertResponse:
    """Send a test alert through a standard integration, as if its source had pushed it: it
    goes through the integration's pipeline, routes, noise rules and grouping, opens or
    joins an incident and pages like any other; the answer says what became of it. A
    dutyline extension."""
    return await ingestion.send_test_alert(ctx.conn, ctx.actor, integration_id=req.integration_id,
                                           event_status=req.event_status)
