"""Incident read records and requests (reference: IncidentInfo, Responder, ListIncidentsRequest,
IncidentListResponse, ListIncidentFeedRequest, IncidentFeedItem, ListIncidentAlertsRequest;
the alert records, AlertInfo among them, are incident/alert/schemas.py's)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64, PageNumber, PageRequest
from dutyline.incident.alert.schemas import AlertInfo, Image
from dutyline.incident.change.schemas import ChangeItem

# Incident and alert ids are 24 hex characters; anything else is refused by name at decode.
IncidentId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
IncidentIds = Annotated[list[IncidentId], msgspec.Meta(min_length=1, max_length=100)]
# Unix seconds: bounded so arithmetic on them (windows, cursors) never overflows int64.
UnixSeconds = Annotated[int, msgspec.Meta(ge=0, le=10**11)]

FeedType = Literal[
    "i_new", "i_assign", "i_a_rspd", "i_notify", "i_storm", "i_snooze", "i_wake", "i_ack",
    "i_unack", "i_comm", "i_rslv", "i_reopen", "i_merge", "i_r_title", "i_r_desc",
    "i_r_impact", "i_r_rc", "i_r_rsltn", "i_r_severity", "i_r_field", "i_m_flapping",
    "i_m_reply", "i_custom", "i_wr_create", "i_wr_delete", "i_auto_refresh", "a_merge",
]


class Responder(msgspec.Struct, kw_only=True, omit_defaults=True):
    # A name or e-mail not known (a member without an e-mail address) is left out: the
    # reference's `format: email` refuses "".
    person_id: int
    assigned_at: int
    acknowledged_at: int
    person_name: str = ""
    email: str = ""


class PersonShort(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Reference PersonShort: a member named by an incident (creator, closer, owner); an
    e-mail address left out when the member has none (`format: email` refuses "")."""

    person_id: int
    person_name: str
    email: str = ""


class LinkItem(msgspec.Struct, kw_only=True):
    name: str
    endpoint: str
    open_type: str = "tab"


class IncidentInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    # Optional reference fields default to None and are then left out of the JSON.
    incident_id: str
    account_id: int
    channel_id: int
    integration_id: int
    integration_ids: list[int]
    integration_types: list[str]
    dedup_key: str
    equals_md5: str
    start_time: int
    end_time: int
    last_time: int
    ack_time: int
    close_time: int
    creator_id: int
    closer_id: int
    owner_id: int
    incident_status: str
    incident_severity: str
    progress: str
    title: str
    description: str
    ai_summary: str
    impact: str
    root_cause: str
    resolution: str
    num: str
    deleted_at: int
    created_at: int
    updated_at: int
    snoozed_before: int
    group_method: str
    ever_muted: bool
    labels: dict[str, Any]
    fields: dict[str, Any]
    assigned_to: dict[str, Any]
    alert_cnt: int
    active_alert_cnt: int
    alert_event_cnt: int
    responders: list[Responder]
    account_name: str
    account_locale: str
    account_time_zone: str
    channel_name: str
    channel_status: str
    detail_url: str
    silence_url: str
    post_mortem_id: str
    images: list[Image]
    manual_overrides: list[str]
    merged_into: str
    creator: PersonShort | None = None
    closer: PersonShort | None = None
    owner: PersonShort | None = None
    reporter_email: str | None = None
    integration_type: str | None = None
    links: list[LinkItem] | None = None
    frequency: str | None = None
    alerts: list[AlertInfo] | None = None
    # /incident/info only: the changes of the incident's channel just before it opened
    # (incident/change), latest first. Not a reference field.
    recent_changes: list[ChangeItem] | None = None


class IncidentInfoRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    # Embed the incident's alerts (the first MAX_EMBEDDED_ALERTS, oldest first).
    include_alerts: bool = False


class IncidentListResponse(msgspec.Struct, kw_only=True):
    items: list[IncidentInfo]
    total: int
    has_next_page: bool
    search_after_ctx: str = ""


SearchText = Annotated[str, msgspec.Meta(max_length=255)]
ListCursor = Annotated[str, msgspec.Meta(max_length=512)]


class ListText(msgspec.Struct, kw_only=True):
    """The free text of a list read as the query service takes it: the search and the
    signed cursor (ListIncidentsRequest names them with these types)."""

    query: SearchText = ""
    search_after_ctx: ListCursor = ""


_IdList = Annotated[list[Id], msgspec.Meta(max_length=100)]
_PersonIdList = Annotated[list[NonNegInt64], msgspec.Meta(max_length=100)]


class ListIncidentsRequest(PageRequest, kw_only=True):
    start_time: UnixSeconds
    end_time: UnixSeconds
    asc: bool = False
    is_snoozed: bool = False
    is_my_team: bool = False
    is_my_channel: bool = False
    ever_muted: bool = False
    progress: Annotated[str, msgspec.Meta(max_length=64)] = ""
    query: SearchText = ""
    incident_severity: Annotated[str, msgspec.Meta(max_length=64)] = ""
    channel_ids: _PersonIdList = msgspec.field(default_factory=list)  # 0: standalone
    team_ids: _IdList = msgspec.field(default_factory=list)
    responder_ids: _IdList = msgspec.field(default_factory=list)
    acker_ids: _IdList = msgspec.field(default_factory=list)
    creator_ids: _PersonIdList = msgspec.field(default_factory=list)  # 0: the system
    closer_ids: _PersonIdList = msgspec.field(default_factory=list)
    incident_ids: Annotated[list[IncidentId], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    nums: Annotated[list[Annotated[str, msgspec.Meta(max_length=16)]],
                    msgspec.Meta(max_length=100)] = msgspec.field(default_factory=list)
    search_after_ctx: ListCursor = ""


class ListIncidentsByIdsRequest(msgspec.Struct, kw_only=True):
    incident_ids: Annotated[list[IncidentId], msgspec.Meta(max_length=100)]
    include_alerts: bool = False


class ListIncidentFeedRequest(PageRequest, kw_only=True):
    incident_id: IncidentId
    asc: bool = False
    types: Annotated[list[FeedType], msgspec.Meta(max_length=30)] = msgspec.field(
        default_factory=list)


class IncidentFeedItem(msgspec.Struct, kw_only=True):
    ref_id: str
    type: str
    detail: dict[str, Any]
    account_id: int
    creator_id: int
    creator_name: str
    deleted_at: int
    created_at: int
    updated_at: int


class ListIncidentFeedResponse(msgspec.Struct, kw_only=True):
    has_next_page: bool
    items: list[IncidentFeedItem]


class ListIncidentAlertsRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    include_events: bool = False
    is_active: bool | None = None
    p: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 1
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 1000

    def __post_init__(self) -> None:
        if self.p * self.limit > 10_000:
            raise ValueError("p × limit must not exceed 10000")


class ListIncidentAlertsResponse(msgspec.Struct, kw_only=True):
    items: list[AlertInfo]
    total: int


class ListPastIncidentsRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    # 0 (a client's unset value) means the default, as in the reference's Go clients.
    limit: Annotated[int, msgspec.Meta(ge=0, le=100)] = 5
    # Not in the reference; a published client of the live service pages with it.
    p: PageNumber = 1


class PastIncidentItem(IncidentInfo, kw_only=True):
    score: float


class ListPastIncidentsResponse(msgspec.Struct, kw_only=True):
    items: list[PastIncidentItem]
    total: int  # how many are similar enough, over every page
