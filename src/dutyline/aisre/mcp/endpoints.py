"""/safari/mcp/server/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.aisre.mcp import service
from dutyline.aisre.mcp.schemas import (
    McpServerCreateRequest,
    McpServerListRequest,
    McpServerListResponse,
    McpServerLookup,
    McpServerRecord,
    McpServerUpdateRequest,
)
from dutyline.api.operation import Context, Router

router = Router("MCP servers")


@router.post("/safari/mcp/server/list", rate_scope="app_key")
def mcp_server_list(conn: Connection, ctx: Context,
                    req: McpServerListRequest) -> McpServerListResponse:
    """List the MCP servers visible to the caller; never contacts a server."""
    total, servers = service.list_servers_sync(
        conn, ctx.actor, include_account=req.include_account, scope=req.scope,
        team_ids=req.team_ids, query=req.query, offset=req.offset, limit=req.limit)
    return McpServerListResponse(total=total, servers=servers)


@router.post("/safari/mcp/server/get")
async def mcp_server_get(ctx: Context, req: McpServerLookup) -> McpServerRecord:
    """Get one MCP server and probe its tools live (list_error when the probe fails)."""
    probe = await service.probe_server(ctx.conn, ctx.actor, server_id=req.server_id,
                                       deps=ctx.runtime.deps)
    await ctx.begin_writes()
    return await service.store_probe(ctx.conn, ctx.actor, probe=probe)


@router.post("/safari/mcp/server/create", service=service.create_server, write=True)
async def mcp_server_create(ctx: Context, req: McpServerCreateRequest) -> McpServerRecord:
    """Register an MCP server (account-level with team_id 0, or for one team)."""
    spec = service.ServerSpec(
        server_name=req.server_name, description=req.description, transport=req.transport,
        url=req.url, environment_kind=req.environment_kind, environment_id=req.environment_id,
        connect_timeout=req.connect_timeout, call_timeout=req.call_timeout,
        headers=req.headers, auth_mode=req.auth_mode, team_id=req.team_id, status=req.status)
    record = await service.create_server(ctx.conn, ctx.actor, spec=spec,
                                         deps=ctx.runtime.deps)
    ctx.audit_targets.append(record.server_id)
    return record


@router.post("/safari/mcp/server/update", service=service.update_server, write=True)
async def mcp_server_update(ctx: Context, req: McpServerUpdateRequest) -> McpServerRecord:
    """Change an MCP server; fields left out keep their value, masked headers their secret."""
    changes = service.ServerChanges(
        server_id=req.server_id, server_name=req.server_name, description=req.description,
        transport=req.transport, url=req.url, environment_kind=req.environment_kind,
        environment_id=req.environment_id, connect_timeout=req.connect_timeout,
        call_timeout=req.call_timeout, headers=req.headers, auth_mode=req.auth_mode,
        team_id=req.team_id)
    record = await service.update_server(ctx.conn, ctx.actor, changes=changes,
                                         deps=ctx.runtime.deps)
    ctx.audit_targets.append(record.server_id)
    return record


@router.post("/safari/mcp/server/delete", service=service.delete_server, write=True, empty="null")
async def mcp_server_delete(ctx: Context, req: McpServerLookup) -> None:
    """Delete an MCP server."""
    await service.delete_server(ctx.conn, ctx.actor, server_id=req.server_id)
    ctx.audit_targets.append(req.server_id)


@router.post("/safari/mcp/server/enable", service=service.enable_server, write=True,
             rate_scope="app_key", empty="null")
async def mcp_server_enable(ctx: Context, req: McpServerLookup) -> None:
    """Enable a disabled MCP server (an enabled one is refused with InvalidParameter)."""
    ctx.audit_targets.append(req.server_id)
    await service.enable_server(ctx.conn, ctx.actor, server_id=req.server_id)


@router.post("/safari/mcp/server/disable", service=service.disable_server, write=True,
             rate_scope="app_key", empty="null")
async def mcp_server_disable(ctx: Context, req: McpServerLookup) -> None:
    """Disable an enabled MCP server (a disabled one is refused with InvalidParameter)."""
    ctx.audit_targets.append(req.server_id)
    await service.disable_server(ctx.conn, ctx.actor, server_id=req.server_id)
