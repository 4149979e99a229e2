"""Helpers of the channel notification rule tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from dutyline.db.tables.notify import notify_delivery
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

CREATE = "/channel/notify/rule/create"


def notify_rule(channel_id: int, **fields: Any) -> dict[str, Any]:
    return {"channel_id": channel_id, "rule_name": "Tell the team", "events": ["i_new"],
            "target": {"emails": ["watch@example.com"], "by": {}}, **fields}


async def create_notify_rule(api: Api, who: Person, body: dict[str, Any]) -> str:
    reply = await api.call(CREATE, body, key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["rule_id"])


async def list_notify_rules(api: Api, who: Person, channel_id: int) -> list[dict[str, Any]]:
    reply = await api.call("/channel/notify/rule/list", {"channel_id": channel_id}, key=who.key)
    assert reply.status == 200, reply.body
    return list(reply.data["items"])


async def deliveries_of(api: Api, incident_id: str) -> list[Any]:
    async with api.runtime.db.transaction() as conn:
        return list((await conn.execute(select(notify_delivery).where(
            notify_delivery.c.incident_id == incident_id)
            .order_by(notify_delivery.c.created_at, notify_delivery.c.delivery_id))).all())
