"""/safari/a2a-agent/* operations."""

from __future__ import annotations

from dutyline.aisre.a2a import service
from dutyline.aisre.a2a.schemas import (
    A2aAgentCreateRequest,
    A2aAgentIdRequest,
    A2aAgentListRequest,
    A2aAgentListResponse,
    A2aAgentRecord,
    A2aAgentUpdateRequest,
)
from dutyline.api.operation import Context, Router
from dutyline.platform.permissions import AGENT_MANAGE

router = Router("A2A agents")


@router.post("/safari/a2a-agent/create", permissions=(AGENT_MANAGE,), write=True, outbound=True)
async def a2a_agent_create(ctx: Context, req: A2aAgentCreateRequest) -> A2aAgentRecord:
    """Register an A2A agent; its card is fetched and validated first."""
    return await service.create_agent(ctx, req)


@router.post("/safari/a2a-agent/get")
async def a2a_agent_get(ctx: Context, req: A2aAgentIdRequest) -> A2aAgentRecord:
    """One agent the caller can see; credentials are masked."""
    return await service.get_agent(ctx, req)


@router.post("/safari/a2a-agent/list", rate_scope="app_key")
async def a2a_agent_list(ctx: Context, req: A2aAgentListRequest) -> A2aAgentListResponse:
    """The agents visible to the caller, a page at a time; never contacts an agent."""
    return await service.list_agents(ctx, req)


@router.post("/safari/a2a-agent/update", permissions=(AGENT_MANAGE,), write=True, outbound=True)
async def a2a_agent_update(ctx: Context, req: A2aAgentUpdateRequest) -> A2aAgentRecord:
    """Change an agent; a new card_url is resolved again, a masked secret keeps the old one."""
    return await service.update_agent(ctx, req)


@router.post("/safari/a2a-agent/delete", permissions=(AGENT_MANAGE,), write=True, empty="null")
async def a2a_agent_delete(ctx: Context, req: A2aAgentIdRequest) -> None:
    """Delete an agent."""
    await service.delete_agent(ctx, req)


@router.post("/safari/a2a-agent/enable", permissions=(AGENT_MANAGE,), write=True,
             rate_scope="app_key", empty="null", outbound=True)
async def a2a_agent_enable(ctx: Context, req: A2aAgentIdRequest) -> None:
    """Enable a disabled agent after resolving its card again."""
    await service.enable_agent(ctx, req)


@router.post("/safari/a2a-agent/disable", permissions=(AGENT_MANAGE,), write=True, empty="null")
async def a2a_agent_disable(ctx: Context, req: A2aAgentIdRequest) -> None:
    """Disable an enabled agent: the agent loop stops offering it."""
    await service.disable_agent(ctx, req)
