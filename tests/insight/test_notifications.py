"""Insights count the notifications people received: every delivery to a person is one
notification, the distinct moments a person was paged are their interruptions, and group
targets (chats, webhooks) count in neither."""

from __future__ import annotations

import pytest
from sqlalchemy import insert

from dutyline.db.tables.notify import notify_delivery
from dutyline.kit.ids import hex_id
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.insight.conftest import START, ok

pytestmark = pytest.mark.anyio

WINDOW = {"start_time": START, "end_time": START + 86_400}


async def test_notifications_and_interruptions_are_counted(capi: Api, acme: Person) -> None:
    reply = await ok(capi, "/incident/create", {"incident_severity": "Critical",
                                                "title": "disk full"}, acme)
    incident_id = str(reply.data["incident_id"])
    await ok(capi, "/incident/ack", {"incident_ids": [incident_id]}, acme)

    def row(channel: str, person_id: int, at: int) -> dict[str, object]:
        return {"delivery_id": hex_id(), "account_id": acme.account_id,
                "incident_id": incident_id, "channel": channel, "person_id": person_id,
                "status": "success", "created_at": at, "updated_at": at}

    async with capi.runtime.db.transaction() as conn:
        await conn.execute(insert(notify_delivery), [
            # The first step pages the owner by e-mail and SMS at once, the second by voice.
            row("email", acme.person_id, START + 10), row("sms", acme.person_id, START + 10),
            row("voice", acme.person_id, START + 310),
            # A group chat pages nobody.
            row("slack", 0, START + 10),
        ])
    [account] = (await ok(capi, "/insight/account", WINDOW, acme)).data["items"]
    assert (account["total_notifications"], account["total_interruptions"]) == (3, 2)
    [responder] = (await ok(capi, "/insight/responder", WINDOW, acme)).data["items"]
    assert responder["responder_id"] == acme.person_id
    assert (responder["total_notifications"], responder["total_interruptions"]) == (3, 2)
    [by_channel] = (await ok(capi, "/insight/channel", WINDOW, acme)).data["items"]
    assert by_channel["total_notifications"] == 3
