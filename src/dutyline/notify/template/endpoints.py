"""/template/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.notify.template import service
from dutyline.notify.template.schemas import (
    TemplateCreateRequest,
    TemplateCreateResponse,
    TemplateIdRequest,
    TemplateInfoRequest,
    TemplateItem,
    TemplateListRequest,
    TemplateListResponse,
    TemplatePreviewRequest,
    TemplatePreviewResponse,
    TemplateUpdateRequest,
)

router = Router("Notification templates")


@router.post("/template/create", service=service.create_template, write=True)
async def template_create(ctx: Context, req: TemplateCreateRequest) -> TemplateCreateResponse:
    """Create a notification template; every non-empty channel body must compile."""
    created = await service.create_template(
        ctx.conn, ctx.actor, template_name=req.template_name, team_id=req.team_id,
        description=req.description, bodies=req.bodies(),
        deps=ctx.runtime.deps)
    ctx.audit_targets.append(created.template_id)
    return created


@router.post("/template/info", service=service.template_info_sync)
def template_info(conn: Connection, ctx: Context, req: TemplateInfoRequest) -> TemplateItem:
    """One template by `template_id` (or `id`); the preset id gives the built-in default."""
    template_id = req.template_id or req.id
    if not template_id:
        from dutyline.api import errors

        raise errors.invalid("template_id", "is required")
    return service.template_info_sync(conn, ctx.actor, template_id=template_id)


@router.post("/template/list", service=service.list_templates_sync)
def template_list(conn: Connection, ctx: Context,
                  req: TemplateListRequest) -> TemplateListResponse:
    """A page of the account's templates."""
    return service.list_templates_sync(
        conn, ctx.actor, p=req.p, limit=req.limit, orderby=req.orderby, asc=req.asc,
        is_my_team=req.is_my_team, team_ids=req.team_ids, creator_id=req.creator_id,
        query=req.query)


@router.post("/template/update", service=service.update_template, write=True)
async def template_update(ctx: Context, req: TemplateUpdateRequest) -> None:
    """Replace a template's name, team, description and every channel body."""
    await service.update_template(
        ctx.conn, ctx.actor, template_id=req.template_id, template_name=req.template_name,
        team_id=req.team_id, description=req.description, bodies=req.bodies(),
        deps=ctx.runtime.deps)
    ctx.audit_targets.append(req.template_id.lower())


@router.post("/template/delete", service=service.delete_template, write=True)
async def template_delete(ctx: Context, req: TemplateIdRequest) -> None:
    """Soft-delete a template."""
    await service.delete_template(ctx.conn, ctx.actor, template_id=req.template_id)
    ctx.audit_targets.append(req.template_id.lower())


@router.post("/template/preview", service=service.preview)
async def template_preview(ctx: Context, req: TemplatePreviewRequest) -> TemplatePreviewResponse:
    """Render a body against an incident of the account (or a sample one)."""
    return await service.preview(
        ctx.conn, ctx.actor, channel=req.type, content=req.content,
        incident_id=req.incident_id, deps=ctx.runtime.deps)
