"""The console's incident page: what it shows of a seeded incident (through the same services
as the API), what it never shows (another account's incident), and that hostile text stays
text."""

from __future__ import annotations

import re

import pytest

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in
from tests.web.incident_support import HOSTILE, SCRIPT, info, ok, push, seed

pytestmark = pytest.mark.anyio


async def test_the_page_shows_the_incident_its_timeline_alerts_and_fields(
        api: Api, owner: Person, console: Browser) -> None:
    await ok(api, "/field/create", {"field_name": "service", "field_type": "text",
                                    "display_name": "Affected service"}, owner)
    seeded = await seed(api, owner, page_by_email=True)
    await ok(api, "/incident/field/reset", {"incident_id": seeded.incident_id,
                                            "field_name": "service",
                                            "field_value": "checkout"}, owner)
    page = await console.get(f"/console/incidents/{seeded.incident_id}")
    assert page.status_code == 200
    html = page.text
    assert "<h1 id=\"incident-title\">disk full on db-7</h1>" in html
    assert "Critical" in html and "Triggered" in html and "Storage" in html
    # The timeline: the opening, the assignment by the escalation rule, and the e-mail that
    # could not be sent, with its reason.
    timeline = html.split('id="timeline-h"', 1)[1].split("</section>", 1)[0]
    assert "opened the incident" in timeline
    assert "assigned to Acme Owner (escalation rule Default)" in timeline
    assert "notification by email failed" in timeline
    assert re.search(r"Failed: Acme Owner: [^<]*DUTYLINE_SMTP_URL", timeline), timeline
    # Who is on call for it: the rule's layer paged the owner.
    people = html.split('id="people-h"', 1)[1].split("</section>", 1)[0]
    assert "Acme Owner" in people and "escalation rule Default, layer 1" in people
    # Its alert, with labels (a URL label is a link) and its events.
    alerts = html.split('id="alerts-h"', 1)[1].split("</section>", 1)[0]
    assert "<dt>host</dt>" in alerts and "db-7" in alerts
    assert '<a href="https://wiki/db" rel="noopener noreferrer nofollow"' in alerts
    assert "Events (1)" in alerts
    # The custom field, by its display name.
    fields = html.split('id="fields-h"', 1)[1].split("</section>", 1)[0]
    assert "Affected service" in fields and "checkout" in fields


async def test_similar_past_incidents_are_listed(api: Api, owner: Person,
                                                 console: Browser) -> None:
    first = await seed(api, owner, title="disk full on db-7")
    await ok(api, "/incident/resolve", {"incident_ids": [first.incident_id]}, owner)
    api.runtime.clock.advance(600)
    await push(api, first.integration_key, title="disk full on db-12", alert_key="k2")
    items = await ok(api, "/incident/past/list", {"incident_id": first.incident_id}, owner)
    assert items["items"] == []  # the first has nothing before it
    now = int(api.runtime.clock.now())
    listed = await ok(api, "/incident/list", {"start_time": now - 3600, "end_time": now + 60},
                      owner)
    [second] = [i["incident_id"] for i in listed["items"] if i["incident_id"] != first.incident_id]
    page = await console.get(f"/console/incidents/{second}")
    similar = page.text.split('id="similar-h"', 1)[1].split("</section>", 1)[0]
    assert f'href="/console/incidents/{first.incident_id}"' in similar
    assert "disk full on db-7" in similar


async def test_another_account_s_incident_is_not_found(
        api: Api, owner: Person, other_owner: Person, console: Browser) -> None:
    theirs = await seed(api, other_owner, title="their secret outage")
    page = await console.get(f"/console/incidents/{theirs.incident_id}")
    assert page.status_code == 404
    assert "their secret outage" not in page.text
    acked = await console.post(f"/console/incidents/{theirs.incident_id}/ack")
    assert acked.status_code == 404
    assert (await info(api, other_owner, theirs.incident_id))["progress"] == "Triggered"


async def test_a_signed_out_visitor_is_sent_to_sign_in(api: Api, owner: Person,
                                                       anonymous: Browser) -> None:
    seeded = await seed(api, owner)
    page = await anonymous.get(f"/console/incidents/{seeded.incident_id}")
    assert page.status_code == 303
    assert page.headers["location"].startswith("/console/sign-in?next=")


async def test_hostile_text_is_escaped_and_never_a_live_link(
        api: Api, owner: Person, console: Browser) -> None:
    await ok(api, "/field/create", {"field_name": "note", "field_type": "text"}, owner)
    seeded = await seed(api, owner, title=f"{SCRIPT} {HOSTILE}", labels={
        "evil": HOSTILE, "runbook": "javascript:alert(1)", f"k{SCRIPT}": "v"})
    await ok(api, "/incident/comment", {"incident_ids": [seeded.incident_id],
                                        "comment": f"{SCRIPT} and {HOSTILE}"}, owner)
    await ok(api, "/incident/field/reset", {"incident_id": seeded.incident_id,
                                            "field_name": "note", "field_value": HOSTILE},
             owner)
    html = (await console.get(f"/console/incidents/{seeded.incident_id}")).text
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "javascript:alert(1)" in html  # shown as text ...
    assert not re.search(r"""href=["']?\s*javascript:""", html, re.I)  # ... never a link
    assert "onerror=alert(1)>" not in html


async def test_the_old_detail_address_redirects_to_the_page(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    got = await info(api, owner, seeded.incident_id)
    assert got["detail_url"] == f"http://127.0.0.1:8080/console/incidents/{seeded.incident_id}" \
        or got["detail_url"].endswith(f"/console/incidents/{seeded.incident_id}")
    moved = await console.get(f"/incident/detail/{seeded.incident_id}")
    assert moved.status_code in (301, 302)
    assert moved.headers["location"] == f"/console/incidents/{seeded.incident_id}"
    assert (await console.get(moved.headers["location"])).status_code == 200


async def test_a_member_without_incident_manage_sees_no_actions(
        api: Api, owner: Person) -> None:
    from tests.fixtures.accounts import new_member

    seeded = await seed(api, owner)
    reader = await signed_in(api, await new_member(api, owner, name="Reader"))
    page = await reader.get(f"/console/incidents/{seeded.incident_id}")
    assert page.status_code == 200 and "disk full on db-7" in page.text
    assert f"/console/incidents/{seeded.incident_id}/" not in page.text
    assert 'id="actions-h"' not in page.text
    await reader.aclose()
