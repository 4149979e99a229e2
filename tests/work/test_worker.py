"""Running jobs: atomic effects + done, fencing, retries, heartbeat, the loop, the registry."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from dutyline.api.runtime import Runtime
from dutyline.config import Settings
from dutyline.db.tables.work import job
from dutyline.kit.clock import millis
from dutyline.work import queue
from dutyline.work.registry import (
    DuplicateHandler,
    JobContext,
    Registry,
    load_handler_modules,
)
from dutyline.work.registry import (
    registry as default_registry,
)
from dutyline.work.worker import Worker
from tests.fixtures.clock import FakeClock
from tests.work.jobs_for_test import (
    EFFECT_KIND,
    effects,
    eventually,
    jobs_metric,
    write_effect,
)
from tests.work.test_queue import add, job_row

pytestmark = pytest.mark.anyio


def make_worker(runtime: Runtime, registry: Registry, name: str, **kw: Any) -> Worker:
    return Worker(runtime, registry=registry, worker_id=name, **kw)


async def test_handler_effects_and_done_commit_together(runtime: Runtime) -> None:
    reg = Registry()

    @reg.handler("ok")
    async def ok(ctx: JobContext, payload: dict[str, Any]) -> None:
        await write_effect(ctx)

    @reg.handler("half")
    async def half(ctx: JobContext, payload: dict[str, Any]) -> None:
        await write_effect(ctx)
        raise RuntimeError("failed after writing")

    db, now = runtime.db, millis(runtime.clock)
    good, bad = await add(db, now, "ok"), await add(db, now, "half")
    w = make_worker(runtime, reg, "w1")
    outcomes = {c.id: await w.execute(c) for c in await w.claim(5)}
    assert outcomes == {good: "done", bad: "retry"}

    assert await effects(runtime) == [(good, "w1", 1)]
    g, b = await job_row(db, good), await job_row(db, bad)  # type: ignore[arg-type]
    assert (g.status, g.lease_owner, g.last_error) == ("done", None, None)
    assert (b.status, b.last_error) == ("pending", "RuntimeError: failed after writing")
    assert jobs_metric(runtime, "ok", "done") == 1
    assert jobs_metric(runtime, "half", "retry") == 1


async def test_worker_whose_lease_was_reaped_cannot_complete(
    runtime: Runtime, clock: FakeClock
) -> None:
    reg = Registry()

    @reg.handler(EFFECT_KIND)
    async def effect(ctx: JobContext, payload: dict[str, Any]) -> None:
        await write_effect(ctx)

    db = runtime.db
    job_id = await add(db, millis(clock), EFFECT_KIND)
    slow = make_worker(runtime, reg, "slow", lease_ms=1_000)
    fast = make_worker(runtime, reg, "fast", lease_ms=1_000)
    [mine] = await slow.claim(1)
    # `slow` stalls (GC pause, partition) past its lease: the reaper hands the job to `fast`.
    clock.advance(2)
    assert await queue.reap_expired(db, now_ms=millis(clock)) == (1, 0)
    [theirs] = await fast.claim(1)
    assert (theirs.id, theirs.attempts) == (job_id, 2)

    # `slow` wakes up and runs the handler: its effects must not survive.
    assert await slow.execute(mine) == "lease_lost"
    assert await effects(runtime) == []
    assert (await job_row(db, job_id)).lease_owner == "fast"  # type: ignore[arg-type]

    assert await fast.execute(theirs) == "done"
    assert await effects(runtime) == [(job_id, "fast", 2)]
    assert (await job_row(db, job_id)).status == "done"  # type: ignore[arg-type]
    assert jobs_metric(runtime, EFFECT_KIND, "lease_lost") == 1


async def test_failures_back_off_then_the_job_dies(runtime: Runtime, clock: FakeClock) -> None:
    reg = Registry()

    @reg.handler("flaky")
    async def flaky(ctx: JobContext, payload: dict[str, Any]) -> None:
        raise ValueError(f"nope on attempt {ctx.attempt}")

    db = runtime.db
    job_id = await add(db, millis(clock), "flaky", max_attempts=3, dedupe_key="flaky")
    w = make_worker(runtime, reg, "w1")
    for attempt in (1, 2):
        [c] = await w.claim(1)
        assert (c.id, c.attempts) == (job_id, attempt)
        assert await w.execute(c) == "retry"
        row = await job_row(db, job_id)  # type: ignore[arg-type]
        ceiling = queue.RETRY_BASE_MS * 2**attempt
        now = millis(clock)
        assert now + ceiling // 2 <= row.run_at <= now + ceiling
        assert (row.status, row.last_error) == ("pending", f"ValueError: nope on attempt {attempt}")
        assert await w.claim(1) == []  # not due before its backoff is over
        clock.set((row.run_at + 1) / 1000)
    [last] = await w.claim(1)
    assert await w.execute(last) == "dead"
    row = await job_row(db, job_id)  # type: ignore[arg-type]
    assert (row.status, row.attempts, row.dedupe_key, row.last_error) == (
        "dead", 3, None, "ValueError: nope on attempt 3",
    )
    clock.advance(86_400)
    assert await w.claim(1) == []
    assert jobs_metric(runtime, "flaky", "retry") == 2
    assert jobs_metric(runtime, "flaky", "dead") == 1


async def test_unknown_kind_is_retried_not_dropped(runtime: Runtime) -> None:
    job_id = await add(runtime.db, millis(runtime.clock), "nobody.handles.this")
    w = make_worker(runtime, Registry(), "w1")
    [c] = await w.claim(1)
    assert await w.execute(c) == "retry"
    row = await job_row(runtime.db, job_id)  # type: ignore[arg-type]
    assert row.status == "pending"
    assert "no handler for job kind 'nobody.handles.this'" in row.last_error


async def test_heartbeat_keeps_a_long_job_leased(runtime: Runtime, clock: FakeClock) -> None:
    reg = Registry()
    db = runtime.db
    seen: dict[str, Any] = {}

    @reg.handler("long")
    async def long(ctx: JobContext, payload: dict[str, Any]) -> None:
        clock.advance(5)  # far past the 300 ms lease taken at claim
        target = millis(clock) + 300

        async def extended() -> bool:
            return bool((await job_row(db, ctx.job_id)).lease_expires_at == target)

        await eventually(extended)
        seen["reaped"] = await queue.reap_expired(db, now_ms=millis(clock))
        await write_effect(ctx)

    job_id = await add(db, millis(clock), "long")
    w = make_worker(runtime, reg, "w1", lease_ms=300)
    [c] = await w.claim(1)
    assert c.lease_expires_at == millis(clock) + 300
    assert await w.execute(c) == "done"
    assert seen["reaped"] == (0, 0)
    assert await effects(runtime) == [(job_id, "w1", 1)]


async def test_loop_runs_every_job_once_and_stops_cleanly(runtime: Runtime) -> None:
    reg = Registry()
    reg.register(EFFECT_KIND, lambda ctx, payload: write_effect(ctx))
    db, now = runtime.db, millis(runtime.clock)
    async with db.transaction() as conn:
        ids = [await queue.enqueue(conn, EFFECT_KIND, {"n": n}, now_ms=now) for n in range(40)]
    stop = asyncio.Event()
    w = make_worker(runtime, reg, "loop", concurrency=3)
    task = asyncio.create_task(w.run(stop))

    async def all_ran() -> bool:
        return len(await effects(runtime)) >= 40

    await eventually(all_ran, within=60)
    stop.set()
    with anyio.fail_after(30):
        await task
    assert [r[0] for r in await effects(runtime)] == ids
    async with db.connect() as conn:
        statuses = set((await conn.execute(select(job.c.status))).scalars())
    assert statuses == {"done"}
    assert jobs_metric(runtime, EFFECT_KIND, "done") == 40


async def test_cancelled_loop_hands_its_running_job_back(runtime: Runtime) -> None:
    reg = Registry()
    started = asyncio.Event()

    @reg.handler("forever")
    async def forever(ctx: JobContext, payload: dict[str, Any]) -> None:
        started.set()
        await asyncio.Event().wait()

    db = runtime.db
    job_id = await add(db, millis(runtime.clock), "forever")
    task = asyncio.create_task(make_worker(runtime, reg, "w1").run())
    with anyio.fail_after(30):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    row = await job_row(db, job_id)  # type: ignore[arg-type]
    # Back to pending at once, and the interrupted attempt is not counted against the job.
    assert (row.status, row.lease_owner, row.attempts) == ("pending", None, 0)
    assert jobs_metric(runtime, "forever", "released") == 1


def test_registry_decorator_and_duplicates() -> None:
    reg = Registry()

    @reg.handler("a")
    async def a(ctx: JobContext, payload: dict[str, Any]) -> None: ...

    reg.register("a", a)  # the same function again (a module imported twice) is fine
    assert reg.get("a") is a and reg.get("b") is None and reg.kinds() == ["a"]

    async def other(ctx: JobContext, payload: dict[str, Any]) -> None: ...

    with pytest.raises(DuplicateHandler, match="'a'"):
        reg.register("a", other)


def test_job_modules_from_settings_are_loaded() -> None:
    settings = Settings.from_env(
        {"DUTYLINE_JOB_MODULES": " tests.work.jobs_for_test , ", "DUTYLINE_JOB_RETENTION_DAYS": "3"}
    )
    assert settings.job_modules == ("tests.work.jobs_for_test",)
    assert settings.job_retention_days == 3
    assert Settings.from_env({}).job_modules == ()
    assert "tests.work.jobs_for_test" in load_handler_modules(settings.job_modules)
    assert default_registry.get(EFFECT_KIND) is not None
    with pytest.raises(ModuleNotFoundError):
        load_handler_modules(["tests.work.no_such_module"])
