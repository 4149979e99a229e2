"""The per-person iCalendar feed: secret URL, rotation, revocation, RFC 5545 output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import icalendar
import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.schedule import schedule_feed
from dutyline.schedule import ical
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.schedule.helpers import DAY, MONDAY_SHANGHAI, ok, override, rotation

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(MONDAY_SHANGHAI + 3600)) as client:
        yield client


async def fetch(api: Api, url: str) -> tuple[int, str, bytes]:
    response = await api.raw("GET", urlsplit(url).path)
    return response.status_code, response.headers.get("content-type", ""), response.content


async def test_feed_lists_the_persons_shifts_as_rfc5545(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    await ok(api, "/schedule/create", {
        "schedule_name": "Payments, primary; EU", "time_zone": "Asia/Shanghai", "layers": [
            rotation([owner.person_id], [mate.person_id], enable=MONDAY_SHANGHAI),
            override([mate.person_id], MONDAY_SHANGHAI + 3600, MONDAY_SHANGHAI + 7200)]},
        owner.key)
    await ok(api, "/schedule/create", {"schedule_name": "Not hers", "layers": [
        rotation([owner.person_id], enable=MONDAY_SHANGHAI)]}, owner.key)
    created = await ok(api, "/schedule/feed/create", {}, mate.key)
    assert created["feed_url"].startswith("http://127.0.0.1:8080/ical/oncall/dlcal_")
    status, content_type, body = await fetch(api, created["feed_url"])
    assert status == 200 and content_type.startswith("text/calendar")
    # CRLF everywhere, no physical line over 75 octets.
    assert body.endswith(b"\r\n") and b"\n" not in body.replace(b"\r\n", b"")
    assert all(len(line) <= 75 for line in body.split(b"\r\n"))
    cal = icalendar.Calendar.from_ical(body)
    events = list(cal.walk("VEVENT"))
    uids = [str(e["UID"]) for e in events]
    assert len(uids) == len(set(uids))
    starts = sorted(int(e.decoded("DTSTART").timestamp()) for e in events)
    # Her override on Monday 01:00-02:00, then every other day from Tuesday (90 days ahead).
    assert starts[:3] == [MONDAY_SHANGHAI + 3600, MONDAY_SHANGHAI + DAY,
                          MONDAY_SHANGHAI + 3 * DAY]
    assert all(str(e["SUMMARY"]) == "On call: Payments, primary; EU" for e in events)
    assert b"SUMMARY:On call: Payments\\, primary\\; EU" in body
    assert all(e.decoded("DTSTART").utcoffset().total_seconds() == 0 for e in events)
    assert b"DTSTAMP:20260412T170000Z" in body
    assert b"Not hers" not in body


async def test_rotate_and_revoke_kill_the_old_url(api: Api, owner: Person) -> None:
    first = (await ok(api, "/schedule/feed/create", {}, owner.key))["feed_url"]
    assert (await fetch(api, first))[0] == 200
    info = await ok(api, "/schedule/feed/info", {}, owner.key)
    assert info == {"enabled": True, "created_at": MONDAY_SHANGHAI + 3600}
    second = (await ok(api, "/schedule/feed/create", {}, owner.key))["feed_url"]
    assert second != first
    assert (await fetch(api, first))[0] == 404
    assert (await fetch(api, second))[0] == 200
    async with api.runtime.db.connect() as conn:
        stored = (await conn.execute(select(schedule_feed.c.token_hash))).scalars().all()
    token = second.rsplit("/", 1)[1].removesuffix(".ics")
    assert len(stored) == 1 and token not in stored[0]
    await ok(api, "/schedule/feed/revoke", {}, owner.key)
    assert (await fetch(api, second))[0] == 404
    assert (await ok(api, "/schedule/feed/info", {}, owner.key))["enabled"] is False
    again = await api.call("/schedule/feed/revoke", {}, key=owner.key)
    assert (again.status, again.code) == (400, "ResourceNotFound")
    for bad in ("/ical/oncall/nope.ics", "/ical/oncall/dlcal_" + "x" * 43 + ".ics"):
        assert (await api.raw("GET", bad)).status_code == 404


async def test_a_removed_member_has_no_feed(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    url = (await ok(api, "/schedule/feed/create", {}, mate.key))["feed_url"]
    assert (await fetch(api, url))[0] == 200
    await ok(api, "/member/delete", {"member_id": mate.person_id}, owner.key)
    assert (await fetch(api, url))[0] == 404


def test_folding_never_splits_a_utf8_character_and_escapes_text() -> None:
    line = "SUMMARY:" + ical.escape_text("Bereitschaft für Zürich, Köln; 夜间值班\n" * 4)
    folded = ical.fold(line)
    physical = folded.split(b"\r\n")[:-1]
    assert all(len(p) <= 75 for p in physical)
    assert all(p.startswith(b" ") for p in physical[1:])
    for p in physical:
        p.decode("utf-8")  # each physical line is whole UTF-8
    assert b"".join(p[1:] if i else p for i, p in enumerate(physical)).decode() == line
    assert "\\n" in line and "\\," in line and "\\;" in line
