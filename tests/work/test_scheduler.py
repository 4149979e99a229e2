"""The durable scheduler on an injected clock: one fire per due time, coalescing after
downtime, time zones, pauses, failing handlers, and two claimers racing for the same rows."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, text

from dutyline.api.runtime import Runtime
from dutyline.db.engine import Database
from dutyline.db.tables.scheduler import work_schedule as schedule
from dutyline.kit.clock import millis
from dutyline.work import scheduler
from dutyline.work.worker import Worker
from tests.fixtures.clock import FakeClock
from tests.work.schedules_for_test import (
    CREATE_FIRE_TABLE,
    DROP_FIRE_TABLE,
    TICK_KIND,
    fires,
    record_fire,
)

pytestmark = pytest.mark.anyio
REGISTRY = {TICK_KIND: record_fire}
# 2023-11-14 22:13:20 UTC
START_MS = 1_700_000_000_000


def ms(text_utc: str) -> int:
    return int(datetime.fromisoformat(text_utc).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.fixture
async def db(runtime: Runtime) -> AsyncIterator[Database]:
    async with runtime.db.transaction() as conn:
        await conn.execute(text(CREATE_FIRE_TABLE))
    try:
        yield runtime.db
    finally:
        async with runtime.db.transaction() as conn:
            await conn.execute(text(DROP_FIRE_TABLE))


async def _set(db: Database, owner: str, now_ms: int, **kw: object) -> int:
    async with db.transaction() as conn:
        return await scheduler.set_schedule(conn, kind=TICK_KIND, owner_id=owner, now_ms=now_ms,
                                            **kw)  # type: ignore[arg-type]


async def _fire(db: Database, now_ms: int) -> int:
    return await scheduler.fire_due(db, now_ms=now_ms, registry=REGISTRY)


async def _fires(db: Database) -> list[tuple[str, int, int, int]]:
    async with db.connect() as conn:
        return await fires(conn)


async def _row(db: Database, owner: str) -> object:
    async with db.connect() as conn:
        return (await conn.execute(select(schedule).where(schedule.c.owner_id == owner))).one()


async def test_a_due_time_fires_exactly_once(db: Database) -> None:
    first = await _set(db, "a", START_MS, cron_expr="*/5 * * * *")
    assert first == ms("2023-11-14T22:15:00")
    assert await _fire(db, first - 1) == 0
    assert await _fire(db, first) == 1
    assert await _fire(db, first) == 0  # the same due time again: nothing
    assert await _fire(db, first + 60_000) == 0
    got = await _fires(db)
    assert [(o, d, m) for o, d, m, _ in got] == [("a", first, 0)]
    row = await _row(db, "a")
    assert row.next_fire_at == ms("2023-11-14T22:20:00")  # type: ignore[attr-defined]
    assert row.fire_count == 1  # type: ignore[attr-defined]


async def test_missed_fires_after_downtime_are_coalesced_into_one(db: Database) -> None:
    first = await _set(db, "a", START_MS, cron_expr="*/5 * * * *")
    assert first == ms("2023-11-14T22:15:00")
    # Down from before 22:15 until 23:21: 22:15, 22:20, ... 23:20 passed unfired (14 times).
    now = ms("2023-11-14T23:21:30")
    assert await _fire(db, now) == 1
    assert await _fire(db, now) == 0
    [(owner, due, missed, _)] = await _fires(db)
    assert (owner, due, missed) == ("a", ms("2023-11-14T23:20:00"), 13)
    row = await _row(db, "a")
    assert row.next_fire_at == ms("2023-11-14T23:25:00")  # type: ignore[attr-defined]
    assert row.last_fire_at == due  # type: ignore[attr-defined]


async def test_interval_schedules_fire_and_coalesce(db: Database) -> None:
    first = await _set(db, "i", START_MS, interval_ms=60_000)
    assert first == START_MS + 60_000
    assert await _fire(db, first) == 1
    # Three and a half intervals later: due times first+1m, +2m, +3m missed -> one fire.
    assert await _fire(db, first + 210_000) == 1
    got = [(d, m) for _, d, m, _ in await _fires(db)]
    assert got == [(first, 0), (first + 180_000, 2)]
    assert (await _row(db, "i")).next_fire_at == first + 240_000  # type: ignore[attr-defined]


async def test_cron_runs_in_the_schedule_time_zone(db: Database) -> None:
    # 09:00 in Shanghai (UTC+8) is 01:00 UTC; 09:00 in New York on a winter day is 14:00 UTC.
    assert await _set(db, "sh", START_MS, cron_expr="0 9 * * *", timezone="Asia/Shanghai") == \
        ms("2023-11-15T01:00:00")
    assert await _set(db, "ny", START_MS, cron_expr="0 9 * * *",
                      timezone="America/New_York") == ms("2023-11-15T14:00:00")


async def test_a_paused_schedule_never_fires(db: Database) -> None:
    assert await _set(db, "p", START_MS, cron_expr="* * * * *", active=False) == 0
    assert await _fire(db, START_MS + 3_600_000) == 0
    async with db.connect() as conn:
        assert await scheduler.next_fire_at(conn, kind=TICK_KIND, owner_id="p") == 0
    # Resumed: due from now on, not for the paused hour.
    resumed = await _set(db, "p", START_MS + 3_600_000, cron_expr="* * * * *")
    assert resumed == START_MS + 3_600_000 + 40_000
    assert await _fire(db, resumed) == 1
    assert [m for _, _, m, _ in await _fires(db)] == [0]


async def test_an_unchanged_definition_keeps_its_due_time(db: Database) -> None:
    first = await _set(db, "k", START_MS, cron_expr="*/5 * * * *")
    # Set again after the due time passed but before any tick fired it: still due, not skipped.
    assert await _set(db, "k", first + 1_000, cron_expr="*/5 * * * *") == first
    # A new expression is due from now on.
    assert await _set(db, "k", first + 1_000, cron_expr="*/10 * * * *") == \
        ms("2023-11-14T22:20:00")


async def test_a_failing_handler_loses_its_own_fire_only(db: Database) -> None:
    due = await _set(db, "boom", START_MS, interval_ms=1_000)
    await _set(db, "fine", START_MS, interval_ms=1_000)
    assert await _fire(db, due) == 2
    assert [o for o, _, _, _ in await _fires(db)] == ["fine"]
    boom = await _row(db, "boom")
    assert boom.next_fire_at == due + 1_000  # type: ignore[attr-defined]
    assert "always fails" in boom.last_error  # type: ignore[attr-defined]


async def test_removed_schedules_and_unknown_kinds_do_not_fire(db: Database) -> None:
    await _set(db, "gone", START_MS, interval_ms=1_000)
    async with db.transaction() as conn:
        await scheduler.remove_schedule(conn, kind=TICK_KIND, owner_id="gone")
        await scheduler.set_schedule(conn, kind="test.unknown", owner_id="x", now_ms=START_MS,
                                     interval_ms=1_000)
    assert await _fire(db, START_MS + 10_000) == 0


async def test_two_claimers_racing_fire_each_due_time_once(
    db: Database, runtime: Runtime
) -> None:
    owners = [f"r{n:03d}" for n in range(250)]
    async with db.transaction() as conn:
        for owner in owners:
            await scheduler.set_schedule(conn, kind=TICK_KIND, owner_id=owner, now_ms=START_MS,
                                         interval_ms=60_000)
    other = Database(runtime.settings.database_url)
    try:
        due = START_MS + 60_000

        async def drain(database: Database) -> int:
            total = 0
            while (n := await scheduler.fire_due(database, now_ms=due, limit=20,
                                                 registry=REGISTRY)):
                total += n
            return total

        counts = await asyncio.gather(drain(db), drain(other), drain(db), drain(other))
    finally:
        await other.dispose()
    assert sum(counts) == len(owners)
    got = await _fires(db)
    assert sorted(o for o, _, _, _ in got) == owners
    assert {d for _, d, _, _ in got} == {due}


async def test_the_worker_loop_fires_due_schedules(
    db: Database, runtime: Runtime, clock: FakeClock
) -> None:
    due = await _set(db, "w", millis(clock), interval_ms=30_000)
    worker = Worker(runtime)
    assert await worker.fire_schedules() == 0
    clock.set(due / 1000)
    assert await worker.fire_schedules() == 1
    assert [(o, d) for o, d, _, _ in await _fires(db)] == [("w", due)]


async def test_a_batch_handler_gets_the_due_fires_and_a_bad_one_fails_alone(
    db: Database,
) -> None:
    seen: list[list[str]] = []

    async def batch(conn: object, fires: list[scheduler.Fire]) -> None:
        seen.append([f.owner_id for f in fires])
        if any(f.owner_id == "bad" for f in fires):
            raise RuntimeError("bad record")

    scheduler.schedule_batch_handler("test.batch")(batch)
    try:
        async with db.transaction() as conn:
            for owner in ("a", "bad", "c"):
                await scheduler.set_schedule(conn, kind="test.batch", owner_id=owner,
                                             now_ms=START_MS, interval_ms=1_000)
        assert await scheduler.fire_due(db, now_ms=START_MS + 1_000) == 3
    finally:
        scheduler._entries.pop("test.batch", None)
    # The whole batch first; when it failed, each fire alone.
    assert seen == [["a", "bad", "c"], ["a"], ["bad"], ["c"]]
    async with db.connect() as conn:
        rows = {r.owner_id: r for r in (await conn.execute(
            select(schedule).where(schedule.c.kind == "test.batch"))).all()}
    assert rows["bad"].last_error == "RuntimeError: bad record"
    assert rows["a"].last_error is None and rows["c"].last_error is None
    assert {r.next_fire_at for r in rows.values()} == {START_MS + 2_000}
