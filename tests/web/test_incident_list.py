"""The incident list page (`/console/incidents`): its filters, the counts by progress, keyset
paging, who sees what, hostile text kept as text, and acknowledging from a row."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select

from dutyline.db.tables.platform import audit_log
from tests.dispatch.support import make_channel, make_integration, push
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, signed_in
from tests.incident.lifecycle_support import create, info

pytestmark = pytest.mark.anyio

LIST = "/console/incidents"
_ROW = re.compile(r'<li id="incident-([0-9a-f]{24})"')
_TITLE = re.compile(r'<a class="title" href="/console/incidents/[0-9a-f]{24}">([^<]*)</a>')
_COUNT = re.compile(r'>(All|Triggered|Processing|Closed) <span class="count">(\d+)</span>')


def titles(page: str) -> list[str]:
    return [html.unescape(t) for t in _TITLE.findall(page)]


def counts(page: str) -> dict[str, int]:
    return {name: int(n) for name, n in _COUNT.findall(page)}


async def _page(b: Browser, query: str = "") -> str:
    answer = await b.get(LIST + query)
    assert answer.status_code == 200, answer.text
    return answer.text


async def test_filters_narrow_the_list_and_the_tabs_count_by_progress(
        api: Api, owner: Person, clock: FakeClock) -> None:
    await create(api, owner, title="old outage")
    clock.advance(8 * 86_400)  # out of the default window (the last 7 days)
    console = await signed_in(api, owner)
    payments = await make_channel(api, owner, "Payments")
    team = await api.call("/team/upsert", {"team_name": "Core",
                                           "person_ids": [owner.person_id]}, key=owner.key)
    search = (await api.call("/channel/create", {"channel_name": "Search",
                                                 "team_id": team.data["team_id"]},
                             key=owner.key)).data["channel_id"]
    made = {}
    for title, body in (("disk full", {"channel_id": payments}),
                        ("api slow", {"channel_id": payments, "incident_severity": "Warning"}),
                        ("index stale", {"channel_id": search, "incident_severity": "Info"}),
                        ("cert expires", {})):
        clock.advance(60)
        made[title] = await create(api, owner, title=title, **body)
    await api.call("/incident/ack", {"incident_ids": [made["api slow"]]}, key=owner.key)
    await api.call("/incident/resolve", {"incident_ids": [made["index stale"]]}, key=owner.key)

    every = await _page(console)
    assert titles(every) == ["cert expires", "index stale", "api slow", "disk full"]
    assert counts(every) == {"All": 4, "Triggered": 2, "Processing": 1, "Closed": 1}
    cases: list[tuple[str, list[str]]] = [
        ("?progress=Triggered", ["cert expires", "disk full"]),
        ("?progress=Closed", ["index stale"]),
        ("?severity=Warning", ["api slow"]),
        (f"?channel={payments}", ["api slow", "disk full"]),
        (f"?team={team.data['team_id']}", ["index stale"]),
        ("?q=disk", ["disk full"]),
        ("?q=disk&progress=Closed", []),
        ("?window=1h", ["cert expires", "index stale", "api slow", "disk full"]),
        # Unknown values are ignored rather than refused: a stale link still opens a list.
        ("?progress=Nope&severity=Bad&window=9y&channel=x", titles(every)),
        # So is a search or a cursor past the list service's limits (its ListText).
        ("?q=" + "d" * 256 + "&after=" + "c" * 513, titles(every)),
    ]
    for query, expected in cases:
        assert titles(await _page(console, query)) == expected, query
    # The tabs count within the other filters, whatever progress is chosen.
    assert counts(await _page(console, f"?channel={payments}&progress=Closed")) == {
        "All": 2, "Triggered": 1, "Processing": 1, "Closed": 0}
    # The form shows what it filters by.
    narrowed = await _page(console, f"?severity=Warning&channel={payments}&q=api")
    assert '<option value="Warning" selected>' in narrowed
    assert f'<option value="{payments}" selected>Payments</option>' in narrowed
    assert 'name="q" type="search" value="api"' in narrowed
    await console.aclose()


async def test_the_time_window(api: Api, owner: Person, clock: FakeClock) -> None:
    await create(api, owner, title="two days ago")
    clock.advance(2 * 86_400)
    await create(api, owner, title="now")
    console = await signed_in(api, owner)
    page = await _page(console)
    assert titles(page) == ["now", "two days ago"]
    # Each row says how long ago it started (and when, in its <time>).
    assert re.findall(r'<time datetime="[0-9TZ:-]+" title="[^"]+">([^<]+)</time>', page) == [
        "just now", "2 d ago"]
    assert titles(await _page(console, "?window=24h")) == ["now"]
    clock.advance(6 * 86_400)
    console = await signed_in(api, owner)  # a week without use ends a session
    assert titles(await _page(console)) == ["now"]
    assert titles(await _page(console, "?window=31d")) == ["now", "two days ago"]
    assert "No incidents match these filters." in await _page(console, "?window=1h")
    await console.aclose()


async def test_pages_by_keyset_without_repeating_or_skipping(
        api: Api, owner: Person, console: Browser, clock: FakeClock) -> None:
    for n in range(30):
        clock.advance(1)
        await create(api, owner, title=f"incident {n:02d}")
    first = await _page(console)
    assert titles(first) == [f"incident {n:02d}" for n in range(29, 4, -1)]
    older = re.search(r'<a rel="next" href="([^"]+)">Older incidents</a>', first)
    assert older is not None
    # New incidents meanwhile do not shift the next page.
    clock.advance(1)
    await create(api, owner, title="newer")
    second = await _page(console, html.unescape(older[1]).removeprefix(LIST))
    assert titles(second) == [f"incident {n:02d}" for n in range(4, -1, -1)]
    assert 'rel="next"' not in second
    assert "Newest incidents" in second
    # A cursor that is not the list's own starts again from the newest.
    tampered = await _page(console, "?after=bm9wZQ.AAAA")
    assert titles(tampered)[0] == "newer"


async def test_only_the_incidents_the_person_may_see(api: Api, owner: Person,
                                                     clock: FakeClock) -> None:
    other = await new_account(api, "Globex")
    await create(api, other, title="globex outage")
    team = await api.call("/team/upsert", {"team_name": "Core",
                                           "person_ids": [owner.person_id]}, key=owner.key)
    secret = (await api.call("/channel/create", {
        "channel_name": "Secret", "team_id": team.data["team_id"], "is_private": True},
        key=owner.key)).data["channel_id"]
    await create(api, owner, title="secret outage", channel_id=secret)
    clock.advance(1)
    await create(api, owner, title="open outage")
    member = await new_member(api, owner, name="Mia")
    viewer = await new_member(api, owner, name="Vic", builtin=None)

    as_owner = await signed_in(api, owner)
    assert titles(await _page(as_owner)) == ["open outage", "secret outage"]
    as_member = await signed_in(api, member)
    page = await _page(as_member)
    assert titles(page) == ["open outage"]
    assert counts(page)["All"] == 1
    # Not even as a filter: the private channel is not offered, and asking for it finds none.
    assert "Secret" not in page
    assert titles(await _page(as_member, f"?channel={secret}")) == []
    # A member whose roles hold neither permission to read incidents sees none.
    as_viewer = await signed_in(api, viewer)
    denied = await as_viewer.get(LIST)
    assert denied.status_code == 403
    assert "outage" not in denied.text
    for b in (as_owner, as_member, as_viewer):
        await b.aclose()


async def test_hostile_titles_and_labels_stay_text(api: Api, owner: Person,
                                                   console: Browser) -> None:
    channel = await make_channel(api, owner, "Hostile")
    key = await make_integration(api, owner, channel)
    nasty = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>',
             "javascript:alert(1)"]
    for n, title in enumerate(nasty):
        reply = await push(api, key, title=title, alert_key=f"k{n}", labels={
            "evil": '"><svg onload=alert(1)>', "link": "javascript:alert(2)",
            "<b>key</b>": "v"})
        assert reply.status == 200, reply.body
    page = await _page(console)
    assert sorted(titles(page)) == sorted(nasty)
    assert "<script>alert(1)</script>" not in page
    assert "<img src=x" not in page and "<svg" not in page and "<b>key</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    # No URL anywhere on the page comes from what an alert said.
    assert not re.search(r'(href|src|action)="\s*javascript:', page, re.IGNORECASE)
    assert "&lt;b&gt;key&lt;/b&gt;=v" in page


async def test_acknowledge_from_the_list(api: Api, owner: Person, console: Browser) -> None:
    made = await create(api, owner, title="disk full")
    page = await _page(console, "?severity=Critical")
    assert 'action="/console/incidents/ack"' in page
    back = "/console/incidents?severity=Critical"
    forged = await console.post("/console/incidents/ack", {"incident_id": made, "back": back},
                                csrf=False)
    assert forged.status_code == 403
    assert (await info(api, owner, made))["progress"] == "Triggered"
    done = await console.post("/console/incidents/ack", {"incident_id": made, "back": back})
    assert done.status_code == 303 and done.headers["location"] == back
    assert (await info(api, owner, made))["progress"] == "Processing"
    async with api.runtime.db.transaction(write=False) as conn:
        entry = (await conn.execute(select(audit_log).where(
            audit_log.c.operation == "incident.ack"))).one()
    assert entry.credential == "session" and made in entry.target_ids
    after = await _page(console, "?severity=Critical")
    assert "Acknowledged." in after
    assert 'action="/console/incidents/ack"' not in after  # Processing: nothing to ack
    # Again: the incident is no longer Triggered; the list says why and stays.
    again = await console.post("/console/incidents/ack", {"incident_id": made,
                                                          "back": "https://evil.example/"})
    assert again.status_code == 303 and again.headers["location"] == LIST
    assert "Triggered" in await _page(console)


async def test_no_acknowledge_without_the_permission(api: Api, owner: Person) -> None:
    made = await create(api, owner, title="disk full")
    reader_role = await _role(api, owner, "channel_view")
    reader = await new_member(api, owner, name="Rita", builtin=None, role_ids=[reader_role])
    b = await signed_in(api, reader)
    page = await _page(b)
    assert titles(page) == ["disk full"]
    assert 'action="/console/incidents/ack"' not in page
    refused = await b.post("/console/incidents/ack", {"incident_id": made})
    assert refused.status_code == 403
    assert (await info(api, owner, made))["progress"] == "Triggered"
    await b.aclose()


async def _role(api: Api, owner: Person, *names: str) -> int:
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    ids = [p["id"] for p in perms if p["permission_name"] in names]
    role = await api.call("/role/upsert", {"role_name": "+".join(names),
                                           "permission_ids": ids}, key=owner.key)
    assert role.status == 200, role.body
    return int(role.data["role_id"])


async def test_the_page_opens_its_live_stream_and_a_signed_out_stream_ends(
        api: Api, owner: Person, console: Browser, anonymous: Browser) -> None:
    page = await _page(console)
    found = re.search(r'sse-connect="([^"]+)"', page)
    assert found is not None
    url = html.unescape(found[1])
    assert url.startswith("/console/incidents/stream?from=") or "from=" in url
    assert 'src="/console/static/incidents.js?v=' in page
    # Without a session the stream says so at once and ends (the page then stops listening).
    ended = await anonymous.get(url)
    assert ended.status_code == 200
    assert ended.headers["content-type"].startswith("text/event-stream")
    assert "event: session-ended" in ended.text
