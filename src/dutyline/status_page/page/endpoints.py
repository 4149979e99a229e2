"""/status-page/create|update|delete|list|info, /status-page/section/*, /status-page/component/*.
Reads are open to either status page permission; writes need status page management."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.permissions import STATUS_PAGE_EVENT_MANAGE, STATUS_PAGE_MANAGE
from dutyline.status_page.page import service
from dutyline.status_page.page.schemas import (
    ComponentDeleteRequest,
    ComponentUpsertRequest,
    ComponentUpsertResponse,
    PageCreateRequest,
    PageCreateResponse,
    PageInfo,
    PageListRequest,
    PageListResponse,
    PageLookup,
    PageUpdateRequest,
    PageUpdateResponse,
    SectionDeleteRequest,
    SectionUpsertRequest,
    SectionUpsertResponse,
)

router = Router("Status pages")
MANAGE = (STATUS_PAGE_MANAGE,)
READ = (STATUS_PAGE_MANAGE, STATUS_PAGE_EVENT_MANAGE)


@router.post("/status-page/create", service=service.create_page, write=True)
async def page_create(ctx: Context, req: PageCreateRequest) -> PageCreateResponse:
    """Create a status page; an internal page's login token is returned here only."""
    created = await service.create_page(
        ctx.conn, ctx.actor, page_name=req.page_name, url_name=req.url_name,
        page_type=req.page_type, description=req.description, time_zone=req.time_zone,
    )
    ctx.audit_targets.append(created.page_id)
    return PageCreateResponse(page_id=created.page_id, page_name=created.page_name,
                              url_name=created.url_name, access_token=created.access_token)


@router.post("/status-page/update", service=service.update_page, write=True)
async def page_update(ctx: Context, req: PageUpdateRequest) -> PageUpdateResponse:
    """Update a status page; omitted fields are left unchanged."""
    token = await service.update_page(
        ctx.conn, ctx.actor, page_id=req.page_id, page_name=req.page_name,
        url_name=req.url_name, page_type=req.page_type, description=req.description,
        time_zone=req.time_zone, rotate_access_token=req.rotate_access_token,
    )
    ctx.audit_targets.append(req.page_id)
    return PageUpdateResponse(access_token=token)


@router.post("/status-page/delete", service=service.delete_page, write=True)
async def page_delete(ctx: Context, req: PageLookup) -> None:
    """Delete a status page with its structure, events and subscribers."""
    await service.delete_page(ctx.conn, ctx.actor, page_id=req.page_id)
    ctx.audit_targets.append(req.page_id)


@router.post("/status-page/list", service=service.list_pages_sync, also_get=True)
def page_list(conn: Connection, ctx: Context, req: PageListRequest) -> PageListResponse:
    """List the account's status pages, newest first."""
    total, items = service.list_pages_sync(conn, ctx.actor, offset=req.offset,
                                           limit=req.limit, deps=ctx.runtime.deps)
    return PageListResponse(p=req.p, limit=req.limit, total=total,
                            has_next_page=req.offset + len(items) < total, items=items)


@router.post("/status-page/info", service=service.page_info_sync, also_get=True)
def page_info(conn: Connection, ctx: Context, req: PageLookup) -> PageInfo:
    """Get a status page with its sections and components."""
    return service.page_info_sync(conn, ctx.actor, page_id=req.page_id,
                                  deps=ctx.runtime.deps)


@router.post("/status-page/section/upsert", service=service.upsert_section, write=True)
async def section_upsert(ctx: Context, req: SectionUpsertRequest) -> SectionUpsertResponse:
    """Create a section of a page, or update one by id."""
    section_id = await service.upsert_section(
        ctx.conn, ctx.actor, page_id=req.page_id, section_id=req.section_id, name=req.name,
        description=req.description, order_id=req.order_id,
    )
    ctx.audit_targets.extend([req.page_id, section_id])
    return SectionUpsertResponse(section_id=section_id)


@router.post("/status-page/section/delete", service=service.delete_section, write=True)
async def section_delete(ctx: Context, req: SectionDeleteRequest) -> None:
    """Delete an empty section (one that still holds components: ReferenceExist)."""
    await service.delete_section(ctx.conn, ctx.actor, page_id=req.page_id,
                                 section_id=req.section_id)
    ctx.audit_targets.extend([req.page_id, req.section_id])


@router.post("/status-page/component/upsert", service=service.upsert_component, write=True)
async def component_upsert(ctx: Context, req: ComponentUpsertRequest) -> ComponentUpsertResponse:
    """Create a component of a page, or update one by id; omitted fields are unchanged."""
    component_id = await service.upsert_component(
        ctx.conn, ctx.actor, page_id=req.page_id, component_id=req.component_id,
        name=req.name, section_id=req.section_id, description=req.description,
        available_since_seconds=req.available_since_seconds, order_id=req.order_id,
        hide_uptime=req.hide_uptime, hide_all=req.hide_all, status=req.status,
    )
    ctx.audit_targets.extend([req.page_id, component_id])
    return ComponentUpsertResponse(component_id=component_id)


@router.post("/status-page/component/delete", service=service.delete_component, write=True)
async def component_delete(ctx: Context, req: ComponentDeleteRequest) -> None:
    """Delete a component of a page."""
    await service.delete_component(ctx.conn, ctx.actor, page_id=req.page_id,
                                   component_id=req.component_id)
    ctx.audit_targets.extend([req.page_id, req.component_id])
