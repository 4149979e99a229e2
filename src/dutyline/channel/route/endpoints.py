"""/route/upsert|info|list|history/list: where a shared integration's alerts go, and the
versions saved before. Reading needs integration view or management, writing integration
management; writes are audited with the integration's id."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.types import Id, PageRequest
from dutyline.channel.route import service
from dutyline.channel.route.service import (
    RouteItem,
    RouteVersion,
)

router = Router("Routes")


class RouteInfoRequest(msgspec.Struct, kw_only=True):
    integration_id: Id


class RouteListRequest(msgspec.Struct, kw_only=True):
    integration_ids: Annotated[list[Id], msgspec.Meta(max_length=100)]


class RouteUpsertRequest(service.RouteSpec, kw_only=True):
    pass


class RouteListResponse(msgspec.Struct, kw_only=True):
    items: list[RouteItem]


class RouteHistoryRequest(PageRequest, kw_only=True):
    integration_id: Id
    asc: bool = False
    # Versions grow with time, so both orders are the same one.
    orderby: Literal["", "version", "updated_at"] = ""


class RouteHistoryResponse(msgspec.Struct, kw_only=True):
    items: list[RouteVersion]
    total: int
    has_next_page: bool


@router.post("/route/upsert", service=service.upsert, write=True)
async def route_upsert(ctx: Context, req: RouteUpsertRequest) -> None:
    """Replace an integration's route: cases (conditions -> channels) and a default."""
    await service.upsert(ctx.conn, ctx.actor, integration_id=req.integration_id,
                         cases=req.cases, sections=req.sections, default=req.default,
                         version=req.version)


@router.post("/route/info", service=service.info_sync, empty="null")
def route_info(conn: Connection, ctx: Context, req: RouteInfoRequest) -> RouteItem | None:
    """An integration's route; null when it has none."""
    return service.info_sync(conn, ctx.actor, integration_id=req.integration_id)


@router.post("/route/list", service=service.list_routes_sync)
def route_list(conn: Connection, ctx: Context, req: RouteListRequest) -> RouteListResponse:
    """The routes of these integrations of the account (those without one are left out)."""
    return RouteListResponse(items=service.list_routes_sync(
        conn, ctx.actor, integration_ids=list(dict.fromkeys(req.integration_ids))))


@router.post("/route/history/list", service=service.history_sync)
def route_history_list(conn: Connection, ctx: Context,
                       req: RouteHistoryRequest) -> RouteHistoryResponse:
    """The saved versions of an integration's route, newest first (`asc` for oldest first):
    each one's cases, sections, default, version, who saved it and when."""
    total, items = service.history_sync(conn, ctx.actor, integration_id=req.integration_id,
                                        offset=req.offset, limit=req.limit, asc=req.asc)
    return RouteHistoryResponse(items=items, total=total,
                                has_next_page=req.offset + len(items) < total)
