"""Alert rows to alert records: the one mapper of an alert event row and the one of the part
AlertItem and AlertInfo share, so the /alert/* reads and the incident reads cannot drift.

The display names (integration, channel) are given by the caller, read however its query
reads them; an integration that cannot be found names no type (""), rather than a made-up
one: the type is the integration's own."""

from __future__ import annotations

from typing import Any

import msgspec

from dutyline.incident.alert.schemas import AlertEventItem, Image

_json = msgspec.json.Decoder()
NO_NAMES = ("", "")


def images_of(raw: str | None) -> list[Image]:
    """Images as stored by whoever wrote them (ingestion, create); unknown keys are dropped
    and an entry without a source is skipped rather than failing the whole record."""
    found = _json.decode(raw or "[]")
    if not isinstance(found, list):
        return []
    return [
        Image(src=str(i["src"]), href=str(i.get("href", "")), alt=str(i.get("alt", "")))
        for i in found if isinstance(i, dict) and i.get("src")
    ]


def labels_of(raw: str | None) -> dict[str, Any]:
    found = _json.decode(raw or "{}")
    return found if isinstance(found, dict) else {}


def alert_fields(row: Any, *, integration: tuple[str, str] = NO_NAMES,
                 channel: tuple[str, str] = NO_NAMES) -> dict[str, Any]:
    """The AlertRecord fields of an `alert` row, given the (name, type) of its integration
    and the (name, status) of its channel."""
    integration_name, integration_type = integration
    channel_name, channel_status = channel
    return {
        "alert_id": row.alert_id, "integration_id": row.integration_id,
        "data_source_id": row.integration_id, "channel_id": row.channel_id,
        "account_id": row.account_id, "title": row.title, "title_rule": row.title_rule,
        "description": row.description, "alert_severity": row.alert_severity,
        "alert_status": row.alert_status, "alert_key": row.alert_key,
        "start_time": row.start_time, "last_time": row.last_time, "end_time": row.end_time,
        "labels": labels_of(row.labels), "ever_muted": bool(row.ever_muted),
        "deleted_at": row.deleted_at, "created_at": row.created_at,
        "updated_at": row.updated_at, "integration_name": integration_name,
        "integration_type": integration_type, "integration_ref_id": "",
        "channel_name": channel_name, "channel_status": channel_status,
        "responder_name": "", "responder_email": "", "event_cnt": row.event_cnt,
        "images": images_of(row.images), "data_source_name": integration_name,
        "data_source_type": integration_type, "data_source_ref_id": "",
    }


def event_item(row: Any, *, integration_type: str, title_rule: str,
               alert_key: str) -> AlertEventItem:
    """An `alert_event` row as the reference's AlertEventItem; the title rule and key are
    its alert's, the type its integration's. Events are never edited: updated_at is
    created_at, and they are not removed on their own (deleted_at 0)."""
    return AlertEventItem(
        event_id=row.event_id, alert_id=row.alert_id, account_id=row.account_id,
        channel_id=row.channel_id, integration_id=row.integration_id,
        integration_type=integration_type, data_source_id=row.integration_id,
        title=row.title, title_rule=title_rule, description=row.description,
        alert_key=alert_key, event_severity=row.event_severity,
        event_status=row.event_status, event_time=row.event_time, labels=labels_of(row.labels),
        images=images_of(row.images), created_at=row.created_at, updated_at=row.created_at,
        deleted_at=0,
    )
