"""/notify/delivery/list (every delivery of an incident with its attempts),
/webhook/history/list|detail (reference: the outgoing webhook history) and
/member/notify/test (a test notification to a member, answered per channel)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.incident.service import query as incidents
from dutyline.notify.delivery import service
from dutyline.notify.delivery.schemas import (
    GetWebhookHistoryDetailRequest,
    ListDeliveriesRequest,
    ListDeliveriesResponse,
    ListWebhookHistoryRequest,
    ListWebhookHistoryResponse,
    NotifyTestRequest,
    NotifyTestResponse,
    WebhookHistoryDetail,
)

router = Router("Notifications")


@router.post("/notify/delivery/list", service=service.deliveries_sync)
def delivery_list(conn: Connection, ctx: Context,
                  req: ListDeliveriesRequest) -> ListDeliveriesResponse:
    """Every notification of an incident: recipient, channel, outcome and each attempt."""
    # The incident must be one the caller sees (not found otherwise).
    incidents.require_visible_sync(conn, ctx.actor, incident_id=req.incident_id)
    return ListDeliveriesResponse(items=service.deliveries_sync(
        conn, ctx.actor, incident_id=req.incident_id))


@router.post("/webhook/history/list", service=service.webhook_history_sync)
def webhook_history_list(conn: Connection, ctx: Context,
                         req: ListWebhookHistoryRequest) -> ListWebhookHistoryResponse:
    """Outgoing webhook attempts in a time window (ms), newest first unless `asc`."""
    return service.webhook_history_sync(
        conn, ctx.actor, start_ms=req.start_time, end_ms=req.end_time, limit=req.limit,
        status=req.status, ref_id=req.ref_id, asc=req.asc, cursor=req.search_after_ctx,
        event_types=req.event_types, integration_id=req.integration_id)


@router.post("/webhook/history/detail", service=service.webhook_history_detail_sync)
def webhook_history_detail(conn: Connection, ctx: Context,
                           req: GetWebhookHistoryDetailRequest) -> WebhookHistoryDetail:
    """One outgoing webhook attempt with its request and response."""
    return service.webhook_history_detail_sync(conn, ctx.actor, event_id=req.event_id)


@router.post("/member/notify/test", write=True, outbound=True, rate_scope="app_key")
async def member_notify_test(ctx: Context, req: NotifyTestRequest) -> NotifyTestResponse:
    """Send a short test message to a member (the caller unless `member_id` names another,
    which needs account management) through each of their channels, or the `channels`
    given, and answer what happened at each: `sent`, `failed` or `skipped`, with the
    reason. Sent at once, each channel bounded by a timeout; nothing is retried. A channel
    tested in the last minute is `skipped` (the wait is its reason), and a request left
    with nothing else to try is refused with RequestTooFrequently (429)."""
    answer = await service.send_test(ctx.conn, ctx.actor, runtime=ctx.runtime,
                                     member_id=req.member_id, channels=req.channels)
    ctx.audit_targets.append(answer.member_id)
    return answer
