"""Incident war rooms: a group chat opened for an incident on a chat platform, through the
server's app for it (the IM integration), with the incident's responders invited and its
link posted; the incident's feed records the room (`i_wr_create`, `i_wr_delete`).

Opening a room and adding people to it talk to the platform before anything is written, so
they come in two steps: `prepare_*` reads and makes the platform calls (the request is still
in its read transaction), then `record_*` writes what was made. A platform that refuses or
cannot be reached fails the request with its reason, and nothing is stored (a chat already
made is archived or disbanded again, best effort). One room per incident and integration.
Deleting a room forgets it here; the chat itself stays on the platform, with its history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident.service import IncidentInfo, feed, query
from dutyline.kit.ids import numeric_id
from dutyline.notify.delivery.adapters.base import SendEnv
from dutyline.notify.preference import service as preferences
from dutyline.notify.war_room import repository as repo
from dutyline.notify.war_room.dingtalk import DingTalk
from dutyline.notify.war_room.feishu import Feishu
from dutyline.notify.war_room.platform import (
    BY_ID,
    ChatPlatform,
    ImIntegration,
    PlatformError,
    Room,
    war_room_integration,
    war_room_integrations,
)
from dutyline.notify.war_room.schemas import (
    ImIntegrationItem,
    Observer,
    WarRoom,
)
from dutyline.notify.war_room.slack import Slack
from dutyline.platform.member import service as members

# Reference IncidentFeedType entries of war rooms.
FEED_CREATE = "i_wr_create"
FEED_DELETE = "i_wr_delete"
ENABLED, DELETED = "enabled", "deleted"

PLATFORMS: dict[str, ChatPlatform] = {"slack_app": Slack(), "feishu_app": Feishu(),
                                      "dingtalk_app": DingTalk()}
VIEW = query.VIEW_PERMISSIONS

_ids = msgspec.json.Decoder(list[int])


def _integration(deps: Deps, integration_id: int) -> ImIntegration:
    found = war_room_integration(deps.settings, integration_id)
    if found is None:
        raise errors.invalid("integration_id",
                             "is not an IM integration with war rooms enabled "
                             "(/datasource/im/war-room-enabled/list)")
    return found


def _failed(exc: PlatformError) -> errors.ApiError:
    if exc.refused:
        return errors.BadRequest("{platform} refused the war room: {reason}",
                                 platform=exc.platform, reason=exc.reason)
    return errors.ServiceUnavailable("{platform} could not be reached for the war room: "
                                     "{reason}", platform=exc.platform, reason=exc.reason)


def _record(row: Any, room: Room | None = None, status: str = "") -> WarRoom:
    return WarRoom(
        chat_id=row.chat_id, chat_name=room.chat_name if room and room.chat_name
        else row.chat_name, share_link=row.share_link, incident_id=row.incident_id,
        plugin_type=row.plugin_type, status=status or row.status, account_id=row.account_id,
        integration_id=row.integration_id, created_by=row.created_by,
        created_at=row.created_at)


async def _incident(conn: AsyncConnection, actor: Actor, deps: Deps,
                    incident_id: str) -> IncidentInfo:
    return await query.incident_info(conn, actor, incident_id=incident_id, deps=deps,
                                     sources=False)


async def _checked_members(conn: AsyncConnection, actor: Actor,
                           member_ids: Sequence[int]) -> list[int]:
    wanted = list(dict.fromkeys(member_ids))
    live = await members.existing_member_ids(conn, actor, wanted)
    for member_id in wanted:
        if member_id not in live:
            raise errors.not_found("member", member_id)
    return wanted


async def _handles(conn: AsyncConnection, actor: Actor, integration: ImIntegration,
                   member_ids: Sequence[int]) -> list[str]:
    """The members' handles on the platform (`im.<platform>`); members without one are left
    out (they can join by the room's link)."""
    prefs = await preferences.preferences(conn, actor, list(member_ids))
    found = (prefs[m].im.get(integration.handle_key, "").strip() for m in member_ids)
    return list(dict.fromkeys(h for h in found if h))


def room_text(incident: IncidentInfo) -> str:
    return (f"Incident #{incident.num}: {incident.title}\n"
            f"Severity: {incident.incident_severity} · Progress: {incident.progress}\n"
            f"{incident.detail_url}")


@dataclass(frozen=True)
class NewRoom:
    incident_id: str
    integration: ImIntegration
    room: Room
    member_ids: tuple[int, ...]


@reads(INCIDENT_MANAGE)
async def prepare_create(conn: AsyncConnection, actor: Actor, *, deps: Deps, env: SendEnv,
                         incident_id: str, integration_id: int, member_ids: Sequence[int],
                         add_observers: bool) -> NewRoom:
    """Open the chat on the platform: the caller, `member_ids` and (`add_observers`) the
    incident's responders invited, the incident and its link posted."""
    integration = _integration(deps, integration_id)
    incident = await _incident(conn, actor, deps, incident_id)
    if await repo.for_incident(conn, actor.account_id, incident.incident_id, integration_id):
        raise errors.BadRequest("The incident already has a war room in this integration")
    people = await _checked_members(conn, actor, member_ids)
    if add_observers:
        people += [r.person_id for r in incident.responders]
    people = [p for p in dict.fromkeys([actor.person_id, *people]) if p]
    handles = await _handles(conn, actor, integration, people)
    platform = PLATFORMS[integration.plugin_type]
    name = f"Incident #{incident.num} {incident.title}"
    try:
        room = await platform.open(env, name=name, topic=incident.detail_url, handles=handles)
        try:
            await platform.post(env, room.chat_id, room_text(incident))
        except PlatformError:
            await platform.close(env, room.chat_id)
            raise
    except PlatformError as exc:
        raise _failed(exc) from None
    return NewRoom(incident.incident_id, integration, room, tuple(people))


@writes("/incident/war-room/create", INCIDENT_MANAGE,
        targets=lambda made: [made.incident_id, made.chat_id])
async def record_create(conn: AsyncConnection, actor: Actor, *, new: NewRoom) -> WarRoom:
    """Store the room `prepare_create` opened and note it in the incident's feed."""
    integration, room = new.integration, new.room
    if await repo.for_incident(conn, actor.account_id, new.incident_id,
                               integration.integration_id):
        # Another request opened one meanwhile: keep the first.
        raise errors.BadRequest("The incident already has a war room in this integration")
    values: dict[str, Any] = {
        "war_room_id": numeric_id(), "account_id": actor.account_id,
        "incident_id": new.incident_id, "integration_id": integration.integration_id,
        "plugin_type": integration.plugin_type, "chat_id": room.chat_id[:128],
        "chat_name": room.chat_name[:255], "share_link": room.share_link[:1024],
        "status": ENABLED, "member_ids": msgspec.json.encode(list(new.member_ids)).decode(),
        "created_by": actor.person_id, "created_at": actor.now_s,
    }
    try:
        await repo.add(conn, values)
    except IntegrityError:  # the same race, lost on the unique index
        raise errors.BadRequest(
            "The incident already has a war room in this integration") from None
    await feed.add(conn, actor, incident_id=new.incident_id, feed_type=FEED_CREATE, detail={
        "integration_id": integration.integration_id, "integration_name": integration.name,
        "plugin_type": integration.plugin_type, "chat_id": room.chat_id,
        "chat_name": room.chat_name, "share_link": room.share_link})
    return WarRoom(**{f: values[f] for f in WarRoom.__struct_fields__})


@reads_sync(*VIEW)
def list_rooms_sync(conn: Connection, actor: Actor, *, incident_id: str,
                    integration_id: int) -> list[WarRoom]:
    query.require_visible_sync(conn, actor, incident_id=incident_id)
    rows = repo.for_incident_sync(conn, actor.account_id, incident_id.lower(), integration_id)
    return [_record(r) for r in rows]


async def _room(conn: AsyncConnection, actor: Actor, integration_id: int,
                chat_id: str) -> Any:
    row = await repo.by_chat(conn, actor.account_id, integration_id, chat_id)
    if row is None:
        raise errors.not_found("war room", chat_id)
    await query.require_visible(conn, actor, incident_id=row.incident_id)
    return row


@reads(*VIEW)
async def room_detail(conn: AsyncConnection, actor: Actor, *, deps: Deps, env: SendEnv,
                      integration_id: int, chat_id: str) -> WarRoom:
    """The room as the platform shows it now (its current name); `status` `deleted` when
    the chat is gone there."""
    row = await _room(conn, actor, integration_id, chat_id)
    integration = _integration(deps, integration_id)
    try:
        room = await PLATFORMS[integration.plugin_type].look(env, row.chat_id)
    except PlatformError as exc:
        raise _failed(exc) from None
    return _record(row, room, ENABLED if room is not None else DELETED)


@dataclass(frozen=True)
class AddedMembers:
    row: Any
    member_ids: tuple[int, ...]


@reads(INCIDENT_MANAGE)
async def prepare_add_members(conn: AsyncConnection, actor: Actor, *, deps: Deps,
                              env: SendEnv, integration_id: int, chat_id: str,
                              member_ids: Sequence[int]) -> AddedMembers:
    """Invite members to the room on the platform (those with a handle there)."""
    row = await _room(conn, actor, integration_id, chat_id)
    integration = _integration(deps, integration_id)
    people = await _checked_members(conn, actor, member_ids)
    handles = await _handles(conn, actor, integration, people)
    if handles:
        try:
            await PLATFORMS[integration.plugin_type].invite(env, row.chat_id, handles)
        except PlatformError as exc:
            raise _failed(exc) from None
    return AddedMembers(row, tuple(people))


@writes("/incident/war-room/add-member", INCIDENT_MANAGE,
        targets=lambda room: [room.incident_id, room.chat_id])
async def record_members(conn: AsyncConnection, actor: Actor, *,
                         added: AddedMembers) -> WarRoom:
    row = added.row
    current = await repo.by_chat(conn, actor.account_id, row.integration_id, row.chat_id)
    if current is None:
        raise errors.not_found("war room", row.chat_id)  # deleted meanwhile
    ids = list(dict.fromkeys([*_ids.decode(current.member_ids), *added.member_ids]))
    await repo.set_members(conn, actor.account_id, current.war_room_id,
                           msgspec.json.encode(ids).decode())
    return _record(current)


@writes("/incident/war-room/delete", INCIDENT_MANAGE, targets=lambda chat_id: [chat_id])
async def delete_room(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                      integration_id: int) -> str:
    """Forget the incident's room in this integration (the chat stays on the platform);
    answers its chat id."""
    await query.require_visible(conn, actor, incident_id=incident_id)
    rows = await repo.for_incident(conn, actor.account_id, incident_id.lower(), integration_id)
    if not rows:
        raise errors.not_found("war room of incident", incident_id)
    row = rows[0]
    await repo.remove(conn, actor.account_id, row.war_room_id)
    known = BY_ID.get(row.integration_id)
    await feed.add(conn, actor, incident_id=row.incident_id, feed_type=FEED_DELETE, detail={
        "integration_id": row.integration_id, "plugin_type": row.plugin_type,
        "integration_name": known.name if known else "", "chat_id": row.chat_id,
        "chat_name": row.chat_name})
    return str(row.chat_id)


@reads_sync(*VIEW)
def default_observers_sync(conn: Connection, actor: Actor, *, deps: Deps,
                           incident_id: str) -> list[Observer]:
    """The incident's responders, first assigned first: who `add_observers` invites."""
    incident = query.incident_info_sync(conn, actor, incident_id=incident_id, deps=deps,
                                        sources=False)
    assigned = {r.person_id: r.assigned_at for r in incident.responders}
    people = members.contacts_sync(conn, actor, list(assigned))
    return [Observer(person_id=p.person_id, person_name=p.person_name,
                     nickname=p.person_name, name=p.person_name, email=p.email,
                     phone=members.mask_phone(p.phone), status=ENABLED,
                     assigned_at=assigned[p.person_id])
            for p in sorted(people.values(), key=lambda p: (assigned[p.person_id],
                                                            p.person_id))]


@reads_sync()
def im_integrations_sync(conn: Connection, actor: Actor, *,
                         deps: Deps) -> list[ImIntegrationItem]:
    """The IM integrations war rooms can be opened in (any member may list them): the
    server's settings, no row."""
    return [ImIntegrationItem(data_source_id=i.integration_id, name=i.name,
                              plugin_type=i.plugin_type, category="im",
                              settings={"war_room_enabled": True})
            for i in war_room_integrations(deps.settings)]
