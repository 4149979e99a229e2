"""/safari/worknode/* and /safari/runner/key/* operations (BYOC runners).

Owners and admins (and roles with account_manage) manage worknodes and their keys: a key
runs commands inside the customer's network. Any member may list and read worknodes, to name
one as an automation rule's environment_id."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.aisre.runner import service
from dutyline.aisre.runner.schemas import (
    RunnerKeyCreated,
    RunnerKeyCreateRequest,
    RunnerKeyListRequest,
    RunnerKeyListResponse,
    RunnerKeyLookup,
    WorknodeCreateRequest,
    WorknodeListRequest,
    WorknodeListResponse,
    WorknodeLookup,
    WorknodeRecord,
    WorknodeUpdateRequest,
)
from dutyline.api.operation import Context, Router

router = Router("BYOC runners")


@router.post("/safari/worknode/create", service=service.create_worknode, write=True)
async def worknode_create(ctx: Context, req: WorknodeCreateRequest) -> WorknodeRecord:
    """Register a worknode (a runner inside your network); then create a key for it."""
    item = await service.create_worknode(ctx.conn, ctx.actor, name=req.name, labels=req.labels,
                                         description=req.description)
    ctx.audit_targets.append(item.worknode_id)
    return item


@router.post("/safari/worknode/update", service=service.update_worknode, write=True)
async def worknode_update(ctx: Context, req: WorknodeUpdateRequest) -> WorknodeRecord:
    """Rename or relabel a worknode; omitted fields are left unchanged."""
    ctx.audit_targets.append(req.worknode_id)
    return await service.update_worknode(ctx.conn, ctx.actor, worknode_id=req.worknode_id,
                                         name=req.name, labels=req.labels,
                                         description=req.description)


@router.post("/safari/worknode/info")
def worknode_info(conn: Connection, ctx: Context, req: WorknodeLookup) -> WorknodeRecord:
    """One worknode with its online state, version and environment from its heartbeats."""
    return service.get_worknode_sync(conn, ctx.actor, worknode_id=req.worknode_id)


@router.post("/safari/worknode/list")
def worknode_list(conn: Connection, ctx: Context,
                  req: WorknodeListRequest) -> WorknodeListResponse:
    """The account's worknodes, newest first."""
    return service.list_worknodes_sync(conn, ctx.actor, query=req.query,
                                       online=req.online, p=req.p, limit=req.limit)


@router.post("/safari/worknode/delete", service=service.delete_worknode, write=True, empty="null")
async def worknode_delete(ctx: Context, req: WorknodeLookup) -> None:
    """Delete a worknode and its keys; its runner is disconnected."""
    ctx.audit_targets.append(
        await service.delete_worknode(ctx.conn, ctx.actor, worknode_id=req.worknode_id))


@router.post("/safari/runner/key/create", service=service.create_key, write=True)
async def runner_key_create(ctx: Context, req: RunnerKeyCreateRequest) -> RunnerKeyCreated:
    """Create a key a runner connects with; the key is shown in this response only."""
    item = await service.create_key(ctx.conn, ctx.actor, worknode_id=req.worknode_id,
                                    name=req.name)
    ctx.audit_targets.append(item.key_id)
    return item


@router.post("/safari/runner/key/list", service=service.list_keys_sync)
def runner_key_list(conn: Connection, ctx: Context,
                    req: RunnerKeyListRequest) -> RunnerKeyListResponse:
    """Runner keys (never the keys themselves: only their last four characters)."""
    return service.list_keys_sync(conn, ctx.actor, worknode_id=req.worknode_id,
                                  include_revoked=req.include_revoked, p=req.p,
                                  limit=req.limit)


@router.post("/safari/runner/key/revoke", service=service.revoke_key, write=True, empty="null")
async def runner_key_revoke(ctx: Context, req: RunnerKeyLookup) -> None:
    """Revoke a runner key: refused from now on, its connected runner is disconnected."""
    ctx.audit_targets.append(await service.revoke_key(ctx.conn, ctx.actor, key_id=req.key_id))
