"""The console's incident page lists the changes of its channel just before it opened; a
change's text stays text and only a web address becomes its link."""

from __future__ import annotations

import re

import pytest

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.console import Browser
from tests.incident.change_support import change, push_change
from tests.web.incident_support import HOSTILE, SCRIPT, ok, push

pytestmark = pytest.mark.anyio


async def _incident_after_changes(api: Api, owner: Person, *changes: dict[str, object]) -> str:
    channel_id = (await ok(api, "/channel/create", {"channel_name": "Storage"},
                           owner))["channel_id"]
    deploys = (await ok(api, "/integration/create", {
        "channel_id": channel_id, "integration_name": "CI",
        "integration_type": "change"}, owner))["integration_key"]
    for body in changes:
        reply = await push_change(api, deploys, body)
        assert reply.status == 200, reply.body
    alerts = (await ok(api, "/integration/create", {
        "channel_id": channel_id, "integration_name": "std"}, owner))["integration_key"]
    api.runtime.clock.advance(120)
    await push(api, alerts, title="disk full on db-7")
    now = int(api.runtime.clock.now())
    listed = await ok(api, "/incident/list", {"start_time": now - 60, "end_time": now + 60,
                                              "channel_ids": [channel_id]}, owner)
    return str(listed["items"][0]["incident_id"])


async def test_the_page_lists_the_changes_just_before(api: Api, owner: Person,
                                                      console: Browser) -> None:
    incident_id = await _incident_after_changes(
        api, owner, change(title="Deploy api v42", type="deployment",
                           link="https://ci.example/runs/7"),
        change(key="flag", title="Turn on new-checkout", type="feature_flag", status="Done"))
    html = (await console.get(f"/console/incidents/{incident_id}")).text
    section = html.split('id="changes-h"', 1)[1].split("</section>", 1)[0]
    assert ('<a href="https://ci.example/runs/7" rel="noopener noreferrer nofollow" '
            'target="_blank">Deploy api v42</a>') in section
    assert "Turn on new-checkout" in section and "feature_flag · Done" in section


async def test_a_quiet_channel_has_no_changes_section(api: Api, owner: Person,
                                                      console: Browser) -> None:
    incident_id = await _incident_after_changes(api, owner)
    assert 'id="changes-h"' not in (await console.get(f"/console/incidents/{incident_id}")).text


async def test_hostile_change_text_is_escaped_and_never_a_live_link(
        api: Api, owner: Person, console: Browser) -> None:
    incident_id = await _incident_after_changes(
        api, owner, change(title=f"{SCRIPT} {HOSTILE}", link="javascript:alert(1)"))
    html = (await console.get(f"/console/incidents/{incident_id}")).text
    section = html.split('id="changes-h"', 1)[1].split("</section>", 1)[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "<script>alert" not in html and "onerror=alert(1)>" not in html
    assert not re.search(r"""href=["']?\s*javascript:""", html, re.I)
