"""Status page change (event) and timeline requests and records (reference:
CreateStatusPageChangeRequest, StatusPageChangeItem, StatusPageChangeUpdateItem,
StatusPageComponentChangeItem, AffectedStatusPageComponentItem, the timeline requests)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64, PageRequest
from dutyline.status_page.page.schemas import ComponentFields, ComponentStatus

ChangeType = Literal["incident", "maintenance"]
ChangeStatus = Literal[
    "investigating", "identified", "monitoring", "resolved", "scheduled", "ongoing", "completed"
]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
Markdown = Annotated[str, msgspec.Meta(max_length=65_535)]
ForeignId = Annotated[str, msgspec.Meta(max_length=64)]
UpdateId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class ComponentChangeIn(msgspec.Struct, kw_only=True):
    component_id: ForeignId
    status: ComponentStatus


ComponentChanges = Annotated[list[ComponentChangeIn], msgspec.Meta(max_length=500)]


class UpdateIn(msgspec.Struct, kw_only=True):
    """One timeline entry of a create request. `update_id` is server-assigned (ignored)."""

    at_seconds: NonNegInt64 | None = None
    # Omitted: the event's status does not change with this entry.
    status: ChangeStatus | None = None
    description: Markdown = ""
    component_changes: ComponentChanges = []


class ChangeCreateRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    type: ChangeType
    title: Title
    status: ChangeStatus
    updates: Annotated[list[UpdateIn], msgspec.Meta(min_length=1, max_length=1000)]
    description: Markdown = ""
    start_at_seconds: NonNegInt64 | None = None
    responders: Annotated[list[Id], msgspec.Meta(max_length=100)] = []
    linked_changes: Annotated[list[ForeignId], msgspec.Meta(max_length=100)] = []
    close_at_seconds: NonNegInt64 | None = None
    notify_subscribers: bool = False
    auto_update_by_schedule: bool = False
    is_retrospective: bool = False


class ChangeCreateResponse(msgspec.Struct, kw_only=True):
    change_id: int
    change_name: str


class ChangeUpdateRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    change_id: Id
    title: Title | None = None
    description: Markdown | None = None
    responders: Annotated[list[Id], msgspec.Meta(max_length=100)] | None = None
    linked_changes: Annotated[list[ForeignId], msgspec.Meta(max_length=100)] | None = None
    start_at_seconds: NonNegInt64 | None = None
    # 0 clears the scheduled close.
    close_at_seconds: NonNegInt64 | None = None
    notify_subscribers: bool | None = None
    auto_update_by_schedule: bool | None = None


class ChangeLookup(msgspec.Struct, kw_only=True):
    page_id: Id
    change_id: Id


class ChangeListRequest(PageRequest, kw_only=True):
    page_id: Id
    type: ChangeType
    # Omitted: every status of the type.
    status: ChangeStatus | None = None
    start_at_seconds: NonNegInt64 | None = None
    end_at_seconds: NonNegInt64 | None = None


class ComponentChangeItem(msgspec.Struct, kw_only=True):
    component_id: str
    component_name: str
    status: str


class ChangeUpdateItem(msgspec.Struct, kw_only=True):
    update_id: str
    at_seconds: int
    status: str
    description: str
    component_changes: list[ComponentChangeItem]


class AffectedComponentItem(ComponentFields, kw_only=True):
    # The status the event gives the component, not the component's own.
    status: str


class ChangeItem(msgspec.Struct, kw_only=True):
    change_id: int
    page_id: int
    type: str
    title: str
    description: str
    status: str
    affected_components: list[AffectedComponentItem]
    responder_ids: list[int]
    linked_change_ids: list[str]
    start_at_seconds: int
    close_at_seconds: int
    is_retrospective: bool
    updates: list[ChangeUpdateItem]
    notify_subscribers: bool
    auto_update_by_schedule: bool


class ChangeListResponse(msgspec.Struct, kw_only=True):
    p: int
    limit: int
    total: int
    has_next_page: bool
    items: list[ChangeItem]


class TimelineCreateRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    change_id: Id
    status: ChangeStatus
    at_seconds: NonNegInt64 | None = None
    description: Markdown = ""
    component_changes: ComponentChanges = []
    # Omitted: the event's own notify_subscribers setting decides.
    notify_subscribers: bool | None = None


class TimelineCreateResponse(msgspec.Struct, kw_only=True):
    update_id: str


class TimelineUpdateRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    change_id: Id
    update_id: UpdateId
    at_seconds: NonNegInt64 | None = None
    description: Markdown | None = None
    status: ChangeStatus | None = None
    component_changes: ComponentChanges | None = None
    # Editing an entry notifies nobody unless asked.
    notify_subscribers: bool = False


class TimelineDeleteRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    change_id: Id
    update_id: UpdateId


class ActiveChangeListRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    # Omitted: both incidents and maintenances.
    type: ChangeType | None = None


class ActiveChangeTimeline(msgspec.Struct, kw_only=True):
    """One update of an open change as the live service's clients read it: `timeline_id` a
    JSON integer (derived from `update_id`), `at` Unix seconds."""

    timeline_id: int
    at: int
    status: str
    description: str


class ActiveChangeItem(ChangeItem, kw_only=True):
    # Beside the reference's fields, what the live service's clients read.
    created_at: int
    updated_at: int
    timelines: list[ActiveChangeTimeline]


class ActiveChangeListResponse(msgspec.Struct, kw_only=True):
    items: list[ActiveChangeItem]
    total: int
