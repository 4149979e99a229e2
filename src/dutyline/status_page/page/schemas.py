"""Status page, section and component requests and records (our own operations; components
follow the reference's StatusPageComponentItem)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64, PageRequest

PageType = Literal["public", "internal"]
ComponentStatus = Literal[
    "operational", "degraded", "partial_outage", "full_outage", "under_maintenance"
]
PageName = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
# Lower-case letters, digits and inner hyphens: the page's address /status/{url_name}.
UrlName = Annotated[
    str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
]
Description = Annotated[str, msgspec.Meta(max_length=1024)]
TimeZone = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
StructureId = Annotated[str, msgspec.Meta(max_length=24)]
ItemName = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
OrderId = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]


class PageCreateRequest(msgspec.Struct, kw_only=True):
    page_name: PageName
    url_name: UrlName
    page_type: PageType = "public"
    description: Description = ""
    time_zone: TimeZone = "UTC"


class PageCreateResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    page_id: int
    page_name: str
    url_name: str
    # Internal pages only: the visitors' login token, shown here once and never again.
    access_token: str = ""


class PageUpdateRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    page_name: PageName | None = None
    url_name: UrlName | None = None
    page_type: PageType | None = None
    description: Description | None = None
    time_zone: TimeZone | None = None
    # Internal pages: replace the login token (the old one stops working at once).
    rotate_access_token: bool = False


class PageUpdateResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    # Set only when this update issued a login token (page made internal, or rotated).
    access_token: str = ""


class PageLookup(msgspec.Struct, kw_only=True):
    page_id: Id


class PageListRequest(PageRequest, kw_only=True):
    pass


class SectionItem(msgspec.Struct, kw_only=True):
    section_id: str
    name: str
    description: str
    order_id: int


class ComponentFields(msgspec.Struct, kw_only=True):
    """A component as every record shows it (the reference StatusPageComponentItem); the
    records below add the status that fits where they appear."""

    component_id: str
    section_id: str
    name: str
    description: str
    available_since_seconds: int
    order_id: int
    hide_uptime: bool
    hide_all: bool


class ComponentItem(ComponentFields, kw_only=True):
    """Reference StatusPageComponentItem, plus the component's current status."""

    status: str


class PageItem(msgspec.Struct, kw_only=True):
    page_id: int
    page_name: str
    url_name: str
    page_type: str
    description: str
    time_zone: str
    status: str
    # Where visitors see it: {base_url}/status/{url_name}.
    public_url: str
    created_at: int
    updated_at: int
    # The names clients of the live service read, beside page_name and page_type.
    name: str = ""
    type: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or self.page_name
        self.type = self.type or self.page_type


class PageInfo(PageItem, kw_only=True):
    sections: list[SectionItem]
    components: list[ComponentItem]


class PageListResponse(msgspec.Struct, kw_only=True):
    p: int
    limit: int
    total: int
    has_next_page: bool
    # Each page with its sections and components, as /status-page/info has them.
    items: list[PageInfo]


class SectionUpsertRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    # Omitted or empty: a new section.
    section_id: StructureId = ""
    name: ItemName
    description: Description = ""
    order_id: OrderId | None = None


class SectionUpsertResponse(msgspec.Struct, kw_only=True):
    section_id: str


class SectionDeleteRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    section_id: Annotated[str, msgspec.Meta(min_length=1, max_length=24)]


class ComponentUpsertRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    # Omitted or empty: a new component.
    component_id: StructureId = ""
    name: ItemName
    # Empty: a component outside any section.
    section_id: StructureId | None = None
    description: Description | None = None
    available_since_seconds: NonNegInt64 | None = None
    order_id: OrderId | None = None
    hide_uptime: bool | None = None
    hide_all: bool | None = None
    # Set by hand; the next timeline write that mentions the component recomputes it.
    status: ComponentStatus | None = None


class ComponentUpsertResponse(msgspec.Struct, kw_only=True):
    component_id: str


class ComponentDeleteRequest(msgspec.Struct, kw_only=True):
    page_id: Id
    component_id: Annotated[str, msgspec.Meta(min_length=1, max_length=24)]
