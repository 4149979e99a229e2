"""The war-room step of the reference walk (test_reference_coverage.py): the reference's
/incident/war-room/create|list|detail|delete, answered through the server's Slack app against
the fake platform APIs (tests/fixtures/fake_chat_apps.py), on the walk's own database."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from dutyline.config import ChatApps
from tests.fixtures.api import make_api
from tests.fixtures.fake_chat_apps import SLACK_BOT_TOKEN, FakeChatApps, build
from tests.fixtures.loopback import serve_asgi

if TYPE_CHECKING:
    from tests.api.test_reference_coverage import World

SLACK = 2  # the server's Slack app as an IM integration


async def war_rooms(w: World) -> None:
    fake = FakeChatApps()
    with serve_asgi(build(fake)) as base_url:
        fake.base_url = base_url
        apps = ChatApps(slack_api_url=fake.url("slack") + "/api",
                        slack_bot_token=SLACK_BOT_TOKEN)
        runtime = w.api.runtime
        async with make_api(runtime.settings.with_(chat_apps=apps),
                            clock=runtime.clock) as api:
            walk = replace(w, api=api)
            incident_id = w.ids["incident_id"]
            room = await walk.call("/incident/war-room/create", {
                "incident_id": incident_id, "integration_id": SLACK,
                "member_ids": [w.mate.person_id], "add_observers": True})
            await walk.call("/incident/war-room/list", {"incident_id": incident_id})
            await walk.call("/incident/war-room/list", {"incident_id": incident_id,
                                                        "integration_id": SLACK})
            await walk.call("/incident/war-room/detail", {"integration_id": SLACK,
                                                          "chat_id": room["chat_id"]})
            await walk.call("/incident/war-room/delete", {"incident_id": incident_id,
                                                          "integration_id": SLACK})
