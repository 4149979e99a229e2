"""Template requests and records (reference: TemplateItem, TemplateListRequest,
TemplateCreateRequest, TemplateUpdateRequest, TemplateIDRequest). Preview is not in the
reference: it takes `{type, content, incident_id?}` and answers `{success, content, message}`,
as the live service's clients expect."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64, PageRequest
from dutyline.db.tables.notify import TEMPLATE_CHANNELS
from dutyline.kit.channels import TemplateChannel

TemplateId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
TemplateName = Annotated[str, msgspec.Meta(min_length=1, max_length=39)]
Description = Annotated[str, msgspec.Meta(max_length=500)]
Body = Annotated[str, msgspec.Meta(max_length=65_536)]
Channel = TemplateChannel


class TemplateBodies(msgspec.Struct, kw_only=True):
    email: Body = ""
    sms: Body = ""
    voice: Body = ""
    dingtalk: Body = ""
    wecom: Body = ""
    feishu: Body = ""
    feishu_app: Body = ""
    dingtalk_app: Body = ""
    wecom_app: Body = ""
    slack_app: Body = ""
    teams_app: Body = ""
    telegram: Body = ""
    slack: Body = ""
    zoom: Body = ""

    def bodies(self) -> dict[str, str]:
        return {c: getattr(self, c) for c in TEMPLATE_CHANNELS}


class TemplateCreateRequest(TemplateBodies, kw_only=True):
    template_name: TemplateName
    team_id: NonNegInt64 = 0
    description: Description = ""


class TemplateUpdateRequest(TemplateBodies, kw_only=True):
    template_id: TemplateId
    template_name: TemplateName
    team_id: NonNegInt64 = 0
    description: Description = ""


class TemplateCreateResponse(msgspec.Struct, kw_only=True):
    template_id: str
    template_name: str


class TemplateIdRequest(msgspec.Struct, kw_only=True):
    template_id: TemplateId


class TemplateInfoRequest(msgspec.Struct, kw_only=True):
    """`template_id` (reference) or `id` (what the live service's clients also send)."""

    template_id: TemplateId | None = None
    id: TemplateId | None = None


class TemplateListRequest(PageRequest, kw_only=True):
    orderby: Literal["created_at", "updated_at"] = "created_at"
    asc: bool = False
    is_my_team: bool = False
    team_ids: Annotated[list[NonNegInt64], msgspec.Meta(max_length=100)] | None = None
    creator_id: Id | None = None
    query: Annotated[str, msgspec.Meta(max_length=255)] = ""


class TemplateItem(TemplateBodies, kw_only=True):
    account_id: int
    team_id: int
    template_id: str
    template_name: str
    description: str
    status: str
    creator_id: int
    updated_by: int
    created_at: int
    updated_at: int
    # The built-in template every account has (read-only; an escalation rule may name it).
    preset: bool = False


class TemplateListResponse(msgspec.Struct, kw_only=True):
    total: int
    has_next_page: bool
    items: list[TemplateItem]


class TemplatePreviewRequest(msgspec.Struct, kw_only=True):
    type: Channel
    content: Body
    incident_id: Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")] | None = None


class TemplatePreviewResponse(msgspec.Struct, kw_only=True):
    success: bool
    content: str
    message: str


class RenderedMessage(msgspec.Struct, kw_only=True):
    """What delivery sends: the text, whether the default was used instead of the chosen
    template, and why."""

    text: str
    fell_back: bool
    error: str


def item_from_row(row: Any) -> TemplateItem:
    return TemplateItem(
        account_id=row.account_id, team_id=row.team_id, template_id=row.template_id,
        template_name=row.template_name, description=row.description, status=row.status,
        creator_id=row.creator_id, updated_by=row.updated_by, created_at=row.created_at,
        updated_at=row.updated_at, **{c: getattr(row, c) for c in TEMPLATE_CHANNELS},
    )
