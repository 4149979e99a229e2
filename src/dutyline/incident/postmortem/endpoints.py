"""/incident/post-mortem/*: post-mortem reports of closed incidents. info, list and delete
are the reference's; create and update are dutyline's (the reference implies both)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.incident.postmortem import service
from dutyline.incident.postmortem.schemas import (
    CreatePostMortemRequest,
    ListPostMortemsRequest,
    ListPostMortemsResponse,
    PostMortemItem,
    PostMortemLookup,
    UpdatePostMortemRequest,
)
from dutyline.incident.query.service import VIEW_PERMISSIONS

router = Router("Post-mortems")
_READ = VIEW_PERMISSIONS


@router.post("/incident/post-mortem/create", service=service.create_post_mortem, write=True)
async def post_mortem_create(ctx: Context, req: CreatePostMortemRequest) -> PostMortemItem:
    """Draft a post-mortem of closed incidents of one channel (the model drafts its summary,
    impact and contributing factors when an LLM is configured)."""
    return await service.create_post_mortem(ctx.conn, ctx.actor, incident_ids=req.incident_ids,
                                            title=req.title, deps=ctx.runtime.deps)


@router.post("/incident/post-mortem/info", service=service.post_mortem_info_sync, also_get=True)
def post_mortem_info(conn: Connection, ctx: Context, req: PostMortemLookup) -> PostMortemItem:
    """Get one post-mortem: its metadata, the incidents' figures, its body and follow-ups."""
    return service.post_mortem_info_sync(conn, ctx.actor, post_mortem_id=req.post_mortem_id)


@router.post("/incident/post-mortem/list", service=service.list_post_mortems_sync)
def post_mortem_list(conn: Connection, ctx: Context,
                     req: ListPostMortemsRequest) -> ListPostMortemsResponse:
    """List post-mortems by status, channel, team and creation time, by page or cursor."""
    return service.list_post_mortems_sync(conn, ctx.actor, query=service.ListQuery(
        status=req.status, team_ids=req.team_ids, channel_ids=req.channel_ids,
        created_at_start_seconds=req.created_at_start_seconds,
        created_at_end_seconds=req.created_at_end_seconds, order_by=req.order_by,
        asc=req.asc, p=req.p, limit=req.limit, search_after_ctx=req.search_after_ctx))


@router.post("/incident/post-mortem/update", service=service.update_post_mortem, write=True)
async def post_mortem_update(ctx: Context, req: UpdatePostMortemRequest) -> PostMortemItem:
    """Edit a post-mortem's title, body or follow-ups, or publish it (status)."""
    return await service.update_post_mortem(
        ctx.conn, ctx.actor, post_mortem_id=req.post_mortem_id, title=req.title,
        content=req.content, follow_ups=req.follow_ups, status=req.status)


@router.post("/incident/post-mortem/delete", service=service.delete_post_mortem, write=True)
async def post_mortem_delete(ctx: Context, req: PostMortemLookup) -> None:
    """Delete a post-mortem."""
    await service.delete_post_mortem(ctx.conn, ctx.actor, post_mortem_id=req.post_mortem_id)


@router.post("/incident/post-mortem/redraft", service=service.redraft_post_mortem, write=True)
async def post_mortem_redraft(ctx: Context, req: PostMortemLookup) -> PostMortemItem:
    """Ask the model again for a draft's summary, impact and contributing factors."""
    return await service.redraft_post_mortem(ctx.conn, ctx.actor,
                                             post_mortem_id=req.post_mortem_id,
                                             deps=ctx.runtime.deps)
