"""Opening an incident: the one path both ingestion (alerts grouped into a new incident) and
/incident/create take, so every incident starts with the state machine's opening values,
its `i_new` feed entry and its `created` event (state.begin)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.channel import service as channels
from dutyline.incident import repository as repo
from dutyline.incident import state
from dutyline.incident.change import service as changes
from dutyline.kit.ids import hex_id

_NUM_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I or O: read aloud on calls
_NUM_LENGTH = 6


@dataclass
class NewIncident:
    account_id: int
    title: str
    severity: str  # Critical | Warning | Info
    channel_id: int = 0
    integration_id: int = 0
    description: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    creator_id: int = 0  # 0: opened by the system (alerts)
    equals_md5: str = ""
    group_method: str = "n"
    dedup_key: str = ""
    assigned_to: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    # Opened by an alert: the incident counts it from the start (one alert, active, one
    # event), in its insert rather than an update after it.
    first_alert: bool = False


def _draw_num() -> str:
    """A short id people can say out loud, unique per account."""
    return "".join(secrets.choice(_NUM_ALPHABET) for _ in range(_NUM_LENGTH))


def open_incident_sync(conn: Connection, new: NewIncident, *, now_s: int) -> str:
    incident_id = hex_id()
    values = {
        "incident_id": incident_id,
        "account_id": new.account_id,
        "channel_id": new.channel_id,
        "integration_id": new.integration_id,
        "dedup_key": new.dedup_key,
        "equals_md5": new.equals_md5,
        "group_method": new.group_method,
        "title": new.title,
        "description": new.description,
        **state.opened(new.severity),
        "start_time": now_s,
        "last_time": now_s,
        "creator_id": new.creator_id,
        "labels": msgspec.json.encode(new.labels).decode(),
        "fields": msgspec.json.encode(new.fields).decode(),
        "assigned_to": msgspec.json.encode(new.assigned_to).decode(),
        "alert_cnt": int(new.first_alert),
        "active_alert_cnt": int(new.first_alert),
        "alert_event_cnt": int(new.first_alert),
        "created_at": now_s,
        "updated_at": now_s,
    }
    # The number is drawn until the insert takes it: the unique (account, num) constraint
    # decides, in the insert itself, so no read goes before it and no race gets past it.
    while not repo.insert_incident(conn, {**values, "num": _draw_num()}):
        pass
    if new.channel_id:
        channels.touch_last_incident_sync(conn, account_id=new.account_id,
                                          channel_id=new.channel_id, now_s=now_s)
    detail: dict[str, Any] = {"severity": new.severity, "title": new.title}
    if new.channel_id:
        # What changed in the channel just before: the timeline starts with it.
        recent = changes.recent_changes_sync(conn, account_id=new.account_id,
                                             channel_id=new.channel_id, at=now_s)
        if recent:
            detail["changes"] = recent
    state.begin(conn, state.By(new.account_id, new.creator_id, now_s), incident_id,
                new.channel_id, severity=new.severity, detail=detail)
    return incident_id


async def open_incident(conn: AsyncConnection, new: NewIncident, *, now_s: int) -> str:
    return await conn.run_sync(open_incident_sync, new, now_s=now_s)
