"""/incident/war-room/create|list|detail|delete|add-member|default-observers and
/datasource/im/war-room-enabled/list: group chats opened for incidents through the server's
chat apps (docs/war-rooms.md)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Empty, Router
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.notify.delivery.service import send_env
from dutyline.notify.war_room import service
from dutyline.notify.war_room.schemas import (
    AddWarRoomMembersRequest,
    CreateWarRoomRequest,
    DefaultObserversRequest,
    DefaultObserversResponse,
    DeleteWarRoomRequest,
    ImIntegrationListResponse,
    ListWarRoomsRequest,
    WarRoom,
    WarRoomDetailRequest,
    WarRoomListResponse,
)

router = Router("War rooms")
MANAGE = (INCIDENT_MANAGE,)


@router.post("/incident/war-room/create", service=service.record_create, write=True, outbound=True)
async def war_room_create(ctx: Context, req: CreateWarRoomRequest) -> WarRoom:
    """Open a war room: a group chat for the incident on a chat platform.

    In an IM integration with war rooms enabled, the caller, `member_ids` and, with
    `add_observers`, the incident's responders are invited (by their handle on the
    platform, `im`), and the incident's link is posted. A platform refusal fails the call
    with its reason and stores nothing."""
    new = await service.prepare_create(
        ctx.conn, ctx.actor, deps=ctx.runtime.deps, env=send_env(ctx.runtime),
        incident_id=req.incident_id, integration_id=req.integration_id,
        member_ids=req.member_ids or [], add_observers=req.add_observers)
    await ctx.begin_writes()
    return await service.record_create(ctx.conn, ctx.actor, new=new)


@router.post("/incident/war-room/list", service=service.list_rooms_sync)
def war_room_list(conn: Connection, ctx: Context,
                  req: ListWarRoomsRequest) -> WarRoomListResponse:
    """List an incident's war rooms.

    Of one integration when `integration_id` is given; oldest first."""
    return WarRoomListResponse(items=service.list_rooms_sync(
        conn, ctx.actor, incident_id=req.incident_id, integration_id=req.integration_id))


@router.post("/incident/war-room/detail", service=service.room_detail)
async def war_room_detail(ctx: Context, req: WarRoomDetailRequest) -> WarRoom:
    """Get a war room as the platform shows it now.

    `status` is `deleted` when the chat is gone on the platform."""
    return await service.room_detail(ctx.conn, ctx.actor, deps=ctx.runtime.deps,
                                     env=send_env(ctx.runtime),
                                     integration_id=req.integration_id, chat_id=req.chat_id)


@router.post("/incident/war-room/delete", service=service.delete_room, write=True)
async def war_room_delete(ctx: Context, req: DeleteWarRoomRequest) -> None:
    """Delete an incident's war room.

    dutyline forgets the room of this integration; the chat stays on the platform."""
    await service.delete_room(ctx.conn, ctx.actor, incident_id=req.incident_id,
                              integration_id=req.integration_id)


@router.post("/incident/war-room/add-member", service=service.record_members, write=True,
             outbound=True)
async def war_room_add_member(ctx: Context, req: AddWarRoomMembersRequest) -> WarRoom:
    """Invite members to a war room.

    Those with a handle on its platform are invited; `member_ids` null or empty invites
    no one."""
    added = await service.prepare_add_members(
        ctx.conn, ctx.actor, deps=ctx.runtime.deps, env=send_env(ctx.runtime),
        integration_id=req.integration_id, chat_id=req.chat_id,
        member_ids=req.member_ids or [])
    await ctx.begin_writes()
    return await service.record_members(ctx.conn, ctx.actor, added=added)


@router.post("/incident/war-room/default-observers", service=service.default_observers_sync)
def war_room_default_observers(conn: Connection, ctx: Context,
                               req: DefaultObserversRequest) -> DefaultObserversResponse:
    """List a war room's default observers.

    The incident's responders, with when each was assigned: who `add_observers` invites."""
    return DefaultObserversResponse(observers=service.default_observers_sync(
        conn, ctx.actor, deps=ctx.runtime.deps, incident_id=req.incident_id))


@router.post("/datasource/im/war-room-enabled/list")
def im_war_room_enabled_list(conn: Connection, ctx: Context,
                             req: Empty) -> ImIntegrationListResponse:
    """List the IM integrations with war rooms enabled.

    They are the server's chat apps that war rooms can be opened in."""
    return ImIntegrationListResponse(items=service.im_integrations_sync(
        conn, ctx.actor, deps=ctx.runtime.deps))
