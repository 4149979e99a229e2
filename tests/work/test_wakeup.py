"""Idle workers wake when work becomes due: a ring after a commit that queued a job due soon
(in this process; through NOTIFY from any process on PostgreSQL), and a sleep that ends when
the earliest pending job is due. Each test gives the loop a poll interval of an hour, so a job
runs in time only if the mechanism under test woke it; the time limits only stop a broken
run from hanging."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from sqlalchemy import text

from dutyline.api.runtime import Runtime
from dutyline.app import build_runtime
from dutyline.config import Settings
from dutyline.db import commit_hooks
from dutyline.kit.clock import millis
from dutyline.work import queue, wakeup
from dutyline.work import worker as worker_module
from dutyline.work.registry import Registry
from dutyline.work.worker import Worker
from tests.fixtures import databases as dbs
from tests.fixtures.clock import FakeClock
from tests.work.jobs_for_test import (
    CREATE_EFFECT_TABLE,
    DROP_EFFECT_TABLE,
    EFFECT_KIND,
    effect_rows,
    eventually,
    write_effect,
)

pytestmark = pytest.mark.anyio
HOUR_S = 3600.0


async def ran(runtime: Runtime) -> int:
    async with runtime.db.connect() as conn:
        return len(await effect_rows(conn))


@pytest.fixture(autouse=True)
def no_schedule_ticks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop also wakes to fire schedules every half second; not in these tests."""
    monkeypatch.setattr(worker_module, "SCHEDULE_INTERVAL_S", HOUR_S)


async def sleeping_worker(runtime: Runtime) -> tuple[asyncio.Event, asyncio.Task[None]]:
    """A loop that has looked, found nothing, and sleeps for its whole poll interval."""
    reg = Registry()
    reg.register(EFFECT_KIND, lambda ctx, payload: write_effect(ctx))
    worker = Worker(runtime, registry=reg, worker_id="idle", idle_max_s=HOUR_S)
    looked = asyncio.Event()
    until_due = worker.until_due

    async def noting_until_due() -> float:
        wait: float = await until_due()
        looked.set()
        return wait

    worker.until_due = noting_until_due
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    with anyio.fail_after(30):
        await looked.wait()
    # Nothing between until_due and the loop's wait awaits: a few turns of the event loop
    # and it is asleep.
    for _ in range(10):
        await asyncio.sleep(0)
    return stop, task


async def finish(stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    stop.set()
    with anyio.fail_after(30):
        await task


async def test_a_commit_that_queues_a_due_job_wakes_the_idle_loop(runtime: Runtime) -> None:
    stop, task = await sleeping_worker(runtime)
    assert await ran(runtime) == 0
    async with runtime.db.transaction() as conn:
        await queue.enqueue(conn, EFFECT_KIND, {}, now_ms=millis(runtime.clock))

    async def done() -> bool:
        return await ran(runtime) == 1

    await eventually(done, within=30)
    await finish(stop, task)


async def test_an_idle_loop_sleeps_exactly_until_the_next_job_is_due(
        runtime: Runtime, clock: FakeClock) -> None:
    # Due beyond the ring's horizon: no ring, only the loop's own look at the table finds it.
    async with runtime.db.transaction() as conn:
        await queue.enqueue(conn, EFFECT_KIND, {}, now_ms=millis(clock),
                            run_at_ms=millis(clock) + wakeup.HORIZON_MS + 500)
    stop, task = await sleeping_worker(runtime)
    assert await ran(runtime) == 0
    clock.advance((wakeup.HORIZON_MS + 500) / 1000)

    async def done() -> bool:
        return await ran(runtime) == 1

    await eventually(done, within=30)
    await finish(stop, task)


async def test_only_committed_transactions_ring(runtime: Runtime) -> None:
    rings: list[int] = []
    unsubscribe = commit_hooks.subscribe(wakeup.TOPIC, lambda: rings.append(1))
    now = millis(runtime.clock)
    try:
        async def rolled_back() -> None:
            async with runtime.db.transaction() as conn:
                await queue.enqueue(conn, EFFECT_KIND, {}, now_ms=now)
                raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            await rolled_back()
        assert rings == []
        async with runtime.db.transaction() as conn:
            # Due in an hour: the workers' own polls find it; nobody is rung.
            await queue.enqueue(conn, EFFECT_KIND, {}, now_ms=now, run_at_ms=now + 3_600_000)
        assert rings == []
        async with runtime.db.transaction() as conn:
            for n in range(3):
                await queue.enqueue(conn, EFFECT_KIND, {"n": n}, now_ms=now)
        assert rings == [1]  # once per transaction, not per job
    finally:
        unsubscribe()


def _enqueue_from_another_process(database_url: str, now_ms: int) -> None:
    script = textwrap.dedent(f"""
        import asyncio
        from dutyline.db.engine import Database
        from dutyline.work import queue

        async def main() -> None:
            db = Database({database_url!r})
            async with db.transaction() as conn:
                await queue.enqueue(conn, {EFFECT_KIND!r}, {{}}, now_ms={now_ms})
            await db.dispose()

        asyncio.run(main())
    """)
    env: dict[str, Any] = {k: v for k, v in os.environ.items() if not k.startswith("DUTYLINE_")}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)


@pytest.fixture
async def pg_runtime(postgres_database: str | None, clock: FakeClock) -> AsyncIterator[Runtime]:
    """PostgreSQL only: NOTIFY is its own; SQLite's other processes are found by polling."""
    if postgres_database is None:
        pytest.skip(f"{dbs.POSTGRES_ENV} is not set: this test is about PostgreSQL's NOTIFY")
    await dbs.truncate_all(postgres_database)
    rt = build_runtime(Settings(database_url=postgres_database, secret_key="test-secret-key",
                                run_workers=False, log_level="warning"), clock)
    async with rt.db.transaction() as conn:
        await conn.execute(text(CREATE_EFFECT_TABLE))
    try:
        yield rt
    finally:
        async with rt.db.transaction() as conn:
            await conn.execute(text(DROP_EFFECT_TABLE))
        await rt.db.dispose()


async def test_postgres_notify_wakes_the_loop_for_a_job_of_another_process(
        pg_runtime: Runtime) -> None:
    runtime = pg_runtime
    stop, task = await sleeping_worker(runtime)
    # Another process commits the job: this process's commit hooks never see it.
    await asyncio.to_thread(_enqueue_from_another_process, runtime.settings.database_url,
                            millis(runtime.clock))

    async def done() -> bool:
        return await ran(runtime) == 1

    await eventually(done, within=30)
    await finish(stop, task)
