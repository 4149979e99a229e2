"""/role/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.platform.role import service
from dutyline.platform.role.factors import permission_factors
from dutyline.platform.role.grants import service as grants
from dutyline.platform.role.schemas import (
    PermissionFactorItem,
    PermissionFactorListRequest,
    RoleGrantRequest,
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
def role_list(conn: Connection, ctx: Context, req: RoleListRequest) -> RoleListResponse:
    """List the roles of the current account, built-in ones included."""
    items = service.list_roles_sync(conn, ctx.actor, orderby=req.orderby, asc=req.asc)
    return RoleListResponse(total=len(items), items=items)


@router.post("/role/info")
def role_info(conn: Connection, ctx: Context, req: RoleIdRequest) -> RoleItem:
    """Get one role by id."""
    return service.role_info_sync(conn, ctx.actor, role_id=req.role_id)


@router.post("/role/upsert", service=service.upsert_role, write=True)
async def role_upsert(ctx: Context, req: RoleUpsertRequest) -> RoleUpsertResponse:
    """Create a custom role, or update one by id; permission_ids replaces the set."""
    role_id = await service.upsert_role(
        ctx.conn, ctx.actor, role_name=req.role_name, role_id=req.role_id,
        description=req.description, permission_ids=req.permission_ids)
    return RoleUpsertResponse(role_id=role_id, role_name=req.role_name.strip())


@router.post("/role/enable", service=service.enable_role, write=True)
async def role_enable(ctx: Context, req: RoleIdRequest) -> None:
    """Enable a custom role: its holders get its permissions again."""
    await service.enable_role(ctx.conn, ctx.actor, role_id=req.role_id)


@router.post("/role/disable", service=service.disable_role, write=True)
async def role_disable(ctx: Context, req: RoleIdRequest) -> None:
    """Disable a custom role: it stays assigned but grants nothing."""
    await service.disable_role(ctx.conn, ctx.actor, role_id=req.role_id)


@router.post("/role/delete", service=service.delete_role, write=True)
async def role_delete(ctx: Context, req: RoleIdRequest) -> None:
    """Delete a custom role that no member holds."""
    await service.delete_role(ctx.conn, ctx.actor, role_id=req.role_id)


@router.post("/role/permission/list")
def role_permission_list(
    conn: Connection, ctx: Context, req: RolePermissionListRequest
) -> RolePermissionListResponse:
    """The permission catalog, or the permissions the given roles grant."""
    return RolePermissionListResponse(items=service.list_permissions_sync(
        conn, ctx.actor, role_ids=req.role_ids, with_all=req.with_all))


@router.post("/role/permission/factor/list")
def role_permission_factor_list(
    conn: Connection, ctx: Context, req: PermissionFactorListRequest
) -> list[PermissionFactorItem]:
    """The permission factors (one `api` factor per operation), optionally of some types."""
    return permission_factors(ctx.runtime.operations, factor_types=req.factor_types)


@router.post("/role/member/grant", service=grants.grant_role, write=True)
async def role_member_grant(ctx: Context, req: RoleGrantRequest) -> None:
    """Grant a role to up to 100 members; those who hold it already are skipped."""
    await grants.grant_role(ctx.conn, ctx.actor, role_id=req.role_id,
                            member_ids=req.member_ids)


@router.post("/role/member/revoke", service=grants.revoke_role, write=True)
async def role_member_revoke(ctx: Context, req: RoleGrantRequest) -> None:
    """Revoke a role from up to 100 members; those who do not hold it are skipped."""
    await grants.revoke_role(ctx.conn, ctx.actor, role_id=req.role_id,
                             member_ids=req.member_ids)
