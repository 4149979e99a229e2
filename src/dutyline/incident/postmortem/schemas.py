"""Post-mortem records and requests (reference: PostMortemMeta, PostMortemItem, Responder,
ListPostMortemsRequest, ListPostMortemsResponse, DeletePostMortemRequest; create and update
are dutyline's own, named after them)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64
from dutyline.incident.query.schemas import IncidentId, UnixSeconds

PostMortemStatus = Literal["drafting", "published"]
PostMortemOrder = Literal["created_at_seconds", "updated_at_seconds"]
# md5 hex of the account and its incidents (service.post_mortem_id_of).
PostMortemId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{32}$")]
MAX_INCIDENTS = 10
MAX_CONTENT_CHARS = 200_000
Title = Annotated[str, msgspec.Meta(max_length=255)]
Body = Annotated[str, msgspec.Meta(max_length=MAX_CONTENT_CHARS)]
_IdList = Annotated[list[Id], msgspec.Meta(max_length=100)]


class PostMortemMeta(msgspec.Struct, kw_only=True):
    account_id: int
    title: str
    status: str
    post_mortem_id: str
    template_id: str
    incident_ids: list[str]
    media_count: int
    author_ids: list[int]
    team_id: int
    channel_id: int
    is_private: bool
    channel_name: str
    created_at_seconds: int
    updated_at_seconds: int


class PostMortemResponder(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Reference Responder: a member the incidents were assigned to (a name or e-mail not
    known is left out: the reference's `format: email` refuses "")."""

    person_id: int
    assigned_at: int
    acknowledged_at: int
    person_name: str = ""
    email: str = ""


class PostMortemBasics(msgspec.Struct, kw_only=True):
    incidents_highest_severity: str
    incidents_earliest_start_seconds: int
    incidents_latest_close_seconds: int
    incidents_total_duration_seconds: int
    responders: list[PostMortemResponder]


class PostMortemContent(msgspec.Struct, kw_only=True):
    content: str
    # What `content` is written in: dutyline drafts markdown; a client may store its own.
    format: str = "markdown"


class PostMortemDrafting(msgspec.Struct, kw_only=True):
    """Who drafted the summary, impact and contributing factors, and the model's job."""

    drafted_by: str  # template | model
    model_draft: str  # none | pending | done | failed | skipped
    model: str = ""
    error: str = ""


class PostMortemItem(msgspec.Struct, kw_only=True):
    meta: PostMortemMeta
    basics: PostMortemBasics
    content: PostMortemContent
    follow_ups: str
    drafting: PostMortemDrafting


class PostMortemLookup(msgspec.Struct, kw_only=True):
    post_mortem_id: PostMortemId


class CreatePostMortemRequest(msgspec.Struct, kw_only=True):
    incident_ids: Annotated[list[IncidentId], msgspec.Meta(min_length=1,
                                                           max_length=MAX_INCIDENTS)]
    # Empty: "Post-mortem: " and the first incident's title.
    title: Title = ""


class UpdatePostMortemRequest(msgspec.Struct, kw_only=True):
    """Fields left out (or null) stay as they are."""

    post_mortem_id: PostMortemId
    title: Title | None = None
    content: Body | None = None
    follow_ups: Body | None = None
    status: PostMortemStatus | None = None


class ListPostMortemsRequest(msgspec.Struct, kw_only=True):
    # The reference: published when left out.
    status: PostMortemStatus = "published"
    team_ids: _IdList = msgspec.field(default_factory=list)
    channel_ids: Annotated[list[NonNegInt64],
                           msgspec.Meta(max_length=100)] = msgspec.field(default_factory=list)
    created_at_start_seconds: UnixSeconds = 0
    created_at_end_seconds: UnixSeconds = 0
    order_by: PostMortemOrder = "created_at_seconds"
    asc: bool = False
    # The reference allows 0 for both; 0 reads as the first page and the default size.
    p: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 1
    limit: Annotated[int, msgspec.Meta(ge=0, le=100)] = 20
    search_after_ctx: Annotated[str, msgspec.Meta(max_length=512)] = ""


class ListPostMortemsResponse(msgspec.Struct, kw_only=True):
    items: list[PostMortemMeta]
    total: int
    has_next_page: bool
    search_after_ctx: str = ""
