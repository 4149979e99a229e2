"""Who is on call: the service functions the escalation engine calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dutyline.api.actor import Actor
from dutyline.config import Settings
from dutyline.schedule import oncall, service
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.schedule.helpers import DAY, ok, override, rotation

pytestmark = pytest.mark.anyio
MONDAY_BERLIN = 1774220400  # Monday 2026-03-23 00:00 in Europe/Berlin (CET)
CLOCK = FakeClock(MONDAY_BERLIN)


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    CLOCK.set(MONDAY_BERLIN)
    oncall.CACHE.clear()
    async with make_api(settings, clock=CLOCK) as client:
        yield client


async def who(api: Api, account: Person, schedule_id: int, at_s: int,
              role_ids: list[int] | None = None) -> list[int] | None:
    """Who is on call in one schedule, as the escalation engine asks (None: no such schedule
    of the account's)."""
    async with api.runtime.db.connect() as conn:
        found = await service.oncall_for_schedules(
            conn, Actor.system(account.account_id, CLOCK),
            schedule_role_ids={schedule_id: role_ids or ()}, at_s=at_s)
    return found.get(schedule_id)


async def create(api: Api, owner: Person, layers: list[dict[str, Any]]) -> int:
    reply = await ok(api, "/schedule/create", {"schedule_name": "S", "time_zone": "Europe/Berlin",
                                               "layers": layers}, owner.key)
    return int(reply["schedule_id"])


async def test_rotation_with_roles_across_the_dst_change(api: Api, owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    b = await new_member(api, owner, name="B")
    c = await new_member(api, owner, name="C")
    layer = rotation([], [], enable=MONDAY_BERLIN, handoff=9 * 3600)
    layer["groups"][0]["members"] = [{"role_id": 1, "person_ids": [a.person_id]},
                                     {"role_id": 2, "person_ids": [c.person_id]}]
    layer["groups"][1]["members"] = [{"role_id": 1, "person_ids": [b.person_id]}]
    sid = await create(api, owner, [layer])
    # Mon 09:00 .. Tue 09:00 group A; Berlin moves to summer time on Sunday 03-29.
    assert await who(api, owner, sid, MONDAY_BERLIN + 10 * 3600) == [a.person_id, c.person_id]
    assert await who(api, owner, sid, MONDAY_BERLIN + 10 * 3600, [1]) == [a.person_id]
    assert await who(api, owner, sid, MONDAY_BERLIN + 10 * 3600, [2]) == [c.person_id]
    assert await who(api, owner, sid, MONDAY_BERLIN + 10 * 3600, [3]) == []
    assert await who(api, owner, sid, MONDAY_BERLIN + DAY + 10 * 3600) == [b.person_id]
    # Before the first handoff the first group holds the layer (it started at midnight).
    assert await who(api, owner, sid, MONDAY_BERLIN + 3600) == [a.person_id, c.person_id]
    # Cycles run 09:00 to 09:00 local (the first one from midnight Monday): the one from
    # Sunday 03-29 09:00 CEST is the 7th (A's), the next starts Monday 09:00 CEST, B's.
    monday_next = MONDAY_BERLIN + 7 * DAY - 3600  # local midnight after the change
    assert await who(api, owner, sid, monday_next + 8 * 3600 + 1800) == [a.person_id,
                                                                         c.person_id]
    assert await who(api, owner, sid, monday_next + 9 * 3600 - 1) == [a.person_id, c.person_id]
    assert await who(api, owner, sid, monday_next + 9 * 3600) == [b.person_id]
    assert await who(api, owner, sid, MONDAY_BERLIN - 1) == []  # before the layer starts


async def test_override_wins_and_nobody_is_an_empty_list(api: Api, owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    cover = await new_member(api, owner, name="Cover")
    office = rotation([a.person_id], enable=MONDAY_BERLIN, restrict_mode=1,
                      restrict_periods=[{"restrict_start": 9 * 3600, "restrict_end": 17 * 3600}])
    sid = await create(api, owner, [office, override([cover.person_id],
                                                     MONDAY_BERLIN + 12 * 3600,
                                                     MONDAY_BERLIN + 13 * 3600)])
    assert await who(api, owner, sid, MONDAY_BERLIN + 11 * 3600) == [a.person_id]
    assert await who(api, owner, sid, MONDAY_BERLIN + 12 * 3600) == [cover.person_id]
    assert await who(api, owner, sid, MONDAY_BERLIN + 20 * 3600) == []


async def test_removed_members_are_not_on_call(api: Api, owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    b = await new_member(api, owner, name="B")
    sid = await create(api, owner, [rotation([a.person_id, b.person_id], enable=MONDAY_BERLIN)])
    assert await who(api, owner, sid, MONDAY_BERLIN + 60) == [a.person_id, b.person_id]
    await ok(api, "/member/delete", {"member_id": a.person_id}, owner.key)
    assert await who(api, owner, sid, MONDAY_BERLIN + 60) == [b.person_id]


async def test_unknown_and_other_accounts_schedules_answer_nobody(
        api: Api, owner: Person, other_owner: Person) -> None:
    sid = await create(api, owner, [rotation([owner.person_id], enable=MONDAY_BERLIN)])
    assert await who(api, other_owner, sid, MONDAY_BERLIN) is None
    assert await who(api, owner, 4242, MONDAY_BERLIN) is None


async def test_batch_form_answers_each_schedule_and_leaves_out_unknown_ones(
        api: Api, owner: Person, other_owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    b = await new_member(api, owner, name="B")
    one = await create(api, owner, [rotation([a.person_id], enable=MONDAY_BERLIN)])
    two = await create(api, owner, [rotation([b.person_id], [a.person_id],
                                             enable=MONDAY_BERLIN)])
    theirs = await create(api, other_owner, [rotation([other_owner.person_id],
                                                      enable=MONDAY_BERLIN)])
    async with api.runtime.db.connect() as conn:
        found = await service.oncall_for_schedules(
            conn, Actor.system(owner.account_id, CLOCK),
            schedule_role_ids={one: [], two: [0], theirs: [], 4242: []},
            at_s=MONDAY_BERLIN + DAY + 60)
    assert found == {one: [a.person_id], two: [a.person_id]}


async def test_an_update_takes_effect_at_once_even_within_the_same_second(
        api: Api, owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    b = await new_member(api, owner, name="B")
    sid = await create(api, owner, [rotation([a.person_id], enable=MONDAY_BERLIN)])
    assert await who(api, owner, sid, MONDAY_BERLIN + 60) == [a.person_id]
    assert len(oncall.CACHE) == 1
    await ok(api, "/schedule/update", {"schedule_id": sid, "layers": [
        rotation([b.person_id], enable=MONDAY_BERLIN)]}, owner.key)
    assert await who(api, owner, sid, MONDAY_BERLIN + 60) == [b.person_id]
    await ok(api, "/schedule/delete", {"schedule_ids": [sid]}, owner.key)
    assert await who(api, owner, sid, MONDAY_BERLIN + 60) is None


async def test_the_cached_window_moves_with_the_instants_asked(api: Api, owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    b = await new_member(api, owner, name="B")
    sid = await create(api, owner, [rotation([a.person_id], [b.person_id], enable=MONDAY_BERLIN,
                                             unit="week")])
    expected = [a.person_id, b.person_id]
    for week in (0, 1, 30, 2, 101, 0):
        assert await who(api, owner, sid, MONDAY_BERLIN + week * 7 * DAY + 3 * DAY) == [
            expected[week % 2]]
