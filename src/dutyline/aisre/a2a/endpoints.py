"""/safari/a2a-agent/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

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

router = Router("A2A agents")


@router.post("/safari/a2a-agent/create", service=service.apply_create, write=True, outbound=True)
async def a2a_agent_create(ctx: Context, req: A2aAgentCreateRequest) -> A2aAgentRecord:
    """Register an A2A agent; its card is fetched and validated first."""
    deps = ctx.runtime.deps
    prepared, auth = await service.prepare_create(
        ctx.conn, ctx.actor, agent_name=req.agent_name, card_url=req.card_url,
        instructions=req.instructions, team_id=req.team_id, auth_type=req.auth_type,
        auth_config=req.auth_config, streaming=req.streaming, deps=deps)
    await ctx.begin_writes()
    record = await service.apply_create(ctx.conn, ctx.actor, prepared=prepared, auth=auth,
                                        deps=deps)
    ctx.audit_targets.append(record.agent_id)
    return record


@router.post("/safari/a2a-agent/get")
def a2a_agent_get(conn: Connection, ctx: Context, req: A2aAgentIdRequest) -> A2aAgentRecord:
    """One agent the caller can see; credentials are masked."""
    return service.get_agent_sync(conn, ctx.actor, agent_id=req.agent_id,
                                  deps=ctx.runtime.deps)


@router.post("/safari/a2a-agent/list", rate_scope="app_key")
def a2a_agent_list(conn: Connection, ctx: Context,
                   req: A2aAgentListRequest) -> A2aAgentListResponse:
    """The agents visible to the caller, a page at a time; never contacts an agent."""
    total, agents = service.list_agents_sync(
        conn, ctx.actor, include_account=req.include_account, team_ids=req.team_ids,
        query=req.query, offset=req.offset, limit=req.limit, deps=ctx.runtime.deps)
    return A2aAgentListResponse(total=total, agents=agents)


@router.post("/safari/a2a-agent/update", service=service.apply_update, write=True, outbound=True)
async def a2a_agent_update(ctx: Context, req: A2aAgentUpdateRequest) -> A2aAgentRecord:
    """Change an agent; a new card_url is resolved again, a masked secret keeps the old one."""
    deps = ctx.runtime.deps
    prepared = await service.prepare_update(
        ctx.conn, ctx.actor, agent_id=req.agent_id, agent_name=req.agent_name,
        card_url=req.card_url, instructions=req.instructions, auth_type=req.auth_type,
        auth_config=req.auth_config, streaming=req.streaming, deps=deps)
    ctx.audit_targets.append(prepared.agent_id)
    await ctx.begin_writes()
    return await service.apply_update(ctx.conn, ctx.actor, prepared=prepared, deps=deps)


@router.post("/safari/a2a-agent/delete", service=service.delete_agent, write=True, empty="null")
async def a2a_agent_delete(ctx: Context, req: A2aAgentIdRequest) -> None:
    """Delete an agent."""
    await service.delete_agent(ctx.conn, ctx.actor, agent_id=req.agent_id)
    ctx.audit_targets.append(req.agent_id)


@router.post("/safari/a2a-agent/enable", service=service.apply_enable, write=True,
             rate_scope="app_key", empty="null", outbound=True)
async def a2a_agent_enable(ctx: Context, req: A2aAgentIdRequest) -> None:
    """Enable a disabled agent after resolving its card again."""
    ctx.audit_targets.append(req.agent_id)
    prepared = await service.prepare_enable(ctx.conn, ctx.actor, agent_id=req.agent_id,
                                            deps=ctx.runtime.deps)
    await ctx.begin_writes()
    await service.apply_enable(ctx.conn, ctx.actor, prepared=prepared)


@router.post("/safari/a2a-agent/disable", service=service.disable_agent, write=True, empty="null")
async def a2a_agent_disable(ctx: Context, req: A2aAgentIdRequest) -> None:
    """Disable an enabled agent: the agent loop stops offering it."""
    ctx.audit_targets.append(req.agent_id)
    await service.disable_agent(ctx.conn, ctx.actor, agent_id=req.agent_id)
