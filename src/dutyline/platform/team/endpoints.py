"""/team/* operations."""

from __future__ import annotations

from dutyline.api.operation import Context, Router
from dutyline.platform.permissions import ACCOUNT_MANAGE
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
async def team_list(ctx: Context, req: TeamListRequest) -> TeamListResponse:
    """List the teams of the current account, a page at a time."""
    return await service.list_teams(ctx, req)


@router.post("/team/info")
async def team_info(ctx: Context, req: TeamLookup) -> TeamItem:
    """Get one team by id, name or external ref."""
    return await service.team_info(ctx, req)


@router.post("/team/infos")
async def team_infos(ctx: Context, req: TeamInfosRequest) -> TeamInfosResponse:
    """Get up to 100 teams by id; unknown ids are left out."""
    return await service.team_infos(ctx, req)


@router.post("/team/upsert", permissions=(ACCOUNT_MANAGE,), write=True)
async def team_upsert(ctx: Context, req: TeamUpsertRequest) -> TeamUpsertResponse:
    """Create a team, or update one by id; person_ids replaces the member list."""
    return await service.upsert_team(ctx, req)


@router.post("/team/delete", permissions=(ACCOUNT_MANAGE,), write=True, dangerous=True)
async def team_delete(ctx: Context, req: TeamLookup) -> None:
    """Delete a team by id, name or external ref."""
    await service.delete_team(ctx, req)
