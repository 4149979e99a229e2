"""The unit of work (api/unit.py), on its own: what it flushes, what it records when it fails,
the rate limit it applies, and the actors it holds."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.ratelimit import MemoryRateLimiter, Window
from dutyline.api.unit import Call, system_actor, unit
from dutyline.db.tables.platform import audit_log
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


@writes("/thing/change", "thing_manage", dangerous=True)
async def _change(conn: Any, actor: Actor, *, thing_id: str, fail: bool = False) -> str:
    actor.note_audit_targets("noted")
    if fail:
        raise errors.ReferenceExist()
    return thing_id


async def _rows(api: Api, request_id: str) -> list[Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(select(audit_log).where(
            audit_log.c.request_id == request_id).order_by(audit_log.c.id)))


async def test_a_unit_flushes_what_its_actors_noted_before_it_commits(
        api: Api, owner: Person) -> None:
    async with unit(api.runtime, system_actor(owner.account_id, api.runtime.clock),
                    write=True, call=Call("u-1", "10.0.0.1", '{"a":1}')) as work:
        await _change(work.conn, work.actor, thing_id="t1")
        # Another actor made inside the unit is held by it too.
        await _change(work.conn, system_actor(owner.account_id, api.runtime.clock),
                      thing_id="t2")
    rows = await _rows(api, "u-1")
    assert [(r.operation, r.outcome, r.credential, r.ip, r.body, r.is_dangerous)
            for r in rows] == [("thing.change", "OK", "system", "10.0.0.1", '{"a":1}', True)] * 2
    assert '"t1"' in rows[0].target_ids and '"t2"' in rows[1].target_ids


async def test_a_failed_unit_rolls_back_and_records_the_write_with_its_outcome(
        api: Api, owner: Person) -> None:
    actor = system_actor(owner.account_id, api.runtime.clock)
    with pytest.raises(errors.ReferenceExist):
        async with unit(api.runtime, actor, write=True, call=Call("u-2")) as work:
            await _change(work.conn, work.actor, thing_id="t1", fail=True)
    [row] = await _rows(api, "u-2")
    assert (row.operation, row.outcome, row.is_write) == ("thing.change", "ReferenceExist", True)
    assert actor.audit_entries == [] and actor.failed_write is None and actor.units == 0


async def test_a_write_rolled_back_by_a_later_error_is_recorded_as_failed(
        api: Api, owner: Person) -> None:
    async def write_then_fail() -> None:
        async with unit(api.runtime, system_actor(owner.account_id, api.runtime.clock),
                        write=True, call=Call("u-3")) as work:
            await _change(work.conn, work.actor, thing_id="t1")
            raise RuntimeError("after the write")

    with pytest.raises(RuntimeError):
        await write_then_fail()
    [row] = await _rows(api, "u-3")
    assert (row.operation, row.outcome) == ("thing.change", "InternalError")


async def test_a_unit_that_wrote_nothing_records_nothing(api: Api, owner: Person) -> None:
    with pytest.raises(errors.ResourceNotFound):
        async with unit(api.runtime, system_actor(owner.account_id, api.runtime.clock),
                        write=True, call=Call("u-4")):
            raise errors.ResourceNotFound()
    assert await _rows(api, "u-4") == []


async def test_the_rate_limit_refuses_before_anything_runs_and_is_not_recorded(
        api: Api, owner: Person) -> None:
    api.runtime.limiter = MemoryRateLimiter((Window(1, 60.0),), api.runtime.clock)
    ran = []
    for _ in range(2):
        try:
            async with unit(api.runtime, system_actor(owner.account_id, api.runtime.clock),
                            write=True, limit="a:1", call=Call("u-5")) as work:
                ran.append(await _change(work.conn, work.actor, thing_id="t"))
        except errors.RequestTooFrequently:
            ran.append("refused")
    assert ran == ["t", "refused"]
    assert [r.outcome for r in await _rows(api, "u-5")] == ["OK"]


async def test_a_joined_unit_flushes_in_its_owner_s_transaction(
        api: Api, owner: Person) -> None:
    """A job's: the worker owns the transaction; the unit flushes in it and commits nothing
    itself, and a savepoint's unit drops what the savepoint rolled back."""
    async def in_a_savepoint(conn: Any) -> None:
        async with conn.begin_nested(), unit(api.runtime, None, write=True,
                                             conn=conn) as inner:
            assert inner.call.request_id == "job-1"  # the outer unit's call
            await _change(conn, system_actor(owner.account_id, api.runtime.clock),
                          thing_id="dropped")
            raise errors.ReferenceExist()

    async with api.runtime.db.transaction() as conn, unit(
            api.runtime, None, write=True, conn=conn, call=Call("job-1")):
        await _change(conn, system_actor(owner.account_id, api.runtime.clock),
                      thing_id="kept")
        with pytest.raises(errors.ReferenceExist):
            await in_a_savepoint(conn)
    rows = await _rows(api, "job-1")
    assert [r.outcome for r in rows] == ["OK"] and '"kept"' in rows[0].target_ids


async def test_an_actor_the_door_made_writes_only_while_a_unit_holds_it(
        api: Api, owner: Person) -> None:
    actor = system_actor(owner.account_id, api.runtime.clock)
    with pytest.raises(RuntimeError, match="no unit of work holds"):
        await _change(None, actor, thing_id="t")
    async with unit(api.runtime, actor, write=True, call=Call("u-6")) as work:
        await _change(work.conn, actor, thing_id="t")
    with pytest.raises(RuntimeError, match="no unit of work holds"):
        await _change(None, actor, thing_id="t")  # the unit let it go
    assert len(await _rows(api, "u-6")) == 1
