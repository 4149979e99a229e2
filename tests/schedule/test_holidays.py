"""Schedules that follow a service calendar: the round trip of `cal_id` / `holiday_mode`,
validation, the timeline, who is on call, the iCalendar feed and the calendar's delete."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import icalendar
import pytest

from dutyline.api.actor import Actor
from dutyline.config import Settings
from dutyline.schedule import oncall, service
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.platform.calendar_support import add_event, make_calendar
from tests.schedule.helpers import DAY, MONDAY_SHANGHAI, ok, override, rotation

pytestmark = pytest.mark.anyio
CLOCK = FakeClock(MONDAY_SHANGHAI + 3600)
TUESDAY = MONDAY_SHANGHAI + DAY  # 2026-04-14, the holiday of these tests
EVERY_DAY = [0, 1, 2, 3, 4, 5, 6]


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    CLOCK.set(MONDAY_SHANGHAI + 3600)
    oncall.CACHE.clear()
    async with make_api(settings, clock=CLOCK) as client:
        yield client


async def holidays(api: Api, owner: Person, *, with_tuesday: bool = True) -> str:
    """A calendar that works every day but, when asked, Tuesday 2026-04-14."""
    cal_id = await make_calendar(api, owner, "Holidays", workdays=EVERY_DAY,
                                 timezone="Asia/Shanghai")
    if with_tuesday:
        await add_event(api, owner, cal_id, "2026-04-14", "2026-04-15", summary="Holiday")
    return cal_id


async def three(api: Api, owner: Person) -> list[Person]:
    return [await new_member(api, owner, name=n) for n in ("Ann", "Bob", "Cat")]


def daily(people: list[Person], cal_id: str, **more: Any) -> dict[str, Any]:
    return rotation(*[[p.person_id] for p in people], enable=MONDAY_SHANGHAI, cal_id=cal_id,
                    **more)


async def create(api: Api, owner: Person, layers: list[dict[str, Any]]) -> int:
    reply = await ok(api, "/schedule/create", {
        "schedule_name": "Payments", "time_zone": "Asia/Shanghai", "layers": layers}, owner.key)
    return int(reply["schedule_id"])


async def who(api: Api, owner: Person, schedule_id: int, at_s: int) -> list[int]:
    async with api.runtime.db.connect() as conn:
        found = await service.oncall_for_schedules(
            conn, Actor.system(owner.account_id, CLOCK),
            schedule_role_ids={schedule_id: ()}, at_s=at_s)
    return found[schedule_id]


def final(item: dict[str, Any]) -> list[tuple[int, str]]:
    return [((s["start"] - MONDAY_SHANGHAI) // DAY, s["group"]["group_name"])
            for s in item["final_schedule"]["schedules"]]


async def test_the_fields_round_trip_through_create_update_info_and_list(
        api: Api, owner: Person) -> None:
    cal_id = await holidays(api, owner)
    people = await three(api, owner)
    sid = await create(api, owner, [daily(people, cal_id)])
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    assert (info["layers"][0]["cal_id"], info["layers"][0]["holiday_mode"]) == (cal_id, "next")
    listed = await ok(api, "/schedule/list", {}, owner.key)
    assert [(la["cal_id"], la["holiday_mode"]) for la in listed["items"][0]["layers"]] == [
        (cal_id, "next")]
    # An update that leaves the layers out keeps them; one that sends them replaces them.
    await ok(api, "/schedule/update", {"schedule_id": sid, "description": "d"}, owner.key)
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    assert info["layers"][0]["cal_id"] == cal_id
    await ok(api, "/schedule/update", {"schedule_id": sid, "layers": [
        daily(people, cal_id, holiday_mode="off")]}, owner.key)
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    assert info["layers"][0]["holiday_mode"] == "off"
    await ok(api, "/schedule/update", {"schedule_id": sid, "layers": [
        rotation([people[0].person_id], enable=MONDAY_SHANGHAI)]}, owner.key)
    infos = await ok(api, "/schedule/infos", {"schedule_ids": [sid]}, owner.key)
    assert (infos["items"][0]["layers"][0]["cal_id"],
            infos["items"][0]["layers"][0]["holiday_mode"]) == ("", "")


async def test_a_rotation_across_a_holiday_hands_the_day_to_the_next_person(
        api: Api, owner: Person) -> None:
    cal_id = await holidays(api, owner)
    people = await three(api, owner)
    sid = await create(api, owner, [daily(people, cal_id)])
    window = {"start": MONDAY_SHANGHAI, "end": MONDAY_SHANGHAI + 5 * DAY}
    info = await ok(api, "/schedule/info", {"schedule_id": sid, **window}, owner.key)
    # Bob's Tuesday goes to Cat, whose own Wednesday follows; Thursday is Ann's as ever.
    assert final(info) == [(0, "A"), (1, "C"), (3, "A"), (4, "B")]
    assert info["schedule_layers"][0]["schedules"][1]["end"] == MONDAY_SHANGHAI + 3 * DAY
    preview = await ok(api, "/schedule/preview", {
        "time_zone": "Asia/Shanghai", "layers": [daily(people, cal_id)], **window}, owner.key)
    assert final(preview) == final(info)
    # "off": the layer covers nothing on the holiday.
    preview = await ok(api, "/schedule/preview", {
        "time_zone": "Asia/Shanghai", "layers": [daily(people, cal_id, holiday_mode="off")],
        **window}, owner.key)
    assert final(preview) == [(0, "A"), (2, "C"), (3, "A"), (4, "B")]


async def test_on_call_now_on_a_holiday_follows_the_calendar_as_it_changes(
        api: Api, owner: Person) -> None:
    cal_id = await holidays(api, owner, with_tuesday=False)
    ann, bob, cat = await three(api, owner)
    sid = await create(api, owner, [daily([ann, bob, cat], cal_id)])
    noon = TUESDAY + 12 * 3600
    assert await who(api, owner, sid, noon) == [bob.person_id]
    event_id = await add_event(api, owner, cal_id, "2026-04-14", "2026-04-15")
    # The compiled schedule in memory is rebuilt: the calendar's write bumped its revision.
    assert await who(api, owner, sid, noon) == [cat.person_id]
    assert await who(api, owner, sid, noon + DAY) == [cat.person_id]
    assert await who(api, owner, sid, noon - DAY) == [ann.person_id]
    CLOCK.set(noon)
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    assert info["cur_oncall"]["group"]["members"][0]["person_ids"] == [cat.person_id]
    await ok(api, "/calendar/event/delete", {"cal_id": cal_id, "event_id": event_id},
             owner.key)
    assert await who(api, owner, sid, noon) == [bob.person_id]
    # A calendar update (its working weekdays) counts too: Tuesday off by its weekday.
    await ok(api, "/calendar/update", {"cal_id": cal_id, "workdays": [0, 1, 3, 4, 5, 6]},
             owner.key)
    assert await who(api, owner, sid, noon) == [cat.person_id]


async def test_the_feed_of_the_skipped_person_leaves_the_holiday_out(
        api: Api, owner: Person) -> None:
    cal_id = await holidays(api, owner)
    ann, bob, cat = await three(api, owner)
    await create(api, owner, [daily([ann, bob, cat], cal_id)])

    async def starts(person: Person) -> list[tuple[int, int]]:
        url = (await ok(api, "/schedule/feed/create", {}, person.key))["feed_url"]
        body = (await api.raw("GET", urlsplit(url).path)).content
        events = icalendar.Calendar.from_ical(body).walk("VEVENT")
        return sorted(((int(e.decoded("DTSTART").timestamp()) - MONDAY_SHANGHAI) // DAY,
                       (int(e.decoded("DTEND").timestamp()) - MONDAY_SHANGHAI) // DAY)
                      for e in events)[:2]

    assert await starts(bob) == [(4, 5), (7, 8)]  # not Tuesday (day 1)
    assert await starts(cat) == [(1, 3), (5, 6)]  # Tuesday and her own Wednesday


@pytest.mark.parametrize(("change", "field"), [
    ({"cal_id": "cal.unknown"}, "layers[0].cal_id"),
    ({"holiday_mode": "skip"}, "layers[0].holiday_mode"),
    ({"cal_id": "", "holiday_mode": "next"}, "layers[0].cal_id"),
])
async def test_bad_calendar_fields_are_400_naming_the_field(
        api: Api, owner: Person, change: dict[str, Any], field: str) -> None:
    cal_id = await holidays(api, owner)
    layer = {**rotation([owner.person_id], enable=MONDAY_SHANGHAI, cal_id=cal_id), **change}
    for path, body in (("/schedule/create", {"schedule_name": "S", "layers": [layer]}),
                       ("/schedule/preview", {"layers": [layer], "start": MONDAY_SHANGHAI,
                                              "end": MONDAY_SHANGHAI + DAY})):
        reply = await api.call(path, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
        assert field in reply.message


async def test_an_override_layer_follows_no_calendar(api: Api, owner: Person) -> None:
    cal_id = await holidays(api, owner)
    layer = {**override([owner.person_id], MONDAY_SHANGHAI, MONDAY_SHANGHAI + DAY),
             "cal_id": cal_id}
    reply = await api.call("/schedule/create", {"schedule_name": "S", "layers": [layer]},
                           key=owner.key)
    assert reply.code == "InvalidParameter" and "layers[0].cal_id" in reply.message


async def test_another_account_s_calendar_is_refused(api: Api, owner: Person,
                                                     other_owner: Person) -> None:
    theirs = await holidays(api, other_owner)
    reply = await api.call("/schedule/create", {"schedule_name": "S", "layers": [
        rotation([owner.person_id], enable=MONDAY_SHANGHAI, cal_id=theirs)]}, key=owner.key)
    assert reply.code == "InvalidParameter" and "layers[0].cal_id" in reply.message
    sid = await create(api, owner, [rotation([owner.person_id], enable=MONDAY_SHANGHAI)])
    reply = await api.call("/schedule/update", {"schedule_id": sid, "layers": [
        rotation([owner.person_id], enable=MONDAY_SHANGHAI, cal_id=theirs)]}, key=owner.key)
    assert reply.code == "InvalidParameter" and "layers[0].cal_id" in reply.message
    # Their calendar's writes leave this account's schedules alone.
    await add_event(api, other_owner, theirs, "2026-05-01", "2026-05-02")


async def test_a_calendar_a_schedule_follows_cannot_be_deleted(api: Api, owner: Person) -> None:
    cal_id = await holidays(api, owner)
    people = await three(api, owner)
    sid = await create(api, owner, [daily(people, cal_id)])
    refused = await api.call("/calendar/delete", {"cal_id": cal_id}, key=owner.key)
    assert (refused.status, refused.code) == (400, "ReferenceExist"), refused.body
    assert f"schedule Payments ({sid})" in refused.message
    await ok(api, "/schedule/update", {"schedule_id": sid, "layers": [
        rotation([people[0].person_id], enable=MONDAY_SHANGHAI)]}, owner.key)
    await ok(api, "/calendar/delete", {"cal_id": cal_id}, owner.key)
    info = await ok(api, "/calendar/list", {}, owner.key)
    assert cal_id not in [c["cal_id"] for c in info["items"]]
