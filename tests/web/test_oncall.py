"""The console's "On call" page: who is on call now and next, whom rules page, the person's
own shifts by day, and the calendar link; all through the schedule and dispatch services, with
their permission checks."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select, update

from dutyline.db.tables.platform import account, audit_log
from tests.dispatch.support import create_rule, layer, make_channel, rule_body
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, signed_in
from tests.schedule.helpers import MONDAY_SHANGHAI, ok, rotation

pytestmark = pytest.mark.anyio
PAGE = "/console/on-call"
# Monday 2026-04-13 10:00 in Asia/Shanghai; the owner reads times in Asia/Tokyo (one hour on).
NOW = MONDAY_SHANGHAI + 10 * 3600


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


def text(page: str) -> str:
    """The page's words, tags and extra white space dropped, entities decoded."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def section(page: str, heading_id: str) -> str:
    found = re.search(rf'<section[^>]*aria-labelledby="{heading_id}">(.*?)</section>', page,
                      re.S)
    assert found, heading_id
    return text(found[1])


def days(page: str) -> list[str]:
    return re.findall(r'<h3 class="oncall-day"><time datetime="([0-9-]+)">', page)


@pytest.fixture
async def team(api: Api, owner: Person) -> dict[str, Any]:
    """A daily rotation at midnight in Shanghai from Monday: Alice, then the owner, then Bob
    (each a day in turn); the owner's profile says Asia/Tokyo."""
    alice = await new_member(api, owner, name="Alice")
    bob = await new_member(api, owner, name="Bob")
    await ok(api, "/member/info/reset", {"member_id": owner.person_id,
                                         "time_zone": "Asia/Tokyo"}, owner.key)
    sid = int((await ok(api, "/schedule/create", {
        "schedule_name": "Primary", "time_zone": "Asia/Shanghai",
        "layers": [rotation([alice.person_id], [owner.person_id], [bob.person_id],
                            enable=MONDAY_SHANGHAI)]}, owner.key))["schedule_id"])
    return {"alice": alice, "bob": bob, "schedule_id": sid}


@pytest.fixture
async def alice_browser(api: Api, team: dict[str, Any]) -> AsyncIterator[Browser]:
    b = await signed_in(api, team["alice"])
    yield b
    await b.aclose()


async def test_now_and_next_in_the_person_s_time_zone(console: Browser,
                                                     team: dict[str, Any]) -> None:
    page = await console.get(PAGE)
    assert page.status_code == 200
    assert "Times are in Asia/Tokyo (JST)." in text(page.text)
    # Alice holds Monday (Shanghai), until Tuesday 00:00 there: 01:00 in Tokyo.
    assert ("Primary Now Alice until Tue 14 Apr, 01:00 "
            "Next Acme Owner (you) from Tue 14 Apr, 01:00") in section(page.text, "h-schedules")
    assert 'datetime="2026-04-14T01:00:00+09:00"' in page.text


async def test_a_removed_member_is_never_shown_on_call(
        api: Api, console: Browser, owner: Person, team: dict[str, Any]) -> None:
    checkout = await make_channel(api, owner, "Checkout")
    await create_rule(api, owner, rule_body(checkout, [
        layer(schedule_to_role_ids={str(team["schedule_id"]): []})], rule_name="Paging"))
    await create_rule(api, owner, rule_body(checkout, [
        layer(person_ids=[team["alice"].person_id, team["bob"].person_id])],
        rule_name="Direct"))
    await ok(api, "/member/delete", {"member_id": team["alice"].person_id}, owner.key)
    page = (await console.get(PAGE)).text
    # Nobody holds Monday any more; the owner's Tuesday is next.
    assert ("Primary Now Nobody Next Acme Owner (you) from Tue 14 Apr, 01:00"
            in section(page, "h-schedules"))
    assert "Schedule: Primary: Nobody" in section(page, "h-rules")
    assert "Direct Channel: Checkout Person: Bob" in section(page, "h-rules")
    assert "Alice" not in page


async def test_the_old_address_leads_to_the_page(console: Browser) -> None:
    moved = await console.get("/console/oncall")
    assert moved.status_code == 303
    assert moved.headers["location"] == PAGE


async def test_my_shifts_are_listed_by_day_for_four_weeks(console: Browser,
                                                        team: dict[str, Any]) -> None:
    page = await console.get(PAGE)
    # The owner holds every third day (Shanghai) from Tuesday 14 April: in Tokyo each runs
    # from 01:00 to 01:00 the next day, so it shows on two days; the four weeks end on
    # Monday 11 May at 10:00 Shanghai, inside one of the owner's days.
    firsts = [date(2026, 4, 14) + timedelta(days=3 * k) for k in range(9)]
    expected = [d.isoformat() for first in firsts for d in (first, first + timedelta(days=1))]
    assert days(page.text) == [*expected, "2026-05-11"]
    mine = section(page.text, "h-mine")
    assert "Tuesday 14 April 01:00 to 24:00: Primary Wednesday 15 April 00:00 to 01:00: " \
           "Primary Friday 17 April" in mine
    assert "Monday 11 May 01:00 to 11:00: Primary" in mine


async def test_a_shift_in_progress_starts_now_and_a_whole_day_says_so(
        api: Api, console: Browser, owner: Person, clock: FakeClock) -> None:
    await ok(api, "/member/info/reset", {"member_id": owner.person_id,
                                         "time_zone": "Asia/Shanghai"}, owner.key)
    await ok(api, "/schedule/create", {
        "schedule_name": "Weekly", "time_zone": "Asia/Shanghai",
        "layers": [rotation([owner.person_id], enable=MONDAY_SHANGHAI, unit="week")]},
        owner.key)
    mine = section((await console.get(PAGE)).text, "h-mine")
    assert "Monday 13 April Now to 24:00: Weekly Tuesday 14 April All day: Weekly" in mine
    assert "Sunday 10 May All day: Weekly Monday 11 May 00:00 to 10:00: Weekly" in mine


async def test_a_member_without_schedule_view_sees_the_list_and_their_own_shifts(
        api: Api, owner: Person, alice_browser: Browser, team: dict[str, Any]) -> None:
    """The built-in member role has no schedule_view: /schedule/self would refuse Alice, the
    list (open to every member) does not, and its timelines hold her shifts. Her profile
    names no zone: the account's is used."""
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == owner.account_id)
                           .values(time_zone="Europe/Berlin"))
    page = await alice_browser.get(PAGE)
    assert page.status_code == 200
    assert "Times are in Europe/Berlin (CEST)." in text(page.text)
    # Tuesday 00:00 in Shanghai is Monday 18:00 in Berlin (summer time).
    assert "Now Alice (you) until Mon 13 Apr, 18:00" in section(page.text, "h-schedules")
    assert days(page.text)[:3] == ["2026-04-13", "2026-04-15", "2026-04-16"]
    assert ("Monday 13 April Now to 18:00: Primary "
            "Wednesday 15 April 18:00 to 24:00: Primary") in section(page.text, "h-mine")


async def test_rules_show_whom_each_step_pages_now(
        api: Api, console: Browser, owner: Person, team: dict[str, Any]) -> None:
    checkout = await make_channel(api, owner, "Checkout")
    rule_id = await create_rule(api, owner, rule_body(checkout, [
        layer(schedule_to_role_ids={str(team["schedule_id"]): []},
              person_ids=[team["bob"].person_id], emails=["sre@example.com"]),
        layer(person_ids=[owner.person_id])], rule_name="Business hours"))
    page = (await console.get(PAGE)).text
    rules = section(page, "h-rules")
    assert ("Business hours Channel: Checkout Step 1 Person: Bob Schedule: Primary: Alice "
            "E-mail: sre@example.com Step 2 Person: Acme Owner (you)") in rules
    assert f'href="/console/channels/{checkout}/escalation-rules/{rule_id}"' in page


async def test_a_member_sees_rules_of_the_channels_they_see_only(
        api: Api, owner: Person, team: dict[str, Any], alice_browser: Browser) -> None:
    public = await make_channel(api, owner, "Public")
    hidden = int((await ok(api, "/channel/create", {"channel_name": "Payroll",
                                                    "is_private": True}, owner.key))[
        "channel_id"])
    await create_rule(api, owner, rule_body(public, [layer(person_ids=[owner.person_id])],
                                            rule_name="Open rule"))
    await create_rule(api, owner, rule_body(hidden, [layer(person_ids=[owner.person_id])],
                                            rule_name="Secret rule"))
    rules = section((await alice_browser.get(PAGE)).text, "h-rules")
    assert "Open rule" in rules
    assert "Secret rule" not in rules
    assert "Payroll" not in rules


async def test_a_member_without_channel_view_gets_the_page_without_rules(
        api: Api, owner: Person, team: dict[str, Any]) -> None:
    nobody = await new_member(api, owner, name="Guest", builtin=None)
    b = await signed_in(api, nobody)
    try:
        page = await b.get(PAGE)
    finally:
        await b.aclose()
    assert page.status_code == 200
    assert "does not let you see channels" in section(page.text, "h-rules")
    assert "Primary" in section(page.text, "h-schedules")
    assert "You have no shifts in the next 4 weeks." in page.text


async def test_another_account_s_schedules_and_rules_never_appear(
        api: Api, console: Browser, other_owner: Person, team: dict[str, Any]) -> None:
    await ok(api, "/schedule/create", {
        "schedule_name": "Globex nights", "time_zone": "UTC",
        "layers": [rotation([other_owner.person_id], enable=MONDAY_SHANGHAI)]},
        other_owner.key)
    channel = await make_channel(api, other_owner, "Globex channel")
    await create_rule(api, other_owner, rule_body(
        channel, [layer(person_ids=[other_owner.person_id])], rule_name="Globex rule"))
    page = (await console.get(PAGE)).text
    for name in ("Globex nights", "Globex channel", "Globex rule", "Globex Owner"):
        assert name not in page


async def test_hostile_names_are_escaped(api: Api, console: Browser, owner: Person) -> None:
    evil = await new_member(api, owner, name="<script>alert(1)</script>")
    await ok(api, "/schedule/create", {
        "schedule_name": '<img src=x onerror="alert(2)">', "time_zone": "UTC",
        "layers": [rotation([evil.person_id], enable=MONDAY_SHANGHAI)]}, owner.key)
    channel = await make_channel(api, owner, "<b>chan</b>")
    await create_rule(api, owner, rule_body(channel, [layer(person_ids=[evil.person_id])],
                                            rule_name="<i>rule</i>"))
    page = (await console.get(PAGE)).text
    for raw in ("<script>alert(1)", "<img src=x", "<b>chan", "<i>rule"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in page


# --- the calendar link -----------------------------------------------------------------------


def feed_path(page: str) -> str:
    found = re.search(r'id="feed-url" type="text" value="([^"]+)"', page)
    assert found, page
    return urlsplit(html.unescape(found[1])).path


async def test_the_calendar_link_is_made_shown_once_and_revoked(
        api: Api, console: Browser, team: dict[str, Any]) -> None:
    before = section((await console.get(PAGE)).text, "h-calendar")
    assert "Create my calendar link" in before
    made = await console.post(PAGE + "/calendar")
    assert made.status_code == 200
    path = feed_path(made.text)
    assert path.startswith("/ical/oncall/dlcal_")
    feed = await api.raw("GET", path)
    assert feed.status_code == 200
    assert "SUMMARY:On call: Primary" in feed.text

    after = (await console.get(PAGE)).text
    assert path not in after  # only its hash is kept: the page cannot show it again
    assert "You have had a calendar link since Mon 13 Apr, 11:00" in text(after)

    again = await console.post(PAGE + "/calendar")  # a new link retires the old one
    assert (await api.raw("GET", path)).status_code == 404
    newer = feed_path(again.text)

    revoked = await console.post(PAGE + "/calendar/revoke")
    assert revoked.status_code == 303
    assert revoked.headers["location"] == PAGE
    assert (await api.raw("GET", newer)).status_code == 404
    shown = (await console.get(PAGE)).text
    assert "Your calendar link is revoked" in shown
    assert "Create my calendar link" in section(shown, "h-calendar")


async def test_calendar_forms_are_refused_without_the_csrf_token(
        api: Api, console: Browser, owner: Person) -> None:
    forged = await console.post(PAGE + "/calendar", csrf=False)
    assert forged.status_code == 403
    assert "feed-url" not in forged.text
    info = await ok(api, "/schedule/feed/info", {}, owner.key)
    assert info["enabled"] is False

    path = feed_path((await console.post(PAGE + "/calendar")).text)
    assert (await console.post(PAGE + "/calendar/revoke", csrf=False)).status_code == 403
    assert (await api.raw("GET", path)).status_code == 200


async def test_calendar_link_writes_are_audited_as_the_session(
        api: Api, console: Browser, owner: Person) -> None:
    await console.post(PAGE + "/calendar")
    await console.post(PAGE + "/calendar/revoke")
    async with api.runtime.db.transaction(write=False) as conn:
        rows = list(await conn.execute(
            select(audit_log.c.operation, audit_log.c.credential)
            .where(audit_log.c.member_id == owner.person_id,
                   audit_log.c.operation.like("schedule.feed.%"))
            .order_by(audit_log.c.id)))
    assert [tuple(r) for r in rows] == [("schedule.feed.create", "session"),
                                        ("schedule.feed.revoke", "session")]
