"""/audit/* operations: reading the audit log of the caller's account."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Empty, Router
from dutyline.platform.audit import service
from dutyline.platform.audit.schemas import (
    AuditOperationListResponse,
    AuditSearchRequest,
    AuditSearchResponse,
)

router = Router("Audit logs")


@router.post("/audit/search", service=service.search_sync)
def audit_search(conn: Connection, ctx: Context, req: AuditSearchRequest) -> AuditSearchResponse:
    """Search the account's audit log in a time window, newest first, a cursor page at a time."""
    total, docs, cursor = service.search_sync(
        conn, ctx.actor,
        query=service.AuditQuery(
            start_time=req.start_time, end_time=req.end_time, request_id=req.request_id,
            operations=req.operations, person_id=req.person_id,
            is_dangerous=req.is_dangerous, is_write=req.is_write),
        after=req.search_after_ctx, limit=req.limit, deps=ctx.runtime.deps,
        labels=service.labels(ctx.runtime, ctx.locale))
    return AuditSearchResponse(total=total, search_after_ctx=cursor, docs=docs)


@router.post("/audit/operation/list", service=service.operation_types_sync)
def audit_operation_list(conn: Connection, ctx: Context,
                         req: Empty) -> AuditOperationListResponse:
    """List the operation names the audit log records, for the `operations` filter."""
    return AuditOperationListResponse(items=service.operation_types_sync(
        conn, ctx.actor, runtime=ctx.runtime))
