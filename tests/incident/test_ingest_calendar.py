"""Silence rules whose recurring windows name a service calendar, at ingest: a rule for
working days silences only on working days, one for days off only on holidays and weekends,
days are the account's (its time zone), and a calendar's events apply from the next alert
without touching the rule."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import update

from dutyline.db.tables.platform import account
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push
from tests.incident.ingest_support import alerts_of
from tests.platform.calendar_support import add_event, make_calendar, ok

pytestmark = pytest.mark.anyio

Make = Callable[..., Awaitable[Wired]]
# The clock: 2023-11-14 22:13:20 UTC, a Tuesday; in Tokyo already Wednesday the 15th, 07:13.
TUESDAY = "2023-11-14"
WEDNESDAY = "2023-11-15"


def window(cal_id: str, *, is_off: bool, start: str = "00:00",
           end: str = "24:00") -> dict[str, Any]:
    return {"start": start, "end": end, "repeat": [], "cal_id": cal_id, "is_off": is_off}


async def silence_rule(api: Api, w: Wired, *windows: dict[str, Any]) -> str:
    created = await ok(api, "/channel/silence/rule/create", {
        "channel_id": w.channel_id, "rule_name": "Quiet days",
        "filters": [[{"key": "labels.team", "oper": "IN", "vals": ["batch"]}]],
        "time_filters": list(windows)}, w.account.key)
    return str(created["rule_id"])


async def fire(api: Api, w: Wired, key: str) -> Any:
    reply = await push(api, w.key, event(f"job {key} failed", key=key,
                                         labels={"team": "batch"}))
    assert reply.status == 200, reply.body
    (row,) = [r for r in await alerts_of(api, w.integration_id) if r.alert_key == key]
    return row


def silenced(row: Any, rule_id: str) -> bool:
    if row.silence_rule_id == rule_id:
        assert row.incident_id is None
        return True
    assert row.incident_id is not None and row.silence_rule_id == ""
    return False


async def set_time_zone(api: Api, account_id: int, name: str) -> None:
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == account_id)
                           .values(time_zone=name))


async def effective(api: Api, w: Wired, rule_id: str) -> bool:
    info = await ok(api, "/channel/silence/rule/info",
                    {"channel_id": w.channel_id, "rule_id": rule_id}, w.account.key)
    return bool(info["is_effective"])


async def test_a_working_day_silence_holds_on_working_days_only(
        capi: Api, channel_with_integration: Make) -> None:
    w = await channel_with_integration()
    cal_id = await make_calendar(capi, w.account)
    rule_id = await silence_rule(capi, w, window(cal_id, is_off=False))
    assert silenced(await fire(capi, w, "a"), rule_id)  # Tuesday: a working day
    assert await effective(capi, w, rule_id)

    # Tuesday becomes a holiday: the next alert is not silenced, the rule is untouched.
    event_id = await add_event(capi, w.account, cal_id, TUESDAY, WEDNESDAY)
    assert not silenced(await fire(capi, w, "b"), rule_id)
    assert not await effective(capi, w, rule_id)

    # The holiday moved to Wednesday (the event updated): Tuesday works again.
    await ok(capi, "/calendar/event/upsert", {
        "cal_id": cal_id, "event_id": event_id, "summary": "Moved", "start_at": WEDNESDAY,
        "end_at": "2023-11-16", "is_off": True}, w.account.key)
    assert silenced(await fire(capi, w, "c"), rule_id)
    # Tuesdays are not worked any more by this calendar.
    await ok(capi, "/calendar/update", {"cal_id": cal_id, "workdays": [1, 3, 4, 5]},
             w.account.key)
    assert not silenced(await fire(capi, w, "d"), rule_id)


async def test_a_days_off_silence_holds_on_holidays_and_weekends(
        capi: Api, clock: FakeClock, channel_with_integration: Make) -> None:
    w = await channel_with_integration()
    cal_id = await make_calendar(capi, w.account)
    rule_id = await silence_rule(capi, w, window(cal_id, is_off=True))
    assert not silenced(await fire(capi, w, "a"), rule_id)  # Tuesday
    await add_event(capi, w.account, cal_id, TUESDAY, WEDNESDAY)
    assert silenced(await fire(capi, w, "b"), rule_id)  # the holiday
    clock.advance(86_400)  # Wednesday: worked
    assert not silenced(await fire(capi, w, "c"), rule_id)
    clock.advance(3 * 86_400)  # Saturday: off by its weekday
    assert silenced(await fire(capi, w, "d"), rule_id)
    # A make-up working Saturday.
    await add_event(capi, w.account, cal_id, "2023-11-18", "2023-11-19", is_off=False)
    assert not silenced(await fire(capi, w, "e"), rule_id)


async def test_days_and_hours_are_the_account_s(capi: Api,
                                               channel_with_integration: Make) -> None:
    w = await channel_with_integration()
    cal_id = await make_calendar(capi, w.account)
    await add_event(capi, w.account, cal_id, WEDNESDAY, "2023-11-16")  # a holiday
    rule_id = await silence_rule(capi, w, window(cal_id, is_off=True))
    # In UTC it is still Tuesday the 14th, a working day.
    assert not silenced(await fire(capi, w, "a"), rule_id)
    # In Tokyo it is the holiday already.
    await set_time_zone(capi, w.account.account_id, "Asia/Tokyo")
    assert silenced(await fire(capi, w, "b"), rule_id)
    assert await effective(capi, w, rule_id)


async def test_hours_on_working_days(capi: Api, clock: FakeClock,
                                     channel_with_integration: Make) -> None:
    """A night window of working days: 22:00 on a working day to 06:00 the next morning,
    which belongs to the evening it started on."""
    w = await channel_with_integration()
    cal_id = await make_calendar(capi, w.account)
    rule_id = await silence_rule(capi, w, window(cal_id, is_off=False, start="22:00",
                                                 end="06:00"))
    assert silenced(await fire(capi, w, "a"), rule_id)  # Tuesday 22:13
    clock.advance(4 * 3600)  # Wednesday 02:13, the night of a working Tuesday
    await add_event(capi, w.account, cal_id, WEDNESDAY, "2023-11-16")
    assert silenced(await fire(capi, w, "b"), rule_id)
    clock.advance(20 * 3600)  # Wednesday 22:13: the holiday's evening
    assert not silenced(await fire(capi, w, "c"), rule_id)
