"""What the incident list's event stream sends, driven in-process: each stream here ends
after its first look (STREAM_MAX_S = 0), so its whole answer is what it would send for the
changes made since the page was read. The stream over a real server, across processes and
in a browser: test_incident_live.py, test_incident_list_browser.py."""

from __future__ import annotations

import html
import re

import pytest

from dutyline.web.pages import incidents_live
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, signed_in
from tests.incident.lifecycle_support import create

pytestmark = pytest.mark.anyio

_STREAM = re.compile(r'sse-connect="([^"]+)"')


@pytest.fixture(autouse=True)
def one_look(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incidents_live, "STREAM_MAX_S", 0.0)


async def _stream_url(b: Browser, query: str = "") -> str:
    page = await b.get(f"/console/incidents{query}")
    assert page.status_code == 200, page.text
    found = _STREAM.search(page.text)
    assert found is not None
    return html.unescape(found[1])


async def _messages(b: Browser, url: str, **headers: str) -> list[tuple[str, str]]:
    answer = await b.get(url, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["cache-control"] == "no-store"
    out = []
    for block in answer.text.split("\n\n"):
        lines = block.splitlines()
        event = next((line[7:] for line in lines if line.startswith("event: ")), "")
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        if event:
            out.append((event, data))
    return out


def _of(messages: list[tuple[str, str]], event: str) -> list[str]:
    return [data for kind, data in messages if kind == event]


async def test_new_and_changed_incidents_as_the_person_may_see_them(
        api: Api, owner: Person, clock: FakeClock) -> None:
    team = await api.call("/team/upsert", {"team_name": "Core",
                                           "person_ids": [owner.person_id]}, key=owner.key)
    secret = (await api.call("/channel/create", {
        "channel_name": "Secret", "team_id": team.data["team_id"], "is_private": True},
        key=owner.key)).data["channel_id"]
    listed = await create(api, owner, title="listed before")
    mia = await signed_in(api, await new_member(api, owner, name="Mia"))
    url = await _stream_url(mia)
    clock.advance(1)
    hidden = await create(api, owner, title="secret down", channel_id=secret)
    fresh = await create(api, owner, title='<script>alert(1)</script> fresh')
    await api.call("/incident/ack", {"incident_ids": [listed]}, key=owner.key)

    messages = await _messages(mia, url)
    (new_row,) = _of(messages, "incident-new")
    assert f'<li id="incident-{fresh}"' in new_row and "hx-swap-oob" not in new_row
    assert "&lt;script&gt;alert(1)&lt;/script&gt; fresh" in new_row
    assert "<script>" not in new_row
    (update,) = _of(messages, "incident-update")
    assert f'<li id="incident-{listed}" class="incident progress-processing" ' \
           'hx-swap-oob="true">' in update
    assert 'id="progress-tabs"' in update and "Triggered <span" in update
    everything = "".join(data for _, data in messages)
    assert hidden not in everything and "secret" not in everything
    # The position of the stream goes with each message, for a reconnection.
    answer = await mia.get(url)
    assert re.search(r"^id: \d+$", answer.text, re.MULTILINE)
    await mia.aclose()


async def test_the_page_s_filters_apply(api: Api, owner: Person, console: Browser) -> None:
    listed = await create(api, owner, title="listed", incident_severity="Warning")
    url = await _stream_url(console, "?severity=Warning&progress=Triggered")
    await create(api, owner, title="critical one")
    warning = await create(api, owner, title="warning one", incident_severity="Warning")
    await api.call("/incident/ack", {"incident_ids": [listed]}, key=owner.key)

    messages = await _messages(console, url)
    (new_row,) = _of(messages, "incident-new")
    assert "warning one" in new_row and warning in new_row
    (update,) = _of(messages, "incident-update")
    # Acknowledged, it left a list of Triggered incidents: the page drops its row.
    assert f'<li id="incident-{listed}" hx-swap-oob="delete"></li>' in update
    assert "critical one" not in "".join(data for _, data in messages)


async def test_an_older_page_takes_changes_but_no_new_rows(
        api: Api, owner: Person, console: Browser, clock: FakeClock) -> None:
    for n in range(30):
        clock.advance(1)
        await create(api, owner, title=f"incident {n:02d}")
    first = await console.get("/console/incidents")
    older = re.search(r'<a rel="next" href="([^"]+)">', first.text)
    assert older is not None
    url = await _stream_url(console, html.unescape(older[1]).removeprefix("/console/incidents"))
    assert "paged=1" in url
    await create(api, owner, title="brand new")
    messages = await _messages(console, url)
    assert _of(messages, "incident-new") == []
    assert len(_of(messages, "incident-update")) == 1


async def test_a_reconnection_goes_on_from_its_last_event(
        api: Api, owner: Person, console: Browser) -> None:
    url = await _stream_url(console)
    first = await create(api, owner, title="first")
    answer = await console.get(url)
    last_id = re.findall(r"^id: (\d+)$", answer.text, re.MULTILINE)[-1]
    second = await create(api, owner, title="second")
    again = await _messages(console, url, **{"Last-Event-ID": last_id})
    rows = "".join(_of(again, "incident-new"))
    assert second in rows and first not in rows
    # A position it cannot have been given starts from now: nothing to catch up.
    for bogus in ("99999999999", "-1", "x", "9" * 5000):
        assert _of(await _messages(console, url, **{"Last-Event-ID": bogus}),
                   "incident-new") == []
