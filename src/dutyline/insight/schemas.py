"""Requests and records of /insight/* (reference InsightFilter, InsightQueryRequest,
InsightIncidentListRequest, InsightTopkAlertByLabelRequest; DimensionInsightItem,
ResponderInsightItem, IncidentRawItem, InsightAlertByLabelItem)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import MAX_INT64, MAX_PAGE_WINDOW, Id, PageNumber, PageSize
from dutyline.kit.vocabulary import Status as Severity

Unix = Annotated[int, msgspec.Meta(ge=1, le=MAX_INT64)]
Seconds = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT64)]
HexId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
Ids = Annotated[list[Id], msgspec.Meta(max_length=100)]


class InsightFilter(msgspec.Struct, kw_only=True):
    start_time: Unix
    end_time: Unix
    team_ids: Ids = msgspec.field(default_factory=list)
    channel_ids: Ids = msgspec.field(default_factory=list)
    responder_ids: Ids = msgspec.field(default_factory=list)
    severities: Annotated[list[Severity], msgspec.Meta(max_length=3)] = msgspec.field(
        default_factory=list)
    incident_ids: Annotated[list[HexId], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    query: Annotated[str, msgspec.Meta(max_length=256)] = ""
    labels: Annotated[dict[str, str], msgspec.Meta(max_length=20)] = msgspec.field(
        default_factory=dict)
    fields: Annotated[dict[str, Any], msgspec.Meta(max_length=20)] = msgspec.field(
        default_factory=dict)
    orderby: Literal["created_at", ""] = "created_at"
    asc: bool = False
    is_my_team: bool = False
    time_zone: Annotated[str, msgspec.Meta(max_length=64)] = ""
    seconds_to_close_from: Seconds | None = None
    seconds_to_close_to: Seconds | None = None
    seconds_to_ack_from: Seconds | None = None
    seconds_to_ack_to: Seconds | None = None
    export_fields: Annotated[list[str], msgspec.Meta(max_length=50)] = msgspec.field(
        default_factory=list)
    description_html_to_text: bool = False


class InsightQueryRequest(InsightFilter, kw_only=True):
    split_hours: bool = False
    aggregate_unit: Literal["day", "week", "month", ""] = ""


class InsightIncidentListRequest(InsightFilter, kw_only=True):
    p: PageNumber = 1
    limit: PageSize = 20
    search_after_ctx: str = ""

    def __post_init__(self) -> None:
        if self.p * self.limit > MAX_PAGE_WINDOW:
            raise ValueError(f"p × limit must not exceed {MAX_PAGE_WINDOW}")


TopkOrder = Literal["total_alert_cnt", "total_alert_event_cnt", ""]


class InsightTopkAlertByLabelRequest(InsightQueryRequest, kw_only=True):
    label: Literal["check", "resource"]
    k: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    # The reference reuses the name `orderby` for the ranking of labels.
    orderby: TopkOrder = "total_alert_cnt"  # type: ignore[assignment]


class DimensionInsightItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Figures of one group: the account, a channel or a team, over a bucket (`ts`) or the
    whole window, and an hours class when split. `escalation_pct` is dutyline's addition."""

    ts: int | None = None
    hours: str | None = None
    account_id: int | None = None
    channel_id: int | None = None
    channel_name: str | None = None
    team_id: int | None = None
    team_name: str | None = None
    total_incident_cnt: int
    total_incidents_acknowledged: int
    total_incidents_closed: int
    total_incidents_auto_closed: int
    total_incidents_manually_closed: int
    total_incidents_timeout_closed: int
    total_incidents_escalated: int
    total_incidents_manually_escalated: int
    total_incidents_timeout_escalated: int
    total_incidents_reassigned: int
    total_interruptions: int
    total_notifications: int
    total_engaged_seconds: int
    total_seconds_to_ack: int
    total_seconds_to_close: int
    mean_seconds_to_ack: float
    mean_seconds_to_close: float
    noise_reduction_pct: float
    acknowledgement_pct: float
    escalation_pct: float
    total_alert_cnt: int
    total_alert_event_cnt: int


class DimensionInsightResponse(msgspec.Struct, kw_only=True):
    items: list[DimensionInsightItem]


class ResponderInsightItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    ts: int | None = None
    hours: str | None = None
    responder_id: int
    responder_name: str
    total_incident_cnt: int
    total_incidents_acknowledged: int
    total_incidents_reassigned: int
    total_incidents_escalated: int
    total_incidents_timeout_escalated: int
    total_incidents_manually_escalated: int
    total_interruptions: int
    total_notifications: int
    total_engaged_seconds: int
    total_seconds_to_ack: int
    mean_seconds_to_ack: float
    acknowledgement_pct: float


class ResponderInsightResponse(msgspec.Struct, kw_only=True):
    items: list[ResponderInsightItem]


class IncidentRawItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    incident_id: str
    title: str
    description: str
    team_id: int
    team_name: str
    channel_id: int
    channel_name: str
    progress: str
    severity: str
    created_at: int
    closed_by: Literal["auto", "timeout", "manually"] | None = None
    seconds_to_ack: int
    seconds_to_close: int
    engaged_seconds: int
    hours: str
    responders: list[dict[str, Any]]
    assigned_to: dict[str, Any] | None = None
    labels: dict[str, Any]
    fields: dict[str, Any]
    notifications: int
    interruptions: int
    assignments: int
    reassignments: int
    acknowledgements: int
    escalations: int
    timeout_escalations: int
    manual_escalations: int
    creator_id: int
    creator_name: str


class InsightIncidentListResponse(msgspec.Struct, kw_only=True):
    total: int
    has_next_page: bool
    items: list[IncidentRawItem]


class InsightAlertByLabelItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    label: str
    hours: str | None = None
    total_alert_cnt: int
    total_alert_event_cnt: int


class InsightAlertByLabelResponse(msgspec.Struct, kw_only=True):
    items: list[InsightAlertByLabelItem]
