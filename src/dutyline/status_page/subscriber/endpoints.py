"""/status-page/subscriber/list|import|export (status page management)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.permissions import STATUS_PAGE_MANAGE
from dutyline.status_page import tokens
from dutyline.status_page.subscriber import service
from dutyline.status_page.subscriber.schemas import (
    ImportItem,
    InvalidRecipient,
    SubscriberExportRequest,
    SubscriberImportRequest,
    SubscriberImportResponse,
    SubscriberListRequest,
    SubscriberListResponse,
)

router = Router("Status page subscribers")
MANAGE = (STATUS_PAGE_MANAGE,)


@router.post("/status-page/subscriber/list", service=service.list_subscribers_sync, also_get=True)
def subscriber_list(conn: Connection, ctx: Context,
                    req: SubscriberListRequest) -> SubscriberListResponse:
    """List a page's confirmed subscribers, a page at a time."""
    total, items = service.list_subscribers_sync(
        conn, ctx.actor, page_id=req.page_id,
        component_ids=[p.strip() for p in req.component_ids.split(",") if p.strip()],
        offset=req.offset, limit=req.limit)
    return SubscriberListResponse(total=total, has_next_page=req.offset + len(items) < total,
                                  items=items)


def _subscribers_in(items: Sequence[ImportItem]) -> tuple[list[service.SubscriberIn],
                                                           list[tuple[str, str]]]:
    """Request rows as SubscriberIn, and the rows refused before any lookup."""
    accepted: list[service.SubscriberIn] = []
    refused: list[tuple[str, str]] = []
    for item in items:
        component_ids = list(dict.fromkeys(item.component_ids or []))
        subscribe_all = item.all if item.all is not None else not component_ids
        if item.change_ids and not component_ids and not subscribe_all:
            refused.append((item.recipient, "subscriptions to single events are not supported"))
        elif not subscribe_all and not component_ids:
            refused.append((item.recipient, "needs component_ids or all: true"))
        else:
            accepted.append(service.SubscriberIn(
                item.recipient, [] if subscribe_all else component_ids, item.locale))
    return accepted, refused


@router.post("/status-page/subscriber/import", service=service.import_subscribers, write=True)
async def subscriber_import(ctx: Context, req: SubscriberImportRequest) -> SubscriberImportResponse:
    """Import email subscribers, confirmed; known addresses are skipped and counted."""
    secret_key = await tokens.server_key(ctx.runtime.settings)
    ctx.audit_targets.append(req.page_id)
    accepted, refused = _subscribers_in(req.subscribers)
    result = await service.import_subscribers(
        ctx.conn, ctx.actor, page_id=req.page_id, subscribers=accepted, method=req.method,
        secret_key=secret_key)
    return SubscriberImportResponse(
        imported=result.imported, duplicates=result.duplicates,
        invalid=[InvalidRecipient(recipient=r, reason=why)
                 for r, why in [*refused, *result.invalid]],
    )


@router.post("/status-page/subscriber/export", service=service.export_csv)
async def subscriber_export(ctx: Context, req: SubscriberExportRequest) -> str:
    """Export a page's confirmed subscribers as CSV text (Method, Recipient, Components,
    Subscribe All, Locale)."""
    ctx.audit_targets.append(req.page_id)
    return await service.export_csv(ctx.conn, ctx.actor, page_id=req.page_id,
                                    component_ids=req.component_ids)
