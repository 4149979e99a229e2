"""/status-page/subscriber/list|import|export (status page management)."""

from __future__ import annotations

from dutyline.api.operation import Context, Router
from dutyline.platform.permissions import STATUS_PAGE_MANAGE
from dutyline.status_page import tokens
from dutyline.status_page.subscriber import service
from dutyline.status_page.subscriber.schemas import (
    SubscriberExportRequest,
    SubscriberImportRequest,
    SubscriberImportResponse,
    SubscriberListRequest,
    SubscriberListResponse,
)

router = Router("Status page subscribers")
MANAGE = (STATUS_PAGE_MANAGE,)


@router.post("/status-page/subscriber/list", permissions=MANAGE, also_get=True)
async def subscriber_list(ctx: Context, req: SubscriberListRequest) -> SubscriberListResponse:
    """List a page's confirmed subscribers, a page at a time."""
    return await service.list_subscribers(ctx.conn, ctx.caller.account_id, req)


@router.post("/status-page/subscriber/import", permissions=MANAGE, write=True)
async def subscriber_import(ctx: Context, req: SubscriberImportRequest) -> SubscriberImportResponse:
    """Import email subscribers, confirmed; known addresses are skipped and counted."""
    secret_key = await tokens.server_key(ctx.runtime.settings)
    ctx.audit_targets.append(req.page_id)
    return await service.import_request(
        ctx.conn, ctx.caller.account_id, req.page_id, req.method, req.subscribers,
        secret_key=secret_key, now_s=ctx.now_s)


@router.post("/status-page/subscriber/export", permissions=MANAGE, audited=True)
async def subscriber_export(ctx: Context, req: SubscriberExportRequest) -> str:
    """Export a page's confirmed subscribers as CSV text (Method, Recipient, Components,
    Subscribe All, Locale)."""
    ctx.audit_targets.append(req.page_id)
    return await service.export_csv(ctx.conn, ctx.caller.account_id, req.page_id,
                                    req.component_ids)
