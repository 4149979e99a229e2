"""Helpers for the incident lifecycle and query tests: channels and alerts written straight to
the database (the channel and ingestion paths have their own tests), and readers of what an
incident left behind (feed, events)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import func, insert, select, update

from dutyline.db.tables.channel import channel
from dutyline.db.tables.incident import alert, custom_field, incident, incident_event
from dutyline.kit.ids import hex_id, numeric_id
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, Reply


def now(api: Api) -> int:
    return int(api.runtime.clock.now())


async def seed_channel(api: Api, account: Person, name: str = "Payments") -> int:
    channel_id = numeric_id()
    t = now(api)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(insert(channel).values(
            channel_id=channel_id, account_id=account.account_id,
            creator_id=account.person_id, channel_name=name, name_key=name.lower(),
            created_at=t, updated_at=t))
    return channel_id


async def seed_alert(api: Api, account: Person, incident_id: str, *, channel_id: int = 0,
                     active: bool = True, events: int = 1) -> str:
    """An alert of the incident, as ingestion would leave it (counts included)."""
    alert_id = hex_id()
    t = now(api)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(insert(alert).values(
            alert_id=alert_id, account_id=account.account_id, channel_id=channel_id,
            integration_id=0, alert_key=alert_id, title="disk full",
            alert_severity="Critical", alert_status="Critical" if active else "Ok",
            event_cnt=events, start_time=t, last_time=t, end_time=0 if active else t,
            incident_id=incident_id, created_at=t, updated_at=t))
        await conn.execute(update(incident).where(incident.c.incident_id == incident_id).values(
            alert_cnt=incident.c.alert_cnt + 1,
            active_alert_cnt=incident.c.active_alert_cnt + (1 if active else 0),
            alert_event_cnt=incident.c.alert_event_cnt + events))
    return alert_id


async def seed_field(api: Api, account: Person, name: str, field_type: str,
                     options: list[str] | None = None) -> None:
    t = now(api)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(insert(custom_field).values(
            field_id=hex_id(), account_id=account.account_id, field_name=name,
            display_name=name, field_type=field_type,
            options=msgspec.json.encode(options or []).decode(),
            creator_id=account.person_id, created_at=t, updated_at=t))


async def create(api: Api, who: Person, **body: Any) -> str:
    reply = await api.call("/incident/create",
                           {"incident_severity": "Critical", "title": "db down", **body},
                           key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["incident_id"])


async def info(api: Api, who: Person, incident_id: str) -> dict[str, Any]:
    reply = await api.call("/incident/info", {"incident_id": incident_id}, key=who.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


async def feed_types(api: Api, who: Person, incident_id: str) -> list[str]:
    reply = await api.call("/incident/feed", {"incident_id": incident_id, "asc": True,
                                              "limit": 100}, key=who.key)
    assert reply.status == 200, reply.body
    return [item["type"] for item in reply.data["items"]]


async def feed_items(api: Api, who: Person, incident_id: str) -> list[dict[str, Any]]:
    reply = await api.call("/incident/feed", {"incident_id": incident_id, "asc": True,
                                              "limit": 100}, key=who.key)
    assert reply.status == 200, reply.body
    return list(reply.data["items"])


async def event_kinds(api: Api, incident_id: str) -> list[str]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(incident_event.c.kind).where(
            incident_event.c.incident_id == incident_id).order_by(incident_event.c.id))
        return [r[0] for r in rows]


async def events_of(api: Api, incident_id: str) -> list[dict[str, Any]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(incident_event).where(
            incident_event.c.incident_id == incident_id).order_by(incident_event.c.id))
        return [{"kind": r.kind, "person_id": r.person_id,
                 "payload": msgspec.json.decode(r.payload)} for r in rows]


async def event_total(api: Api) -> int:
    async with api.runtime.db.transaction(write=False) as conn:
        return int((await conn.execute(select(func.count()).select_from(incident_event)))
                   .scalar_one())


def assert_invalid(reply: Reply, code: str, *names: str) -> None:
    assert reply.status == 400, reply.body
    assert reply.code == code, reply.body
    for name in names:
        assert name in reply.message, (name, reply.message)
