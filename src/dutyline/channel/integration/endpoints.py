"""/integration/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.channel.integration import service
from dutyline.channel.integration.schemas import (
    CreateIntegrationRequest,
    CreateIntegrationResponse,
    IntegrationIDRequest,
    IntegrationItem,
    ListIntegrationsRequest,
    ListIntegrationsResponse,
    RotateKeyResponse,
)

router = Router("Integrations")


@router.post("/integration/create", service=service.create_integration, write=True)
async def integration_create(ctx: Context,
                             req: CreateIntegrationRequest) -> CreateIntegrationResponse:
    """Create an integration of a channel: a standard one, whose key (shown in this response
    only) takes alerts, a `change` one, whose key takes change events, or a `custom_action`
    calling `url`, whose signing key is shown in this response only."""
    created = await service.create_integration(
        ctx.conn, ctx.actor, channel_id=req.channel_id, integration_name=req.integration_name,
        integration_type=req.integration_type, url=req.url, deps=ctx.runtime.deps)
    return CreateIntegrationResponse(integration_id=created.integration_id,
                                     integration_name=created.integration_name,
                                     integration_key=created.integration_key,
                                     integration_type=created.integration_type,
                                     signing_secret=created.signing_secret)


@router.post("/integration/info", service=service.integration_info_sync)
def integration_info(conn: Connection, ctx: Context, req: IntegrationIDRequest) -> IntegrationItem:
    """Get one integration (never its key)."""
    return service.integration_info_sync(conn, ctx.actor, integration_id=req.integration_id)


@router.post("/integration/list", service=service.list_integrations_sync)
def integration_list(conn: Connection, ctx: Context,
                     req: ListIntegrationsRequest) -> ListIntegrationsResponse:
    """List integrations, of one channel or of every channel the caller sees."""
    total, items = service.list_integrations_sync(
        conn, ctx.actor, channel_id=req.channel_id, offset=req.offset, limit=req.limit)
    return ListIntegrationsResponse(p=req.p, limit=req.limit, total=total, items=items)


@router.post("/integration/delete", service=service.delete_integration, write=True)
async def integration_delete(ctx: Context, req: IntegrationIDRequest) -> None:
    """Delete an integration: its key stops accepting alerts at once."""
    await service.delete_integration(ctx.conn, ctx.actor, integration_id=req.integration_id)


@router.post("/integration/rotate-key", service=service.rotate_key, write=True)
async def integration_rotate_key(ctx: Context, req: IntegrationIDRequest) -> RotateKeyResponse:
    """Give a standard or change integration a new key (shown in this response only): the
    old key stops working at once. A dutyline extension (the reference has no integration
    operations)."""
    rotated = await service.rotate_key(ctx.conn, ctx.actor, integration_id=req.integration_id)
    return RotateKeyResponse(integration_id=rotated.integration_id,
                             integration_key=rotated.integration_key)
