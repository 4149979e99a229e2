"""/field/* operations: custom incident field definitions."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Empty, Router
from dutyline.incident.field import service
from dutyline.incident.field.schemas import (
    CreateFieldRequest,
    CreateFieldResponse,
    FieldItem,
    FieldLookup,
    ListFieldsResponse,
    UpdateFieldRequest,
)

router = Router("Custom fields")


@router.post("/field/create", service=service.create_field, write=True)
async def field_create(ctx: Context, req: CreateFieldRequest) -> CreateFieldResponse:
    """Define a custom incident field."""
    created = await service.create_field(
        ctx.conn, ctx.actor, field_name=req.field_name, field_type=req.field_type,
        display_name=req.display_name, description=req.description, options=req.options,
        default_value=req.default_value)
    return created


@router.post("/field/info")
def field_info(conn: Connection, ctx: Context, req: FieldLookup) -> FieldItem:
    """Get one custom field by id or name."""
    return service.field_info_sync(conn, ctx.actor, field_id=req.field_id,
                                   field_name=req.field_name)


@router.post("/field/list")
def field_list(conn: Connection, ctx: Context, req: Empty) -> ListFieldsResponse:
    """List the account's custom fields by name (at most 100, so no paging)."""
    return service.list_fields_sync(conn, ctx.actor)


@router.post("/field/update", service=service.update_field, write=True)
async def field_update(ctx: Context, req: UpdateFieldRequest) -> None:
    """Change a field's display name, description, options or default."""
    await service.update_field(
        ctx.conn, ctx.actor, field_id=req.field_id, display_name=req.display_name,
        description=req.description, options=req.options, default_value=req.default_value)


@router.post("/field/delete", service=service.delete_field, write=True)
async def field_delete(ctx: Context, req: FieldLookup) -> None:
    """Delete a custom field no incident holds a value for."""
    await service.delete_field(ctx.conn, ctx.actor, field_id=req.field_id,
                               field_name=req.field_name)
