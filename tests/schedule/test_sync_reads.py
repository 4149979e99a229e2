"""The schedule reads served as sync read operations (api/operation.py), and who is on call
asked on the database threads those run on, beside the engine's async lookups."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import pytest

from dutyline.api.actor import Actor
from dutyline.config import Settings
from dutyline.domains import all_routers
from dutyline.schedule import oncall, service
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.schedule.helpers import DAY, MONDAY_SHANGHAI, ok, rotation

pytestmark = pytest.mark.anyio
CLOCK = FakeClock(MONDAY_SHANGHAI)
SYNC_READS = ("/schedule/info", "/schedule/infos", "/schedule/list", "/schedule/preview",
              "/schedule/self", "/schedule/feed/info")


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    CLOCK.set(MONDAY_SHANGHAI)
    oncall.CACHE.clear()
    async with make_api(settings, clock=CLOCK) as client:
        yield client


def test_the_schedule_reads_are_sync_operations() -> None:
    ops = {op.path: op for router in all_routers() for op in router.operations}
    assert all(ops[path].sync for path in SYNC_READS)
    assert not ops["/schedule/feed/create"].sync


async def test_the_sync_lookup_answers_as_the_engine_s_and_shares_its_cache(
        api: Api, owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    b = await new_member(api, owner, name="B")
    reply = await ok(api, "/schedule/create", {
        "schedule_name": "S", "time_zone": "Asia/Shanghai",
        "layers": [rotation([a.person_id], [b.person_id], enable=MONDAY_SHANGHAI)]}, owner.key)
    sid = int(reply["schedule_id"])
    actor = Actor.system(owner.account_id, CLOCK)
    wanted: dict[int, list[int]] = {sid: [], 404: []}
    instants = [MONDAY_SHANGHAI + h * 3600 for h in range(0, 4 * 24, 5)]
    expected = [b.person_id if (at - MONDAY_SHANGHAI) // DAY % 2 else a.person_id
                for at in instants]
    for at, person in zip(instants, expected, strict=True):
        got = await api.runtime.db.run_sync(
            lambda conn, at=at: service.oncall_for_schedules_sync(
                conn, actor, schedule_role_ids=wanted, at_s=at), write=False)
        assert got == {sid: [person]}
        async with api.runtime.db.connect() as conn:
            assert await service.oncall_for_schedules(
                conn, actor, schedule_role_ids=wanted, at_s=at) == got
    assert len(oncall.CACHE) == 1


async def test_a_compiled_schedule_answers_alike_from_many_threads(
        api: Api, owner: Person) -> None:
    a = await new_member(api, owner, name="A")
    b = await new_member(api, owner, name="B")
    reply = await ok(api, "/schedule/create", {
        "schedule_name": "S", "time_zone": "Asia/Shanghai",
        "layers": [rotation([a.person_id], [b.person_id], enable=MONDAY_SHANGHAI)]}, owner.key)
    sid = int(reply["schedule_id"])
    actor = Actor.system(owner.account_id, CLOCK)
    await api.runtime.db.run_sync(lambda conn: service.oncall_for_schedules_sync(
        conn, actor, schedule_role_ids={sid: []}, at_s=MONDAY_SHANGHAI), write=False)
    entry = oncall.CACHE.peek(sid)
    assert entry is not None
    compiled = entry[1]
    # Instants months apart: each moves the window the compiled schedule keeps.
    instants = [MONDAY_SHANGHAI + k * 37 * DAY + 3600 for k in range(12)]
    expected = [[b.person_id if (at - MONDAY_SHANGHAI) // DAY % 2 else a.person_id]
                for at in instants]
    failures: list[str] = []

    def ask(offset: int) -> None:
        for n in range(60):
            i = (n + offset) % len(instants)
            got = compiled.persons_at(instants[i], None)
            if got != expected[i]:
                failures.append(f"{instants[i]}: {got} != {expected[i]}")

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
