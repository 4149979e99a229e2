"""Deliveries and their attempts (per incident), and the webhook history (reference
ListWebhookHistoryRequest/Response, WebhookHistoryItem, WebhookHistoryDetail)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import msgspec

from dutyline.api.types import NonNegInt64

Millis = Annotated[int, msgspec.Meta(ge=1_000_000_000_000, le=9_999_999_999_999)]


class ListDeliveriesRequest(msgspec.Struct, kw_only=True):
    incident_id: Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]


class DeliveryAttemptItem(msgspec.Struct, kw_only=True):
    attempt: int
    status: str
    status_code: int
    error_message: str
    duration: int
    event_time: int  # ms


class DeliveryItem(msgspec.Struct, kw_only=True):
    delivery_id: str
    incident_id: str
    channel: str
    person_id: int
    address: str
    escalate_rule_id: str
    escalate_rule_name: str
    layer_idx: int
    fire_type: str
    status: str
    attempts: list[DeliveryAttemptItem]
    last_error: str
    created_at: int
    updated_at: int


class ListDeliveriesResponse(msgspec.Struct, kw_only=True):
    items: list[DeliveryItem]


class ListWebhookHistoryRequest(msgspec.Struct, kw_only=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)]
    start_time: Millis
    end_time: Millis
    search_after_ctx: str = ""
    asc: bool = False
    orderby: str = "event_time"
    ref_id: Annotated[str, msgspec.Meta(max_length=128)] = ""
    integration_id: NonNegInt64 = 0
    event_types: list[str] = msgspec.field(default_factory=list)
    status: str = ""


class WebhookHistoryItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    integration_id: int
    event_id: str
    webhook_type: str
    event_type: str
    endpoint: str
    attempt: int
    duration: int
    status: str
    status_code: int
    event_time: str
    channel_id: int = 0
    ref_id: str = ""
    error_message: str = ""


class ListWebhookHistoryResponse(msgspec.Struct, kw_only=True):
    items: list[WebhookHistoryItem]
    total: int
    search_after_ctx: str


class GetWebhookHistoryDetailRequest(msgspec.Struct, kw_only=True):
    event_id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    # Webhooks of escalation layers belong to no integration: 0 (or left out) names them.
    integration_id: NonNegInt64 = 0


class WebhookHistoryDetail(WebhookHistoryItem, kw_only=True, omit_defaults=True):
    request_headers: str = ""
    request_body: str = ""
    response_headers: str = ""
    response_body: str = ""
    ref_title: str = ""
    channel_name: str = ""


def history_item(row: Any, cls: type[WebhookHistoryItem] = WebhookHistoryItem,
                 **extra: Any) -> Any:
    """The one attempt row -> history record mapper (detail adds the wire contents)."""
    when = dt.datetime.fromtimestamp(row.event_time_ms / 1000, tz=dt.UTC)
    fields: dict[str, Any] = {
        "integration_id": 0, "event_id": f"{row.delivery_id}-{row.attempt}",
        "webhook_type": "incident", "event_type": "i_notify", "endpoint": row.endpoint,
        "attempt": row.attempt, "duration": row.duration_ms, "status": row.status,
        "status_code": row.status_code, "event_time": when.isoformat(timespec="milliseconds"),
        "channel_id": row.channel_id, "ref_id": row.incident_id,
        "error_message": row.error_message,
    }
    if cls is WebhookHistoryDetail:
        fields.update(request_headers=row.request_headers, request_body=row.request_body,
                      response_headers=row.response_headers,
                      response_body=row.response_body)
    return cls(**fields, **extra)


ChannelName = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]


class NotifyTestRequest(msgspec.Struct, kw_only=True):
    # 0 or left out: the caller. Another member needs account management.
    member_id: NonNegInt64 = 0
    # Left out: every channel the member can be reached by (their contacts, chat handles
    # and preferred channels).
    channels: Annotated[list[ChannelName], msgspec.Meta(max_length=16)] | None = None


class NotifyTestResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    channel: str
    status: str  # sent | failed | skipped
    reason: str = ""
    # Where it went (e-mail, E.164 phone, chat handle); left out when there was none.
    address: str = ""


class NotifyTestResponse(msgspec.Struct, kw_only=True):
    member_id: int
    results: list[NotifyTestResult]
