"""Rules of roles: built-ins are fixed, names unique per account (any case), permission ids
come from the catalog, and a role still held by members cannot be deleted."""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from dutyline.api import errors
from dutyline.api.operation import Context
from dutyline.kit.ids import numeric_id
from dutyline.platform import permissions
from dutyline.platform.role import repository as repo
from dutyline.platform.role.schemas import (
    PermissionItem,
    RoleIdRequest,
    RoleItem,
    RoleListRequest,
    RoleListResponse,
    RolePermissionListRequest,
    RolePermissionListResponse,
    RoleUpsertRequest,
    RoleUpsertResponse,
)

# Owners and admins hold every permission whatever their rows say (platform/auth.py), so
# their records show the whole catalog too.
_ALL_PERMISSION_BUILTINS = frozenset({"owner", "admin"})


async def list_roles(ctx: Context, req: RoleListRequest) -> RoleListResponse:
    rows = await repo.list_all(ctx.conn, ctx.caller.account_id, orderby=req.orderby, asc=req.asc)
    return RoleListResponse(total=len(rows), items=await _items(ctx, rows))


async def role_info(ctx: Context, req: RoleIdRequest) -> RoleItem:
    row = await _require(ctx, req.role_id)
    return (await _items(ctx, [row]))[0]


async def upsert_role(ctx: Context, req: RoleUpsertRequest) -> RoleUpsertResponse:
    account_id = ctx.caller.account_id
    name = req.role_name.strip()
    if not name:
        raise errors.invalid("role_name", "is required")
    existing = None
    if req.role_id:
        existing = await _require_custom(ctx, req.role_id)
    same_name = await repo.find_by_name(ctx.conn, account_id, name)
    if same_name is not None and (existing is None or same_name.role_id != existing.role_id):
        raise errors.invalid("role_name", "already exists")
    permission_ids = None
    if req.permission_ids is not None:
        permission_ids = sorted(set(req.permission_ids))
        if unknown := [p for p in permission_ids if p not in permissions.BY_ID]:
            raise errors.InvalidParameter(
                "Invalid parameter {field}: unknown permission ids {ids}",
                field="permission_ids", ids=unknown,
            )
    now = ctx.now_s
    values: dict[str, Any] = {"role_name": name, "updated_at": now}
    if req.description is not None:
        values["description"] = req.description
    try:
        if existing is None:
            role_id = numeric_id()
            await repo.insert_role(
                ctx.conn,
                {**values, "role_id": role_id, "account_id": account_id, "status": "enabled",
                 "builtin": "", "created_at": now},
            )
            permission_ids = permission_ids or []
        else:
            role_id = existing.role_id
            await repo.update_role(ctx.conn, role_id, values)
    except IntegrityError:
        # Lost a race with a concurrent upsert of the same name.
        raise errors.invalid("role_name", "already exists") from None
    if permission_ids is not None:
        await repo.replace_permissions(ctx.conn, role_id, permission_ids)
    ctx.audit_targets.append(role_id)
    return RoleUpsertResponse(role_id=role_id, role_name=name)


async def set_status(ctx: Context, req: RoleIdRequest, status: str) -> None:
    row = await _require_custom(ctx, req.role_id)
    if row.status != status:
        await repo.update_role(ctx.conn, row.role_id, {"status": status, "updated_at": ctx.now_s})
    ctx.audit_targets.append(row.role_id)


async def delete_role(ctx: Context, req: RoleIdRequest) -> None:
    row = await _require_custom(ctx, req.role_id)
    if await repo.holder_count(ctx.conn, row.role_id):
        raise errors.ReferenceExist(
            "Role {id} is still held by members; revoke it from them first", id=row.role_id
        )
    await repo.delete_role(ctx.conn, row.role_id)
    ctx.audit_targets.append(row.role_id)


async def list_permissions(
    ctx: Context, req: RolePermissionListRequest
) -> RolePermissionListResponse:
    granted: set[int] | None = None
    if req.role_ids is not None:
        rows = await require_roles(ctx, req.role_ids)
        granted = set()
        for ids in (await _permission_ids(ctx, rows)).values():
            granted.update(ids)
    items = []
    for p in permissions.CATALOG:
        is_granted = granted is not None and p.id in granted
        if granted is not None and not req.with_all and not is_granted:
            continue
        items.append(PermissionItem(
            id=p.id, permission_name=p.name, permission_type=p.permission_type,
            description=p.description, permission_class=p.permission_class, scope=p.scope,
            status="enabled", is_granted=is_granted if req.with_all else None,
        ))
    return RolePermissionListResponse(items=items)


# --- used by the member service ---------------------------------------------------------


async def require_roles(ctx: Context, role_ids: list[int]) -> list[Any]:
    """The caller's account's roles with these ids; any other id is refused by name, so a
    role of another account is indistinguishable from one that never existed."""
    wanted = list(dict.fromkeys(role_ids))
    rows = await repo.find_many(ctx.conn, ctx.caller.account_id, set(wanted))
    found = {r.role_id for r in rows}
    if missing := [r for r in wanted if r not in found]:
        raise errors.not_found("role", missing[0])
    return rows


async def builtin_role_id(ctx: Context, builtin: str) -> int:
    row = await repo.find_builtin(ctx.conn, ctx.caller.account_id, builtin)
    if row is None:  # every account is created with its built-in roles
        raise errors.InternalError()
    return int(row.role_id)


# --- helpers ---------------------------------------------------------------------------


async def _require(ctx: Context, role_id: int) -> Any:
    row = await repo.find(ctx.conn, ctx.caller.account_id, role_id)
    if row is None:
        raise errors.not_found("role", role_id)
    return row


async def _require_custom(ctx: Context, role_id: int) -> Any:
    row = await _require(ctx, role_id)
    if row.builtin:
        raise errors.BadRequest("The built-in role cannot be changed")
    return row


async def _permission_ids(ctx: Context, rows: list[Any]) -> dict[int, list[int]]:
    stored = await repo.permission_ids_by_role(ctx.conn, [r.role_id for r in rows])
    every = sorted(permissions.ALL_IDS)
    return {
        r.role_id: every if r.builtin in _ALL_PERMISSION_BUILTINS else stored[r.role_id]
        for r in rows
    }


async def _items(ctx: Context, rows: list[Any]) -> list[RoleItem]:
    granted = await _permission_ids(ctx, rows)
    return [
        RoleItem(
            role_id=r.role_id, role_name=r.role_name, description=r.description,
            status=r.status, permission_ids=granted[r.role_id], editable=not r.builtin,
            created_at=r.created_at, updated_at=r.updated_at,
        )
        for r in rows
    ]
