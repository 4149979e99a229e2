"""War-room requests and records (reference: CreateWarRoomRequest, ListWarRoomsRequest,
GetWarRoomDetailRequest, DeleteWarRoomRequest, WarRoom, WarRoomItem), with the fields the
live service's published client reads beside them (docs/compatibility.md)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dutyline.api.types import Id, NonNegInt64

IncidentId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
ChatId = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
MemberIds = Annotated[list[Id], msgspec.Meta(max_length=100)]


class CreateWarRoomRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    integration_id: Id
    member_ids: MemberIds | None = None
    add_observers: bool = False


class ListWarRoomsRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    integration_id: NonNegInt64 = 0  # 0 or absent: every integration


class WarRoomDetailRequest(msgspec.Struct, kw_only=True):
    integration_id: Id
    chat_id: ChatId


class DeleteWarRoomRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    integration_id: Id


class AddWarRoomMembersRequest(msgspec.Struct, kw_only=True):
    integration_id: Id
    chat_id: ChatId
    member_ids: MemberIds | None = None


class DefaultObserversRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId


class WarRoom(msgspec.Struct, kw_only=True):
    """One war room: the reference's WarRoom (chat_id, chat_name, share_link) and WarRoomItem
    fields in one record, as create, list and detail answer it. `status` is `enabled`, or
    `deleted` when detail finds the chat gone on the platform."""

    chat_id: str
    chat_name: str
    share_link: str
    incident_id: str
    plugin_type: str
    status: str
    account_id: int
    integration_id: int
    created_by: int
    created_at: int


class WarRoomListResponse(msgspec.Struct, kw_only=True):
    items: list[WarRoom]


class Observer(msgspec.Struct, kw_only=True):
    person_id: int
    person_name: str
    nickname: str
    name: str
    email: str
    phone: str  # masked, as the member list shows it
    status: str
    assigned_at: int


class DefaultObserversResponse(msgspec.Struct, kw_only=True):
    observers: list[Observer]


class ImIntegrationItem(msgspec.Struct, kw_only=True):
    data_source_id: int
    name: str
    plugin_type: str
    category: str
    settings: dict[str, Any]


class ImIntegrationListResponse(msgspec.Struct, kw_only=True):
    items: list[ImIntegrationItem]
