"""Escalation rules whose time windows name a service calendar: the first rule (by priority)
whose window holds takes the incident, and a calendar window holds on the calendar's
working days or days off, read in the account's time zone."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, update

from dutyline.db.tables.notify import notify_delivery
from dutyline.db.tables.platform import account
from tests.dispatch.support import (
    create_rule,
    layer,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.platform.calendar_support import add_event, make_calendar

pytestmark = pytest.mark.anyio

# The clock (tests/fixtures/paging.py): 2023-11-14 22:13:20 UTC, a Tuesday; in Tokyo
# Wednesday the 15th, 07:13.


async def rules_paged(api: Api, channel_id: int) -> list[str]:
    """The rule that paged each delivery of the channel's incidents, oldest first."""
    await run_jobs(api)
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(notify_delivery.c.rule_name).order_by(
            notify_delivery.c.created_at, notify_delivery.c.delivery_id))).all()
    return [r.rule_name for r in rows]


async def setup(api: Api, who: Person, cal_id: str, **window: Any) -> tuple[int, str]:
    channel_id = await make_channel(api, who)
    await create_rule(api, who, rule_body(
        channel_id, [layer(emails=["holiday-desk@example.com"])], rule_name="Holiday desk",
        priority=0, time_filters=[{"start": "00:00", "end": "24:00", "cal_id": cal_id,
                                   **window}]))
    await create_rule(api, who, rule_body(
        channel_id, [layer(emails=["office@example.com"])], rule_name="Office", priority=1))
    return channel_id, await make_integration(api, who, channel_id)


async def test_a_holiday_rule_takes_incidents_on_holidays_only(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    cal_id = await make_calendar(papi, owner)
    channel_id, key = await setup(papi, owner, cal_id, is_off=True)
    assert (await push(papi, key, alert_key="a")).status == 200
    assert await rules_paged(papi, channel_id) == ["Office"]  # Tuesday: a working day

    await add_event(papi, owner, cal_id, "2023-11-14", "2023-11-15")
    clock.advance(60)
    assert (await push(papi, key, alert_key="b", title="another")).status == 200
    assert await rules_paged(papi, channel_id) == ["Office", "Holiday desk"]

    clock.advance(4 * 86_400)  # Saturday: off by its weekday
    assert (await push(papi, key, alert_key="c", title="weekend")).status == 200
    assert (await rules_paged(papi, channel_id))[-1] == "Holiday desk"


async def test_a_working_day_window_in_the_account_s_zone(papi: Api, owner: Person,
                                                         clock: FakeClock) -> None:
    cal_id = await make_calendar(papi, owner)
    await add_event(papi, owner, cal_id, "2023-11-15", "2023-11-16")  # Wednesday, a holiday
    channel_id, key = await setup(papi, owner, cal_id, is_off=False)
    assert (await push(papi, key, alert_key="a")).status == 200
    # In UTC it is Tuesday, worked: the working-day rule takes it.
    assert await rules_paged(papi, channel_id) == ["Holiday desk"]
    async with papi.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == owner.account_id)
                           .values(time_zone="Asia/Tokyo"))
    clock.advance(60)
    assert (await push(papi, key, alert_key="b", title="another")).status == 200
    # In Tokyo it is the holiday: the working-day rule does not hold, the next one does.
    assert await rules_paged(papi, channel_id) == ["Holiday desk", "Office"]
