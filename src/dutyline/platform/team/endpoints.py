"""/team/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.platform.team import service
from dutyline.platform.team.schemas import (
    TeamInfosRequest,
    TeamInfosResponse,
    TeamItem,
    TeamListRequest,
    TeamListResponse,
    TeamLookup,
    TeamUpsertRequest,
    TeamUpsertResponse,
)

router = Router("Teams")


@router.post("/team/list")
def team_list(conn: Connection, ctx: Context, req: TeamListRequest) -> TeamListResponse:
    """List the teams of the current account, a page at a time."""
    total, items = service.list_teams_sync(
        conn, ctx.actor, person_id=req.person_id, query=req.query, orderby=req.orderby,
        asc=req.asc, offset=req.offset, limit=req.limit)
    return TeamListResponse(p=req.p, limit=req.limit, total=total, items=items)


@router.post("/team/info")
def team_info(conn: Connection, ctx: Context, req: TeamLookup) -> TeamItem:
    """Get one team by id, name or external ref."""
    return service.team_info_sync(conn, ctx.actor, team_id=req.team_id,
                                  team_name=req.team_name, ref_id=req.ref_id)


@router.post("/team/infos")
def team_infos(conn: Connection, ctx: Context, req: TeamInfosRequest) -> TeamInfosResponse:
    """Get up to 100 teams by id; unknown ids are left out."""
    return TeamInfosResponse(items=service.team_infos_sync(conn, ctx.actor,
                                                           team_ids=req.team_ids))


@router.post("/team/upsert", service=service.upsert_team, write=True)
async def team_upsert(ctx: Context, req: TeamUpsertRequest) -> TeamUpsertResponse:
    """Create a team, or update one by id; person_ids replaces the member list."""
    # The request is a TeamChanges (and the phones' country code, which contacts carry).
    team_id = await service.upsert_team(ctx.conn, ctx.actor, team=req)
    return TeamUpsertResponse(team_id=team_id, team_name=req.team_name.strip())


@router.post("/team/delete", service=service.delete_team, write=True)
async def team_delete(ctx: Context, req: TeamLookup) -> None:
    """Delete a team by id, name or external ref."""
    await service.delete_team(ctx.conn, ctx.actor, team_id=req.team_id,
                              team_name=req.team_name, ref_id=req.ref_id)
