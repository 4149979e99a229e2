"""Paging follows a schedule layer's service calendar: on a holiday the escalation rule pages
the group after the one whose turn it is."""

from __future__ import annotations

import pytest

from tests.dispatch.support import (
    create_rule,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.paging import NOW
from tests.platform.calendar_support import add_event, make_calendar, ok

pytestmark = pytest.mark.anyio
DAY = 86_400
MONDAY = NOW - NOW % DAY - DAY  # 2023-11-13 00:00 UTC; NOW is Tuesday 2023-11-14 22:13


@pytest.mark.parametrize("holiday", [False, True])
async def test_a_schedule_s_holiday_pages_the_next_person(papi: Api, owner: Person,
                                                          holiday: bool) -> None:
    ann, bob, cat = [await new_member(papi, owner, name=n, email=f"{n}@example.com")
                     for n in ("ann", "bob", "cat")]
    cal_id = await make_calendar(papi, owner, "Holidays", workdays=[0, 1, 2, 3, 4, 5, 6])
    if holiday:
        await add_event(papi, owner, cal_id, "2023-11-14", "2023-11-15")
    created = await ok(papi, "/schedule/create", {
        "schedule_name": "Primary", "time_zone": "UTC", "layers": [{
            "layer_name": "Daily", "rotation_unit": "day", "enable_time": MONDAY,
            "cal_id": cal_id, "groups": [
                {"group_name": name, "members": [{"person_ids": [p.person_id]}]}
                for name, p in (("Ann", ann), ("Bob", bob), ("Cat", cat))]}]}, owner.key)
    schedule_id = created["schedule_id"]
    channel_id = await make_channel(papi, owner)
    await create_rule(papi, owner, rule_body(channel_id, [
        {"target": {"schedule_to_role_ids": {str(schedule_id): []},
                    "by": {"follow_preference": True}}}]))
    key = await make_integration(papi, owner, channel_id)
    assert (await push(papi, key, alert_key="h")).status == 200
    await run_jobs(papi)
    [incident] = (await ok(papi, "/incident/list", {"start_time": NOW - 60,
                                                    "end_time": NOW + 60}, owner.key))["items"]
    entries = (await ok(papi, "/incident/feed", {"incident_id": incident["incident_id"],
                                                 "limit": 100}, owner.key))["items"]
    assign = next(e for e in entries if e["type"] == "i_assign")
    # Tuesday is Bob's turn; on a holiday it is Cat's.
    assert assign["detail"]["to"] == [(cat if holiday else bob).person_id]
