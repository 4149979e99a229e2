"""Times in the reader's zone on every page: the person's own time zone, else their
account's, else UTC, with the zone's abbreviation; `<time datetime>` keeps the instant."""

from __future__ import annotations

import html
import re
import zoneinfo

import pytest
from sqlalchemy import update

from dutyline.db.tables.platform import account
from dutyline.web import templating, times
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.console import Browser
from tests.web.conftest import T0
from tests.web.incident_support import ok, seed

pytestmark = pytest.mark.anyio

# T0 (2023-11-14 22:13:20 UTC) is 2023-11-15 07:13:20 in Tokyo, 23:13:20 in Berlin.
UTC_ISO = "2023-11-14T22:13:20Z"


def text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


async def _own_zone(api: Api, owner: Person, zone: str) -> None:
    await ok(api, "/member/info/reset", {"member_id": owner.person_id, "time_zone": zone},
             owner)


async def _account_zone(api: Api, owner: Person, zone: str) -> None:
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == owner.account_id)
                           .values(time_zone=zone))


async def test_the_incident_page_and_the_on_call_page_show_one_instant_alike(
        api: Api, owner: Person, console: Browser) -> None:
    await _own_zone(api, owner, "Asia/Tokyo")
    seeded = await seed(api, owner)  # opened now: T0
    incident = await console.get(f"/console/incidents/{seeded.incident_id}")
    assert incident.status_code == 200
    started = re.search(r"<dt>Started</dt><dd><time datetime=\"([^\"]+)\">([^<]+)</time>",
                        incident.text)
    assert started and started.groups() == (UTC_ISO, "2023-11-15 07:13:20 JST")
    assert not re.search(r"\d\d:\d\d(:\d\d)? UTC", text(incident.text))
    # The timeline's entries too, each with its instant.
    assert re.search(r'<time datetime="2023-11-14T22:13:\d\dZ">2023-11-15 07:13:\d\d JST'
                     r"</time>", incident.text)

    # The calendar link made at the same instant, on the on-call page.
    await console.post("/console/on-call/calendar")
    oncall = text((await console.get("/console/on-call")).text)
    assert "Times are in Asia/Tokyo (JST)." in oncall
    assert "You have had a calendar link since Wed 15 Nov, 07:13" in oncall

    # And the session's last use on the Me page (the `when` filter).
    me = (await console.get("/console/me")).text
    assert f'<time datetime="{UTC_ISO}">2023-11-15 07:13 JST</time>' in me


async def test_without_a_zone_of_their_own_the_account_s_is_used_then_utc(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    page = f"/console/incidents/{seeded.incident_id}"
    assert "2023-11-14 22:13:20 UTC" in (await console.get(page)).text
    assert "2023-11-14 22:13 UTC" in (await console.get("/console/me")).text

    # A change of the account's zone shows on the next page, without signing in again.
    await _account_zone(api, owner, "Europe/Berlin")
    assert "2023-11-14 23:13:20 CET" in (await console.get(page)).text
    assert "2023-11-14 23:13 CET" in (await console.get("/console/me")).text
    # The person's own zone wins over the account's.
    await _own_zone(api, owner, "Asia/Tokyo")
    assert "2023-11-15 07:13:20 JST" in (await console.get(page)).text


async def test_a_stored_zone_the_server_does_not_know_falls_back(
        api: Api, owner: Person, console: Browser) -> None:
    await _account_zone(api, owner, "Mars/Olympus_Mons")
    page = (await console.get("/console/me")).text
    assert "2023-11-14 22:13 UTC" in page


def test_a_zone_with_only_an_offset_is_shown_as_one() -> None:
    sao_paulo = zoneinfo.ZoneInfo("America/Sao_Paulo")
    assert times.label(T0, sao_paulo) == "2023-11-14 19:13 UTC-03"
    assert times.label(T0, times.UTC_ZONE) == "2023-11-14 22:13 UTC"
    assert times.iso(T0) == UTC_ISO
    stamp = times.Stamp(T0, zoneinfo.ZoneInfo("Europe/Berlin"), seconds=True)
    assert (str(stamp), stamp.iso) == ("2023-11-14 23:13:20 CET", UTC_ISO)


def test_the_when_filter_reads_the_reader_s_zone_from_the_page_s_ctx() -> None:
    env = templating.environment(static=lambda name: name)

    class Reader:
        zone = ("Asia/Kolkata", zoneinfo.ZoneInfo("Asia/Kolkata"))

    shown = env.from_string('<time datetime="{{ at|isotime }}">{{ at|when }}</time>')
    assert shown.render(at=int(T0), ctx=Reader()) == (
        f'<time datetime="{UTC_ISO}">2023-11-15 03:43 IST</time>')
    # Without a reader (no page context), UTC.
    assert shown.render(at=int(T0), ctx=None) == (
        f'<time datetime="{UTC_ISO}">2023-11-14 22:13 UTC</time>')
