"""/role/* operations."""

from __future__ import annotations

from dutyline.api.operation import Context, Router
from dutyline.platform.permissions import ACCOUNT_MANAGE
from dutyline.platform.role import service
from dutyline.platform.role.schemas import (
    RoleIdRequest,
    RoleItem,
    RoleListRequest,
    RoleListResponse,
    RolePermissionListRequest,
    RolePermissionListResponse,
    RoleUpsertRequest,
    RoleUpsertResponse,
)

router = Router("Roles")


@router.post("/role/list")
async def role_list(ctx: Context, req: RoleListRequest) -> RoleListResponse:
    """List the roles of the current account, built-in ones included."""
    return await service.list_roles(ctx, req)


@router.post("/role/info")
async def role_info(ctx: Context, req: RoleIdRequest) -> RoleItem:
    """Get one role by id."""
    return await service.role_info(ctx, req)


@router.post("/role/upsert", permissions=(ACCOUNT_MANAGE,), write=True)
async def role_upsert(ctx: Context, req: RoleUpsertRequest) -> RoleUpsertResponse:
    """Create a custom role, or update one by id; permission_ids replaces the set."""
    return await service.upsert_role(ctx, req)


@router.post("/role/enable", permissions=(ACCOUNT_MANAGE,), write=True)
async def role_enable(ctx: Context, req: RoleIdRequest) -> None:
    """Enable a custom role: its holders get its permissions again."""
    await service.set_status(ctx, req, "enabled")


@router.post("/role/disable", permissions=(ACCOUNT_MANAGE,), write=True)
async def role_disable(ctx: Context, req: RoleIdRequest) -> None:
    """Disable a custom role: it stays assigned but grants nothing."""
    await service.set_status(ctx, req, "disabled")


@router.post("/role/delete", permissions=(ACCOUNT_MANAGE,), write=True, dangerous=True)
async def role_delete(ctx: Context, req: RoleIdRequest) -> None:
    """Delete a custom role that no member holds."""
    await service.delete_role(ctx, req)


@router.post("/role/permission/list")
async def role_permission_list(
    ctx: Context, req: RolePermissionListRequest
) -> RolePermissionListResponse:
    """The permission catalog, or the permissions the given roles grant."""
    return await service.list_permissions(ctx, req)
