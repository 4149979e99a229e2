"""/channel/* operations. The services check the permission and note the audit entry
(with the channel's id) themselves."""

from __future__ import annotations

import msgspec
from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.channel import service
from dutyline.channel.schemas import (
    ChannelCreateResponse,
    ChannelIDRequest,
    ChannelInfosRequest,
    ChannelInfosResponse,
    ChannelItem,
    CreateChannelRequest,
    ListChannelsRequest,
    ListChannelsResponse,
    UpdateChannelRequest,
    UpdateChannelResponse,
)

router = Router("Channels")


def _changes(req: CreateChannelRequest | UpdateChannelRequest) -> service.ChannelChanges:
    """The request's settings; both requests name them as ChannelChanges does."""
    fields = msgspec.structs.asdict(req)
    fields.pop("channel_id", None)
    return service.ChannelChanges(**fields)


@router.post("/channel/create", service=service.create_channel, write=True)
async def channel_create(ctx: Context, req: CreateChannelRequest) -> ChannelCreateResponse:
    """Create a channel."""
    created = await service.create_channel(ctx.conn, ctx.actor, channel=_changes(req))
    return ChannelCreateResponse(channel_id=created.channel_id,
                                 channel_name=created.channel_name,
                                 external_report_token=created.external_report_token)


@router.post("/channel/info", service=service.channel_info_sync)
def channel_info(conn: Connection, ctx: Context, req: ChannelIDRequest) -> ChannelItem:
    """Get one channel (deleted ones too, with status `deleted`)."""
    return service.channel_info_sync(conn, ctx.actor, channel_id=req.channel_id)


@router.post("/channel/infos", service=service.channel_infos_sync)
def channel_infos(conn: Connection, ctx: Context,
                  req: ChannelInfosRequest) -> ChannelInfosResponse:
    """Get up to 1000 live channels by id; unknown ids are left out."""
    return ChannelInfosResponse(items=service.channel_infos_sync(
        conn, ctx.actor, channel_ids=req.channel_ids))


@router.post("/channel/list", service=service.list_channels_sync)
def channel_list(conn: Connection, ctx: Context, req: ListChannelsRequest) -> ListChannelsResponse:
    """List the live channels the caller sees, a page at a time."""
    offset = (req.p - 1) * req.limit
    total, items = service.list_channels_sync(
        conn, ctx.actor, offset=offset, limit=req.limit, q=service.ChannelQuery(
            orderby=req.orderby, asc=req.asc, is_my_managed=req.is_my_managed,
            is_my_starred=req.is_my_starred, is_my_team=req.is_my_team,
            is_brief=req.is_brief, team_ids=req.team_ids, channel_ids=req.channel_ids,
            channel_name=req.channel_name, query=req.query))
    return ListChannelsResponse(items=items, total=total,
                                has_next_page=offset + len(items) < total)


@router.post("/channel/update", service=service.update_channel, write=True)
async def channel_update(ctx: Context, req: UpdateChannelRequest) -> UpdateChannelResponse:
    """Update a channel; only the fields given change."""
    token = await service.update_channel(ctx.conn, ctx.actor, channel_id=req.channel_id,
                                         changes=_changes(req))
    return UpdateChannelResponse(external_report_token=token)


@router.post("/channel/delete", service=service.delete_channel, write=True)
async def channel_delete(ctx: Context, req: ChannelIDRequest) -> None:
    """Delete a channel (soft): its name is free again and its integrations stop."""
    await service.delete_channel(ctx.conn, ctx.actor, channel_id=req.channel_id)


@router.post("/channel/enable", service=service.enable_channel, write=True)
async def channel_enable(ctx: Context, req: ChannelIDRequest) -> None:
    """Enable a channel."""
    await service.enable_channel(ctx.conn, ctx.actor, channel_id=req.channel_id)


@router.post("/channel/disable", service=service.disable_channel, write=True)
async def channel_disable(ctx: Context, req: ChannelIDRequest) -> None:
    """Disable a channel."""
    await service.disable_channel(ctx.conn, ctx.actor, channel_id=req.channel_id)
