"""/enrichment/mapping/api/create|info|list|update|delete. Writes need mapping data
management and are audited with the API's id (the services check and note both); list needs
mapping data view or management; info, as the reference says, any valid app_key (null for an
id not in the account)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Empty, Router
from dutyline.enrichment.api import service
from dutyline.enrichment.api.schemas import (
    ApiCreateRequest,
    ApiCreateResponse,
    ApiIDRequest,
    ApiListResponse,
    ApiUpdateRequest,
    MappingApiItem,
)

router = Router("Mapping APIs")


@router.post("/enrichment/mapping/api/create", service=service.create_api, write=True)
async def api_create(ctx: Context, req: ApiCreateRequest) -> ApiCreateResponse:
    """Register an HTTP API that `mapping` rules with `mapping_type: api` call at ingest."""
    return await service.create_api(
        ctx.conn, ctx.actor, api_name=req.api_name, url=req.url, description=req.description,
        insecure_skip_verify=req.insecure_skip_verify, headers=req.headers,
        timeout_s=req.timeout, retry_count=req.retry_count, team_id=req.team_id,
        deps=ctx.runtime.deps)


@router.post("/enrichment/mapping/api/info")
def api_info(conn: Connection, ctx: Context, req: ApiIDRequest) -> MappingApiItem:
    """One mapping API (headers masked); ResourceNotFound when the account has no such API."""
    return service.api_info_sync(conn, ctx.actor, api_id=req.api_id, deps=ctx.runtime.deps)


@router.post("/enrichment/mapping/api/list", service=service.list_apis_sync)
def api_list(conn: Connection, ctx: Context, req: Empty) -> ApiListResponse:
    """Every mapping API of the account (headers masked)."""
    items = service.list_apis_sync(conn, ctx.actor, deps=ctx.runtime.deps)
    return ApiListResponse(total=len(items), items=items)


@router.post("/enrichment/mapping/api/update", service=service.update_api, write=True)
async def api_update(ctx: Context, req: ApiUpdateRequest) -> None:
    """Change the fields given (headers are replaced whole)."""
    await service.update_api(
        ctx.conn, ctx.actor, api_id=req.api_id, api_name=req.api_name, url=req.url,
        description=req.description, insecure_skip_verify=req.insecure_skip_verify,
        headers=req.headers, timeout_s=req.timeout, retry_count=req.retry_count,
        team_id=req.team_id, deps=ctx.runtime.deps)


@router.post("/enrichment/mapping/api/delete", service=service.delete_api, write=True)
async def api_delete(ctx: Context, req: ApiIDRequest) -> None:
    """Delete an API no enrichment rule uses (else 400 ReferenceExist naming them)."""
    await service.delete_api(ctx.conn, ctx.actor, api_id=req.api_id)
