"""Change events on the wire: the push body (/event/push/change/standard) and its answer,
/change/list's request and records (decisions §10: `change_id` a string, times plain integer
seconds, `labels` string to string)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec

from dutyline.api.types import Id, PageRequest
from dutyline.incident.ingest.schemas import Labels, Url

# Where a change stands, as change tools report it (the vendor's standard change event).
ChangeStatus = Literal["Planned", "Ready", "Processing", "Canceled", "Done"]
CHANGE_STATUSES: tuple[str, ...] = get_args(ChangeStatus)
FINISHED: frozenset[str] = frozenset({"Canceled", "Done"})
# What changed.
ChangeType = Literal["deployment", "config", "feature_flag", "other"]
CHANGE_TYPES: tuple[str, ...] = get_args(ChangeType)
# Unix seconds, bounded so that milliseconds sent by mistake are refused by name.
Seconds = Annotated[int, msgspec.Meta(ge=0, le=10**11)]
ChangeKey = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]


class ChangePushRequest(msgspec.Struct, kw_only=True):
    """One change event. Pushes with the same `change_key` through the same integration
    update one change."""

    title: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    change_key: ChangeKey
    change_status: ChangeStatus
    description: Annotated[str, msgspec.Meta(max_length=16_384)] = ""
    link: Url = ""  # shown as a link to the change in its tool; never fetched
    type: ChangeType = "other"
    start_time: Seconds = 0  # 0: when the change was first pushed
    end_time: Seconds = 0  # 0: when a push first reports it Done or Canceled
    labels: Labels = msgspec.field(default_factory=dict)


class ChangePushResponse(msgspec.Struct, kw_only=True):
    change_id: str
    change_key: str


ChangeIdText = Annotated[str, msgspec.Meta(max_length=32)]


class ListChangesRequest(PageRequest, kw_only=True):
    change_ids: Annotated[list[ChangeIdText], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    channel_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    # Changes that started in [start_time, end_time]; 0: no bound.
    start_time: Seconds = 0
    end_time: Seconds = 0
    type: Annotated[str, msgspec.Meta(max_length=32)] = ""


class ChangeItem(msgspec.Struct, kw_only=True):
    change_id: str
    title: str
    description: str
    type: str
    status: str
    channel_id: int
    creator_id: int
    start_time: int
    end_time: int  # 0 while the change runs
    labels: dict[str, str]
    change_key: str
    link: str
    integration_id: int
    event_cnt: int
    created_at: int
    updated_at: int
    # Read by the vendor's MCP server (docs/compatibility.md): `status` under its push name,
    # and the channel's name.
    change_status: str = ""
    channel_name: str = ""


class ListChangesResponse(msgspec.Struct, kw_only=True):
    total: int
    items: list[ChangeItem]
