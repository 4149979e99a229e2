"""/audit/* operations: reading the audit log of the caller's account."""

from __future__ import annotations

from dutyline.api.operation import Context, Empty, Router
from dutyline.platform.audit import service
from dutyline.platform.audit.schemas import (
    AuditOperationListResponse,
    AuditSearchRequest,
    AuditSearchResponse,
)
from dutyline.platform.permissions import ACCOUNT_MANAGE

router = Router("Audit logs")


@router.post("/audit/search", permissions=(ACCOUNT_MANAGE,))
async def audit_search(ctx: Context, req: AuditSearchRequest) -> AuditSearchResponse:
    """Search the account's audit log in a time window, newest first, a cursor page at a time."""
    return await service.search(ctx, req)


@router.post("/audit/operation/list", permissions=(ACCOUNT_MANAGE,))
async def audit_operation_list(ctx: Context, req: Empty) -> AuditOperationListResponse:
    """List the operation names the audit log records, for the `operations` filter."""
    return await service.operation_list(ctx)
