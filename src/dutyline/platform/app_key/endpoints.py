"""/app-key/* operations. Permission checks live in the service: whose key decides."""

from __future__ import annotations

from dutyline.api.operation import Context, Router
from dutyline.platform.app_key import service
from dutyline.platform.app_key.schemas import (
    AppKeyCreateRequest,
    AppKeyCreateResponse,
    AppKeyDeleteRequest,
    AppKeyListRequest,
    AppKeyListResponse,
)

router = Router("App keys")


@router.post("/app-key/create", write=True)
async def app_key_create(ctx: Context, req: AppKeyCreateRequest) -> AppKeyCreateResponse:
    """Issue an app key for oneself, or for another member with account_manage."""
    return await service.create_key(ctx, req)


@router.post("/app-key/list")
async def app_key_list(ctx: Context, req: AppKeyListRequest) -> AppKeyListResponse:
    """List one member's keys (never the keys themselves): one's own, or any with
    account_manage."""
    return await service.list_keys(ctx, req)


@router.post("/app-key/delete", write=True, dangerous=True)
async def app_key_delete(ctx: Context, req: AppKeyDeleteRequest) -> None:
    """Delete a key: one's own, or any key of the account with account_manage."""
    await service.delete_key(ctx, req)
