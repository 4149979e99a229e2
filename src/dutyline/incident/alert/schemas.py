"""Alert requests and records (reference: AlertListRequest, AlertItem, AlertInfoRequest,
AlertEventListRequest, AlertEventItem, AlertListResponse, AlertEventListResponse,
AlertListByIDsRequest, AlertFeedRequest, FeedItem, AlertFeedResponse,
AlertEventGlobalListRequest, AlertEventGlobalListResponse, AlertMergeRequest, AlertInfo,
IncidentShort, Image, AlertImage). The alert records are defined here once, for every read of
the incident domain that answers alerts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import Id, PageRequest

AlertId = Annotated[str, msgspec.Meta(max_length=64)]
MAX_SPAN_S = 31 * 86_400
# Seconds up to the year 9999: bounds that keep every comparison inside int64.
TimeS = Annotated[int, msgspec.Meta(ge=0, le=253_402_300_799)]


class AlertListRequest(PageRequest, kw_only=True):
    start_time: TimeS
    end_time: TimeS
    search_after_ctx: Annotated[str, msgspec.Meta(max_length=256)] = ""
    is_active: bool | None = None
    ever_muted: bool | None = None
    alert_severity: Annotated[str, msgspec.Meta(max_length=64)] = ""
    channel_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    integration_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    alert_ids: Annotated[list[AlertId], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    alert_keys: Annotated[list[Annotated[str, msgspec.Meta(max_length=255)]],
                          msgspec.Meta(max_length=100)] = msgspec.field(default_factory=list)
    orderby: Literal["created_at", "updated_at"] = "created_at"
    asc: bool = False
    by_updated_at: bool = False


class AlertLookup(msgspec.Struct, kw_only=True):
    alert_id: AlertId


class AlertEventListRequest(PageRequest, kw_only=True):
    alert_id: AlertId
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 100


class IncidentShort(msgspec.Struct, kw_only=True):
    """Reference IncidentShort: the incident an alert belongs to."""

    incident_id: str
    title: str
    progress: str


class Image(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Reference Image and AlertImage (the same shape): an image of an incident, an alert or
    an event; an empty link or alt text is left out."""

    src: str
    href: str = ""
    alt: str = ""


class AlertEventItem(msgspec.Struct, kw_only=True):
    """Reference AlertEventItem: one raw event of an alert (records.event_item)."""

    event_id: str
    alert_id: str
    account_id: int
    channel_id: int
    integration_id: int
    integration_type: str
    data_source_id: int
    title: str
    title_rule: str
    description: str
    alert_key: str
    event_severity: str
    event_status: str
    event_time: int
    labels: dict[str, Any]
    images: list[Image]
    created_at: int
    updated_at: int
    deleted_at: int


class AlertRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What reference AlertItem and AlertInfo share (records.alert_fields fills it)."""

    alert_id: str
    integration_id: int
    data_source_id: int
    channel_id: int
    account_id: int
    title: str
    title_rule: str
    description: str
    alert_severity: str
    alert_status: str
    alert_key: str
    start_time: int
    last_time: int
    end_time: int
    labels: dict[str, Any]
    ever_muted: bool
    deleted_at: int
    created_at: int
    updated_at: int
    integration_name: str
    integration_type: str
    integration_ref_id: str
    channel_name: str
    channel_status: str
    responder_name: str
    responder_email: str
    event_cnt: int
    images: list[Image]
    data_source_name: str
    data_source_type: str
    data_source_ref_id: str


class AlertItem(AlertRecord, kw_only=True, omit_defaults=True):
    """Reference AlertItem: an alert as the /alert/* reads answer it."""

    # Absent (not null) when the alert is in no incident: the reference types it an object.
    incident: IncidentShort | None = None
    # Noise control (channel inhibit / silence rules), absent when nothing held it back: the
    # rule that inhibited it and the source alert that did, or the silence rule.
    inhibited: bool = False
    inhibit_rule_id: str = ""
    inhibited_by: str = ""
    silence_rule_id: str = ""


class AlertInfo(AlertRecord, kw_only=True, omit_defaults=True):
    """Reference AlertInfo: an alert of an incident (/incident/alert/list, embedded alerts)."""

    incident: IncidentShort
    # The names clients of the live service read, beside alert_severity, alert_status and
    # start_time (same values).
    severity: str = ""
    status: str = ""
    trigger_time: int = 0
    # Only when asked for (include_events); left out otherwise, never null.
    events: list[AlertEventItem] | None = None

    def __post_init__(self) -> None:
        # Whoever builds an AlertInfo gets the aliases filled from the reference fields.
        self.severity = self.severity or self.alert_severity
        self.status = self.status or self.alert_status
        self.trigger_time = self.trigger_time or self.start_time


class AlertListResponse(msgspec.Struct, kw_only=True):
    total: int
    has_next_page: bool
    search_after_ctx: str
    items: list[AlertItem]


class AlertEventListResponse(msgspec.Struct, kw_only=True):
    total: int
    has_next_page: bool
    items: list[AlertEventItem]


# --- /alert/list-by-ids, /alert/feed, /alert-event/list, /alert/merge ---------------------

AlertIds = Annotated[list[AlertId], msgspec.Meta(min_length=1, max_length=100)]


class AlertListByIdsRequest(msgspec.Struct, kw_only=True):
    alert_ids: AlertIds


AlertFeedType = Literal["a_new", "a_comm", "a_close"]


class AlertFeedRequest(PageRequest, kw_only=True):
    alert_id: AlertId
    asc: bool = False
    types: Annotated[list[AlertFeedType], msgspec.Meta(max_length=3)] = msgspec.field(
        default_factory=list)


class AlertFeedItem(msgspec.Struct, kw_only=True):
    """Reference FeedItem; times in milliseconds, as it says."""

    ref_id: str
    type: str
    detail: dict[str, str]
    account_id: int
    creator_id: int
    created_at: int
    updated_at: int


class AlertFeedResponse(msgspec.Struct, kw_only=True):
    has_next_page: bool
    items: list[AlertFeedItem]


class AlertEventGlobalListRequest(PageRequest, kw_only=True):
    # Omitted: the 24 hours before end_time; end_time omitted: now. At most 31 days apart.
    start_time: TimeS | None = None
    end_time: TimeS | None = None
    search_after_ctx: Annotated[str, msgspec.Meta(max_length=256)] = ""
    integration_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    integration_types: Annotated[list[Annotated[str, msgspec.Meta(max_length=32)]],
                                 msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    channel_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    severities: Annotated[str, msgspec.Meta(max_length=64)] = ""
    orderby: Literal["event_time"] = "event_time"
    asc: bool = False


class AlertEventGlobalListResponse(msgspec.Struct, kw_only=True):
    total: int
    has_next_page: bool
    search_after_ctx: str
    items: list[AlertEventItem]


class AlertMergeRequest(msgspec.Struct, kw_only=True):
    alert_ids: AlertIds
    incident_id: Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
    comment: Annotated[str, msgspec.Meta(max_length=1024)] = ""
    title: Annotated[str, msgspec.Meta(max_length=512)] | None = None
    owner_id: Id | None = None
