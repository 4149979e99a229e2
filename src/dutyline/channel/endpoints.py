"""/channel/* operations."""

from __future__ import annotations

from dutyline.api.operation import Context, Router
from dutyline.api.permissions import CHANNEL_MANAGE, CHANNEL_VIEW
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


@router.post("/channel/create", permissions=(CHANNEL_MANAGE,), write=True)
async def channel_create(ctx: Context, req: CreateChannelRequest) -> ChannelCreateResponse:
    """Create a channel."""
    return await service.create_channel(ctx, req)


@router.post("/channel/info", permissions=(CHANNEL_VIEW,))
async def channel_info(ctx: Context, req: ChannelIDRequest) -> ChannelItem:
    """Get one channel (deleted ones too, with status `deleted`)."""
    return await service.channel_info(ctx, req)


@router.post("/channel/infos", permissions=(CHANNEL_VIEW,))
async def channel_infos(ctx: Context, req: ChannelInfosRequest) -> ChannelInfosResponse:
    """Get up to 1000 live channels by id; unknown ids are left out."""
    return await service.channel_infos(ctx, req)


@router.post("/channel/list", permissions=(CHANNEL_VIEW,))
async def channel_list(ctx: Context, req: ListChannelsRequest) -> ListChannelsResponse:
    """List the live channels the caller sees, a page at a time."""
    return await service.list_channels(ctx, req)


@router.post("/channel/update", permissions=(CHANNEL_MANAGE,), write=True)
async def channel_update(ctx: Context, req: UpdateChannelRequest) -> UpdateChannelResponse:
    """Update a channel; only the fields given change."""
    return await service.update_channel(ctx, req)


@router.post("/channel/delete", permissions=(CHANNEL_MANAGE,), write=True, dangerous=True)
async def channel_delete(ctx: Context, req: ChannelIDRequest) -> None:
    """Delete a channel (soft): its name is free again and its integrations stop."""
    await service.delete_channel(ctx, req)


@router.post("/channel/enable", permissions=(CHANNEL_MANAGE,), write=True)
async def channel_enable(ctx: Context, req: ChannelIDRequest) -> None:
    """Enable a channel."""
    await service.set_status(ctx, req, "enabled")


@router.post("/channel/disable", permissions=(CHANNEL_MANAGE,), write=True)
async def channel_disable(ctx: Context, req: ChannelIDRequest) -> None:
    """Disable a channel."""
    await service.set_status(ctx, req, "disabled")
