"""Members removed from the account are never on call: the schedule reads' now/next
(`cur_oncall` / `next_oncall` of info, infos, list and self) agree with what the escalation
engine would page, while the timelines keep showing the layers as written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dutyline.api.actor import Actor
from dutyline.config import Settings
from dutyline.schedule import oncall, service
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.schedule.helpers import DAY, MONDAY_SHANGHAI, ok, rotation

pytestmark = pytest.mark.anyio
NOW = MONDAY_SHANGHAI + 10 * 3600  # Monday 10:00 in Shanghai


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    oncall.CACHE.clear()
    async with make_api(settings, clock=FakeClock(NOW)) as client:
        yield client


def who(held: dict[str, Any] | None) -> tuple[int, list[tuple[int, list[int]]]] | None:
    """(start, [(role, persons)]) of a cur_oncall / next_oncall."""
    if held is None:
        return None
    return held["start"], [(m["role_id"], m["person_ids"]) for m in held["group"]["members"]]


async def reads(api: Api, owner: Person, sid: int, *,
                validate: bool = True) -> list[dict[str, Any]]:
    """The schedule as /schedule/info, /schedule/infos, /schedule/list and /schedule/self
    return it, checked against the reference's schemas (whose $ref does not admit the null
    its description gives for nobody on call: `validate=False` then)."""
    found = []
    for path, body in (("/schedule/info", {"schedule_id": sid}),
                       ("/schedule/infos", {"schedule_ids": [sid]}),
                       ("/schedule/list", {}), ("/schedule/self", {})):
        reply = await api.raw("POST", path, params={"app_key": owner.key}, json=body)
        assert reply.status_code == 200, reply.text
        data = (check(path, reply) if validate else reply.json())["data"]
        found.append(data if path == "/schedule/info" else data["items"][0])
    return found


async def engine_pages(api: Api, owner: Person, sid: int, at_s: int) -> list[int]:
    async with api.runtime.db.connect() as conn:
        found = await service.oncall_for_schedules(
            conn, Actor.system(owner.account_id, api.runtime.clock),
            schedule_role_ids={sid: ()}, at_s=at_s)
    return found[sid]


async def test_removed_members_are_left_out_of_now_and_next(api: Api, owner: Person) -> None:
    alice = await new_member(api, owner, name="Alice")
    bob = await new_member(api, owner, name="Bob")
    gone = await new_member(api, owner, name="Gone")
    # Monday: Alice (role 1) with Bob (role 2); Tuesday: Gone alone; Wednesday: the owner.
    layer = rotation([], [gone.person_id], [owner.person_id], enable=MONDAY_SHANGHAI)
    layer["groups"][0]["members"] = [{"role_id": 1, "person_ids": [alice.person_id]},
                                     {"role_id": 2, "person_ids": [bob.person_id]}]
    sid = int((await ok(api, "/schedule/create", {
        "schedule_name": "Primary", "time_zone": "Asia/Shanghai", "layers": [layer]},
        owner.key))["schedule_id"])
    tuesday, wednesday = MONDAY_SHANGHAI + DAY, MONDAY_SHANGHAI + 2 * DAY
    for item in await reads(api, owner, sid):
        assert who(item["cur_oncall"]) == (NOW, [(1, [alice.person_id]), (2, [bob.person_id])])
        assert who(item["next_oncall"]) == (tuesday, [(0, [gone.person_id])])

    for person in (alice, gone):
        await ok(api, "/member/delete", {"member_id": person.person_id}, owner.key)
    # Now: Bob alone; next: Tuesday is nobody's, so the owner's Wednesday, as the engine sees.
    assert await engine_pages(api, owner, sid, NOW) == [bob.person_id]
    assert await engine_pages(api, owner, sid, tuesday + 3600) == []
    for item in await reads(api, owner, sid):
        assert who(item["cur_oncall"]) == (NOW, [(2, [bob.person_id])])
        assert who(item["next_oncall"]) == (wednesday, [(0, [owner.person_id])])
    # The definition itself is unchanged: the layer still names them.
    info = await ok(api, "/schedule/info", {"schedule_id": sid, "start": MONDAY_SHANGHAI,
                                            "end": MONDAY_SHANGHAI + 3 * DAY}, owner.key)
    assert [s["group"]["members"] for s in info["final_schedule"]["schedules"]] == [
        layer["groups"][0]["members"], [{"role_id": 0, "person_ids": [gone.person_id]}],
        [{"role_id": 0, "person_ids": [owner.person_id]}]]

    # On Tuesday nobody live holds the shift: nobody is on call now (null, as the reference
    # says of nobody), and the owner is next.
    api.runtime.clock.advance(DAY)
    for item in await reads(api, owner, sid, validate=False):
        assert item["cur_oncall"] is None
        assert who(item["next_oncall"]) == (wednesday, [(0, [owner.person_id])])
