"""/app-key/* operations. Permission checks and audit targets live in the service: whose
key decides."""

from __future__ import annotations

from sqlalchemy import Connection

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
    """Issue an app key for oneself, or for another member with account_manage and every
    permission that member holds (only the Owner issues the Owner's keys)."""
    issued = await service.create_key(ctx.conn, ctx.actor, key_name=req.key_name,
                                      person_id=req.person_id)
    return AppKeyCreateResponse(key_id=issued.key_id, key_name=issued.key_name,
                                person_id=issued.person_id, app_key=issued.app_key)


@router.post("/app-key/list")
def app_key_list(conn: Connection, ctx: Context, req: AppKeyListRequest) -> AppKeyListResponse:
    """List one member's keys (never the keys themselves): one's own, or any with
    account_manage."""
    return AppKeyListResponse(items=service.list_keys_sync(conn, ctx.actor,
                                                           person_id=req.person_id))


@router.post("/app-key/delete", service=service.delete_key, write=True)
async def app_key_delete(ctx: Context, req: AppKeyDeleteRequest) -> None:
    """Delete a key: one's own, or another member's with account_manage and every
    permission that member holds (only the Owner deletes the Owner's keys)."""
    await service.delete_key(ctx.conn, ctx.actor, key_id=req.key_id)
