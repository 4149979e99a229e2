"""/report/oncall/notifications and /report/oncall/changes: one item per local day, week or
month of the window (zeros included), counted from the delivery records and the change
events, in the account's time zone (Europe/Paris here, summer time from 2026-03-29)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import insert

from dutyline.db.tables.notify import notify_delivery
from dutyline.kit.ids import hex_id
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.change_support import change, push_change, wire_changes
from tests.insight.conftest import START, at, ok, utc

pytestmark = pytest.mark.anyio

NOTIFY = "/report/oncall/notifications"
CHANGES = "/report/oncall/changes"
DAYS = {"start_time": START, "end_time": START + 3 * 86_400}  # Paris: Mar 27 to Mar 30
# The UTC instants Paris days begin: Mar 27 (winter), 28, 29 (summer from 03:00), 30.
DAY_TS = [utc(2026, 3, 26, 23), utc(2026, 3, 27, 23), utc(2026, 3, 28, 23),
          utc(2026, 3, 29, 22)]


async def _deliveries(api: Api, who: Person, rows: list[tuple[str, int, int]]) -> None:
    """(kind, channel_id, created_at) delivery records of `who`'s account."""
    async with api.runtime.db.transaction() as conn:
        await conn.execute(insert(notify_delivery), [
            {"delivery_id": hex_id(), "account_id": who.account_id, "incident_id": hex_id(),
             "channel_id": channel_id, "channel": kind, "person_id": who.person_id,
             "status": "success", "created_at": t, "updated_at": t}
            for kind, channel_id, t in rows])


def _assert_ints(items: list[dict[str, Any]], names: tuple[str, ...]) -> None:
    for item in items:
        assert set(item) == {"ts", *names}
        assert all(type(item[n]) is int for n in ("ts", *names)), item


async def test_notifications_per_local_day(capi: Api, acme: Person) -> None:
    await _deliveries(capi, acme, [
        ("sms", 1, START + 10), ("email", 1, START + 10), ("email", 2, START + 20),
        # 23:30 UTC on Mar 27 is 00:30 on Mar 28 in Paris.
        ("voice", 1, utc(2026, 3, 27, 23, 30)),
        ("voice", 2, utc(2026, 3, 29, 21, 0)),  # 23:00 on Mar 29 in Paris (summer time)
        ("slack", 1, START + 10), ("webhook", 1, START + 10),  # not SMS, voice or e-mail
        ("sms", 1, START - 1), ("sms", 1, START + 3 * 86_400),  # outside the window
    ])
    items = (await ok(capi, NOTIFY, {**DAYS, "step": "day"}, acme)).data["items"]
    _assert_ints(items, ("sms_cnt", "voice_cnt", "email_cnt"))
    assert [(i["ts"], i["sms_cnt"], i["voice_cnt"], i["email_cnt"]) for i in items] == [
        (DAY_TS[0], 1, 0, 2), (DAY_TS[1], 0, 1, 0), (DAY_TS[2], 0, 1, 0), (DAY_TS[3], 0, 0, 0)]
    # Of some channels only.
    only = (await ok(capi, NOTIFY, {**DAYS, "step": "day", "channel_ids": [2]},
                     acme)).data["items"]
    assert [(i["sms_cnt"], i["voice_cnt"], i["email_cnt"]) for i in only] == [
        (0, 0, 1), (0, 0, 0), (0, 1, 0), (0, 0, 0)]
    # The step defaults to day; another time zone moves the buckets.
    assert (await ok(capi, NOTIFY, DAYS, acme)).data["items"] == items
    in_utc = (await ok(capi, NOTIFY, {**DAYS, "time_zone": "UTC"}, acme)).data["items"]
    assert [i["ts"] for i in in_utc] == [START + n * 86_400 for n in range(3)]
    assert [i["voice_cnt"] for i in in_utc] == [1, 0, 1]


async def test_weeks_and_months(capi: Api, acme: Person) -> None:
    await _deliveries(capi, acme, [("sms", 1, START + 10), ("sms", 1, utc(2026, 4, 2, 12))])
    window = {"start_time": START, "end_time": utc(2026, 4, 3)}
    weeks = (await ok(capi, NOTIFY, {**window, "step": "week"}, acme)).data["items"]
    # Paris weeks start on Monday: Mar 23 (winter time) and Mar 30 (summer time).
    assert [(i["ts"], i["sms_cnt"]) for i in weeks] == [
        (utc(2026, 3, 22, 23), 1), (utc(2026, 3, 29, 22), 1)]
    months = (await ok(capi, NOTIFY, {**window, "step": "month"}, acme)).data["items"]
    assert [(i["ts"], i["sms_cnt"]) for i in months] == [
        (utc(2026, 2, 28, 23), 1), (utc(2026, 3, 31, 22), 1)]


async def test_changes_per_local_day(capi: Api, clock: FakeClock, acme: Person) -> None:
    deploys = await wire_changes(capi, acme)
    await push_change(capi, deploys.key, change(key="a", start_time=START + 10))
    await push_change(capi, deploys.key, change(key="b"))  # starts now: START
    # Received on Mar 27, started before the window: an event, no change in the window.
    await push_change(capi, deploys.key, change(key="early", start_time=START - 86_400))
    at(clock, utc(2026, 3, 28, 12))
    await push_change(capi, deploys.key, change(key="a", status="Done"))
    await push_change(capi, deploys.key, change(key="c"))
    items = (await ok(capi, CHANGES, {**DAYS, "step": "day"}, acme)).data["items"]
    _assert_ints(items, ("change_cnt", "change_event_cnt"))
    assert [(i["ts"], i["change_cnt"], i["change_event_cnt"]) for i in items] == [
        (DAY_TS[0], 2, 3), (DAY_TS[1], 1, 2), (DAY_TS[2], 0, 0), (DAY_TS[3], 0, 0)]
    month = (await ok(capi, CHANGES, {**DAYS, "step": "month"}, acme)).data["items"]
    assert [(i["change_cnt"], i["change_event_cnt"]) for i in month] == [(3, 5)]


async def test_reports_count_only_what_the_caller_sees(capi: Api, acme: Person) -> None:
    team = await ok(capi, "/team/upsert", {"team_name": "Core", "person_ids": []}, acme)
    private = await wire_changes(capi, acme, name="Secret", team_id=team.data["team_id"],
                                 is_private=True)
    public = await wire_changes(capi, acme, name="Open")
    await push_change(capi, private.key, change(key="hidden"))
    await push_change(capi, public.key, change(key="shown"))
    await _deliveries(capi, acme, [("sms", private.channel_id, START + 5),
                                   ("sms", public.channel_id, START + 5)])
    outsider = await new_member(capi, acme, name="Otto")  # built-in Member
    first = (await ok(capi, CHANGES, DAYS, outsider)).data["items"][0]
    assert (first["change_cnt"], first["change_event_cnt"]) == (1, 1)
    assert (await ok(capi, NOTIFY, DAYS, outsider)).data["items"][0]["sms_cnt"] == 1
    assert (await ok(capi, NOTIFY, DAYS, acme)).data["items"][0]["sms_cnt"] == 2
    # Another account: zeros, even naming this account's channels.
    globex = await new_account(capi, "Globex")
    for path, body in ((CHANGES, DAYS), (NOTIFY, DAYS),
                       (NOTIFY, {**DAYS, "channel_ids": [public.channel_id]})):
        items = (await ok(capi, path, body, globex)).data["items"]
        assert all(v == 0 for i in items for k, v in i.items() if k != "ts"), items


@pytest.mark.parametrize("path", [NOTIFY, CHANGES])
async def test_reports_need_a_read_permission(capi: Api, acme: Person, path: str) -> None:
    nobody = await new_member(capi, acme, name="Nobody", builtin=None)
    r = await capi.call(path, DAYS, key=nobody.key)
    assert (r.status, r.code) == (403, "AccessDenied")


@pytest.mark.parametrize(("path", "body", "field"), [
    (NOTIFY, {"end_time": START}, "start_time"),
    (NOTIFY, {"start_time": START}, "end_time"),
    (NOTIFY, {"start_time": START, "end_time": START}, "end_time"),
    (NOTIFY, {"start_time": START, "end_time": START + 367 * 86_400}, "end_time"),
    (NOTIFY, {**DAYS, "step": "hour"}, "step"),
    (NOTIFY, {**DAYS, "channel_ids": ["1"]}, "channel_ids"),
    (NOTIFY, {"start_time": START + 0.5, "end_time": START + 86_400}, "start_time"),
    (NOTIFY, {"start_time": START * 1000, "end_time": START * 1000 + 1}, "start_time"),
    (CHANGES, {**DAYS, "step": "year"}, "step"),
    (CHANGES, {**DAYS, "time_zone": "Mars/Olympus"}, "time_zone"),
    (CHANGES, {"start_time": "yesterday", "end_time": START}, "start_time"),
])
async def test_bad_requests_are_400_naming_the_field(
    capi: Api, acme: Person, path: str, body: dict[str, Any], field: str
) -> None:
    r = await capi.call(path, body, key=acme.key)
    assert (r.status, r.code) == (400, "InvalidParameter"), r.body
    assert field in r.message
