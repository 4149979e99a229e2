"""Where a notification's signed links land: after the confirming POST (and at once for the
open link), a browser signed in to the console goes to the incident's page; any other gets a
read-only view of that incident, with no action on it but a way to sign in."""

from __future__ import annotations

import pytest

from dutyline.dispatch import links
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.console import Browser
from tests.web.incident_support import SCRIPT, info, seed

pytestmark = pytest.mark.anyio


async def _link(api: Api, person: Person, action: str, incident_id: str) -> str:
    runtime = api.runtime
    token = links.sign(await links.server_key(runtime.settings), links.Link(
        action, person.account_id, person.person_id, incident_id,
        int(runtime.clock.now()) + 600))
    return links.PATH + token


async def test_an_ack_link_shows_a_confirmation_then_the_read_only_view(
        api: Api, owner: Person, anonymous: Browser) -> None:
    seeded = await seed(api, owner, page_by_email=True)
    path = await _link(api, owner, "ack", seeded.incident_id)
    shown = await anonymous.get(path)
    assert shown.status_code == 200
    assert f'<form method="post" action="{path}">' in shown.text
    assert (await info(api, owner, seeded.incident_id))["progress"] == "Triggered"

    done = await anonymous.client.post(path)
    assert done.status_code == 200
    html = done.text
    assert "<h1>Incident acknowledged</h1>" in html
    assert "disk full on db-7" in html and "Processing" in html
    assert "acknowledged" in html.split('id="timeline-h"', 1)[1]
    assert "DUTYLINE_SMTP_URL" in html  # the timeline, failed delivery included
    assert "<dt>host</dt>" in html  # the alerts
    assert "Sign in to do more" in html
    assert f'href="/console/sign-in?next=%2Fconsole%2Fincidents%2F{seeded.incident_id}"' in html
    assert "<form" not in html.split("<main", 1)[1]  # no action of any kind
    assert (await info(api, owner, seeded.incident_id))["progress"] == "Processing"
    again = await anonymous.client.post(path)
    assert again.status_code == 409 and "Nothing to do" in again.text


async def test_signed_in_the_link_lands_on_the_console_page(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    path = await _link(api, owner, "resolve", seeded.incident_id)
    done = await console.client.post(path)
    assert done.status_code == 303
    assert done.headers["location"] == f"/console/incidents/{seeded.incident_id}"
    page = await console.get(done.headers["location"])
    assert "Incident resolved." in page.text and "Closed" in page.text
    assert "resolved (through a notification&#39;s link)" in page.text  # the timeline
    assert (await info(api, owner, seeded.incident_id))["progress"] == "Closed"


async def test_the_open_link_lands_on_the_same_view(
        api: Api, owner: Person, console: Browser, anonymous: Browser) -> None:
    seeded = await seed(api, owner, title=f"{SCRIPT} db")
    path = await _link(api, owner, "open", seeded.incident_id)
    opened = await console.get(path)
    assert opened.status_code == 303
    assert opened.headers["location"] == f"/console/incidents/{seeded.incident_id}"
    shown = await anonymous.get(path)
    assert shown.status_code == 200 and "Sign in to do more" in shown.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; db" in shown.text
    assert "<script>alert" not in shown.text
    assert (await anonymous.client.post(path)).status_code == 404  # open acts on nothing
    assert (await info(api, owner, seeded.incident_id))["progress"] == "Triggered"


async def test_another_account_s_session_gets_the_read_only_view(
        api: Api, owner: Person, other_owner: Person) -> None:
    from tests.fixtures.console import signed_in

    seeded = await seed(api, owner)
    stranger = await signed_in(api, other_owner)
    path = await _link(api, owner, "ack", seeded.incident_id)
    done = await stranger.client.post(path)
    assert done.status_code == 200 and "Sign in to do more" in done.text
    await stranger.aclose()


async def test_a_forged_or_expired_link_is_not_found(api: Api, owner: Person,
                                                     anonymous: Browser) -> None:
    seeded = await seed(api, owner)
    path = await _link(api, owner, "ack", seeded.incident_id)
    assert (await anonymous.get(path + "x")).status_code == 404
    assert (await anonymous.client.post(path + "x")).status_code == 404
    api.runtime.clock.advance(601)
    assert (await anonymous.client.post(path)).status_code == 404
    assert (await info(api, owner, seeded.incident_id))["progress"] == "Triggered"


async def test_a_link_of_a_removed_member_is_refused(api: Api, owner: Person,
                                                     anonymous: Browser) -> None:
    from sqlalchemy import update

    from dutyline.db.tables.platform import member
    from tests.fixtures.accounts import new_member

    seeded = await seed(api, owner)
    gone = await new_member(api, owner, name="Gone")
    path = await _link(api, gone, "ack", seeded.incident_id)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(member).where(member.c.member_id == gone.person_id)
                           .values(status="deleted"))
    refused = await anonymous.client.post(path)
    assert refused.status_code == 403 and "Link no longer valid" in refused.text
    assert (await info(api, owner, seeded.incident_id))["progress"] == "Triggered"
