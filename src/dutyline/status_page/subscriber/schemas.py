"""Subscriber API requests and records (reference: StatusPageSubscriberListResponse,
ExportedStatusPageSubscriberItem, ImportStatusPageSubscribersRequest,
ExportStatusPageSubscribersRequest)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id, PageNumber, PageSize
from dutyline.status_page.page.schemas import ComponentFields

ComponentIds = Annotated[list[Annotated[str, msgspec.Meta(max_length=64)]],
                         msgspec.Meta(max_length=500)]


class SubscriberListRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    # Comma-separated component ids: subscribers following any of them (or all components).
    component_ids: Annotated[str, msgspec.Meta(max_length=10_000)] = ""
    p: PageNumber = 1
    limit: PageSize = 10

    def __post_init__(self) -> None:
        if self.p * self.limit > 10_000:
            raise ValueError("p × limit must not exceed 10000")

    @property
    def offset(self) -> int:
        return (self.p - 1) * self.limit


class SubscribedComponentItem(ComponentFields, kw_only=True):
    """Reference StatusPageComponentItem."""


class SubscriberItem(msgspec.Struct, kw_only=True):
    recipient: str
    method: str
    components: list[SubscribedComponentItem]
    all: bool
    locale: str


class SubscriberListResponse(msgspec.Struct, kw_only=True):
    total: int
    has_next_page: bool
    items: list[SubscriberItem]


class ImportItem(msgspec.Struct, kw_only=True):
    recipient: Annotated[str, msgspec.Meta(max_length=255)]
    component_ids: ComponentIds | None = None
    change_ids: Annotated[list[Id], msgspec.Meta(max_length=500)] | None = None
    all: bool | None = None
    locale: Annotated[str, msgspec.Meta(max_length=16)] = ""


class SubscriberImportRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    method: Literal["email", "im"]
    subscribers: Annotated[list[ImportItem], msgspec.Meta(max_length=10_000)] = []


class InvalidRecipient(msgspec.Struct, kw_only=True):
    recipient: str
    reason: str


class SubscriberImportResponse(msgspec.Struct, kw_only=True):
    # New subscribers, imported confirmed.
    imported: int
    # Already subscribed to the page (in any state) or repeated in the request: skipped.
    duplicates: int
    invalid: list[InvalidRecipient]


class SubscriberExportRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    component_ids: ComponentIds = []


