"""/insight/*: incident analytics and their CSV exports; /report/oncall/*: the on-call
reports (insight/reports.py).

Each takes the read permissions of its service (service.READ: those of /incident/list)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.operation import Context, Download, Router
from dutyline.insight import reports, service
from dutyline.insight.report_schemas import (
    ChangeReportRequest,
    ChangeReportResponse,
    NotificationReportRequest,
    NotificationReportResponse,
)
from dutyline.insight.schemas import (
    DimensionInsightResponse,
    InsightAlertByLabelResponse,
    InsightFilter,
    InsightIncidentListRequest,
    InsightIncidentListResponse,
    InsightQueryRequest,
    InsightTopkAlertByLabelRequest,
    ResponderInsightResponse,
)

router = Router("Insights")
_READ = service.READ
_QUERY_FIELDS = frozenset(service.Query.__dataclass_fields__)


def _query(req: InsightFilter) -> service.Query:
    values: dict[str, Any] = {k: v for k, v in msgspec.structs.asdict(req).items()
                              if k in _QUERY_FIELDS}
    return service.Query(**values)


@router.post("/insight/account", service=service.dimension_sync)
def insight_account(conn: Connection, ctx: Context,
                    req: InsightQueryRequest) -> DimensionInsightResponse:
    """Incident figures of the whole account, per day, week or month or over the window."""
    return DimensionInsightResponse(items=service.dimension_sync(
        conn, ctx.actor, by="account", query=_query(req)))


@router.post("/insight/channel", service=service.dimension_sync)
def insight_channel(conn: Connection, ctx: Context,
                    req: InsightQueryRequest) -> DimensionInsightResponse:
    """Incident figures per channel."""
    return DimensionInsightResponse(items=service.dimension_sync(
        conn, ctx.actor, by="channel", query=_query(req)))


@router.post("/insight/team", service=service.dimension_sync)
def insight_team(conn: Connection, ctx: Context,
                 req: InsightQueryRequest) -> DimensionInsightResponse:
    """Incident figures per team (the team owning each incident's channel)."""
    return DimensionInsightResponse(items=service.dimension_sync(
        conn, ctx.actor, by="team", query=_query(req)))


@router.post("/insight/responder", service=service.responders_sync)
def insight_responder(conn: Connection, ctx: Context,
                      req: InsightQueryRequest) -> ResponderInsightResponse:
    """Incident figures per responder."""
    return ResponderInsightResponse(items=service.responders_sync(
        conn, ctx.actor, query=_query(req)))


@router.post("/insight/incident/list", service=service.incidents_sync)
def insight_incident_list(
    conn: Connection, ctx: Context, req: InsightIncidentListRequest
) -> InsightIncidentListResponse:
    """The incidents behind the figures, each with its handling times and counts."""
    if req.search_after_ctx:
        raise errors.invalid("search_after_ctx", "is not supported: page with p and limit")
    total, has_next, items = service.incidents_sync(
        conn, ctx.actor, query=_query(req), offset=(req.p - 1) * req.limit,
        limit=req.limit)
    return InsightIncidentListResponse(total=total, has_next_page=has_next, items=items)


@router.post("/insight/alert/topk-by-label", service=service.alert_topk_sync)
def insight_alert_topk(
    conn: Connection, ctx: Context, req: InsightTopkAlertByLabelRequest
) -> InsightAlertByLabelResponse:
    """The k `check` or `resource` label values with the most alerts in the window."""
    return InsightAlertByLabelResponse(items=service.alert_topk_sync(
        conn, ctx.actor, query=_query(req), label=req.label, k=req.k,
        orderby=req.orderby or "total_alert_cnt", asc=req.asc))


@router.post("/insight/incident/export", service=service.incidents_csv)
async def insight_incident_export(ctx: Context, req: InsightFilter) -> Download:
    """The incident list as CSV (at most 10,000 rows)."""
    text = await service.incidents_csv(ctx.conn, ctx.actor, query=_query(req))
    return Download("insight-incidents.csv", text)


@router.post("/insight/channel/export", service=service.dimension_csv)
async def insight_channel_export(ctx: Context, req: InsightQueryRequest) -> Download:
    """The channel figures as CSV."""
    text = await service.dimension_csv(ctx.conn, ctx.actor, by="channel", query=_query(req))
    return Download("insight-channels.csv", text)


@router.post("/insight/team/export", service=service.dimension_csv)
async def insight_team_export(ctx: Context, req: InsightQueryRequest) -> Download:
    """The team figures as CSV."""
    text = await service.dimension_csv(ctx.conn, ctx.actor, by="team", query=_query(req))
    return Download("insight-teams.csv", text)


@router.post("/insight/responder/export", service=service.responders_csv)
async def insight_responder_export(ctx: Context, req: InsightQueryRequest) -> Download:
    """The responder figures as CSV."""
    text = await service.responders_csv(ctx.conn, ctx.actor, query=_query(req))
    return Download("insight-responders.csv", text)


@router.post("/report/oncall/notifications", service=reports.notifications_sync)
def report_oncall_notifications(
    conn: Connection, ctx: Context, req: NotificationReportRequest
) -> NotificationReportResponse:
    """SMS, voice calls and e-mails sent per day, week or month (in the account's time zone)."""
    return NotificationReportResponse(items=reports.notifications_sync(
        conn, ctx.actor, start_time=req.start_time, end_time=req.end_time, step=req.step,
        time_zone=req.time_zone, channel_ids=req.channel_ids))


@router.post("/report/oncall/changes", service=reports.changes_made_sync)
def report_oncall_changes(conn: Connection, ctx: Context,
                          req: ChangeReportRequest) -> ChangeReportResponse:
    """Changes started and change events received per day, week or month."""
    return ChangeReportResponse(items=reports.changes_made_sync(
        conn, ctx.actor, start_time=req.start_time, end_time=req.end_time, step=req.step,
        time_zone=req.time_zone))
