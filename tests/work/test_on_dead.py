"""on_dead hooks: what a job kind does when one of its jobs dies, run exactly once, in the
transaction that buries the job, whether the reaper buried it or its last attempt failed."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from sqlalchemy import select, text

from dutyline.api.runtime import Runtime
from dutyline.db.tables.work import job
from dutyline.kit.clock import millis
from dutyline.work import queue
from dutyline.work.registry import DeadJobContext, DuplicateHandler, JobContext, Registry
from dutyline.work.worker import Worker
from tests.fixtures.clock import FakeClock
from tests.work.jobs_for_test import EFFECT_TABLE, effect_rows
from tests.work.test_queue import add, job_row
from tests.work.test_worker import effects, jobs_metric

pytestmark = pytest.mark.anyio

LEASE_MS = 1_000


async def record_death(ctx: DeadJobContext) -> None:
    """The hook's own effect, written on the burying transaction."""
    await ctx.conn.execute(
        text(f"INSERT INTO {EFFECT_TABLE} (job_id, worker_id, attempt) VALUES (:j, :w, :a)"),
        {"j": ctx.job_id, "w": "on_dead", "a": ctx.attempts},
    )


async def committed_status(runtime: Runtime, job_id: int) -> str:
    """The job's status as another connection sees it: only what is committed."""
    async with runtime.db.connect() as conn:
        return str((await conn.execute(select(job.c.status).where(job.c.id == job_id))).scalar())


async def expire(runtime: Runtime, clock: FakeClock, *job_ids: int | None) -> None:
    """Claim the jobs (as a worker that then stops), and let their leases run out."""
    claimed = await queue.claim(runtime.db, "gone", now_ms=millis(clock), lease_ms=LEASE_MS,
                                limit=len(job_ids))
    assert sorted(c.id for c in claimed) == sorted(job_ids)  # type: ignore[type-var]
    clock.advance(LEASE_MS / 1000 + 1)


async def test_the_reaper_runs_the_hook_once_in_the_transaction_that_buries_the_job(
    runtime: Runtime, clock: FakeClock
) -> None:
    reg = Registry()
    seen: list[dict[str, Any]] = []

    @reg.on_dead("k")
    async def died(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
        in_burial = await ctx.conn.execute(select(job.c.status).where(job.c.id == ctx.job_id))
        seen.append({
            "job_id": ctx.job_id, "kind": ctx.kind, "attempts": ctx.attempts,
            "error": ctx.error, "lease_expired": ctx.lease_expired, "payload": payload,
            # Its own transaction already says dead; nobody else sees that before it commits.
            "status_here": in_burial.scalar(),
            "status_elsewhere": await committed_status(runtime, ctx.job_id),
        })
        await record_death(ctx)

    db, now = runtime.db, millis(clock)
    spent = await add(db, now, "k", payload={"migration": "m1"}, max_attempts=1)
    retried = await add(db, now, "k", max_attempts=2)
    no_hook = await add(db, now, "other", max_attempts=1)
    await expire(runtime, clock, spent, retried, no_hook)
    reaper = Worker(runtime, registry=reg, worker_id="reaper")

    await reaper.reap()

    assert seen == [{
        "job_id": spent, "kind": "k", "attempts": 1, "error": queue.LEASE_EXPIRED,
        "lease_expired": True, "payload": {"migration": "m1"},
        "status_here": queue.DEAD, "status_elsewhere": queue.RUNNING,
    }]
    # The hook's writes committed with the burial.
    assert await effects(runtime) == [(spent, "on_dead", 1)]  # type: ignore[list-item]
    assert await committed_status(runtime, spent) == queue.DEAD  # type: ignore[arg-type]
    assert await committed_status(runtime, retried) == queue.PENDING  # type: ignore[arg-type]
    assert await committed_status(runtime, no_hook) == queue.DEAD  # type: ignore[arg-type]
    # Reaping again finds nothing to bury: the hook never runs twice for one job.
    await reaper.reap()
    assert len(seen) == 1
    assert jobs_metric(runtime, "*", "dead") == 2


async def test_the_hook_and_the_burial_commit_together_or_not_at_all(
    runtime: Runtime, clock: FakeClock
) -> None:
    db = runtime.db
    job_id = await add(db, millis(clock), "k", max_attempts=1)
    await expire(runtime, clock, job_id)

    async def write_then_break(conn: Any, dead: queue.DeadJob) -> None:
        await conn.execute(text(
            f"INSERT INTO {EFFECT_TABLE} (job_id, worker_id, attempt) VALUES (:j, 'x', 1)"),
            {"j": dead.id})
        raise RuntimeError("the reaper's transaction fails after the hook wrote")

    with pytest.raises(RuntimeError, match="reaper's transaction fails"):
        await queue.reap_expired(db, now_ms=millis(clock), on_dead=write_then_break)
    assert await effects(runtime) == []
    assert await committed_status(runtime, job_id) == queue.RUNNING  # type: ignore[arg-type]

    buried: list[int] = []

    async def note(conn: Any, dead: queue.DeadJob) -> None:
        buried.append(dead.id)

    assert await queue.reap_expired(db, now_ms=millis(clock), on_dead=note) == (0, 1)
    assert buried == [job_id]


async def test_a_failing_hook_loses_its_own_writes_not_the_burial(
    runtime: Runtime, clock: FakeClock
) -> None:
    reg = Registry()

    @reg.on_dead("k")
    async def broken(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
        await record_death(ctx)
        raise ValueError("hook bug")

    db, now = runtime.db, millis(clock)
    first = await add(db, now, "k", max_attempts=1)
    second = await add(db, now, "k", max_attempts=1)
    requeued = await add(db, now, "k", max_attempts=5)
    await expire(runtime, clock, first, second, requeued)

    await Worker(runtime, registry=reg, worker_id="reaper").reap()

    assert await effects(runtime) == []
    for dead in (first, second):
        row = await job_row(db, dead)  # type: ignore[arg-type]
        assert (row.status, row.last_error) == (
            "dead", "lease expired; on_dead failed: ValueError: hook bug")
    assert (await job_row(db, requeued)).status == "pending"  # type: ignore[arg-type]
    assert jobs_metric(runtime, "k", "on_dead_failed") == 2


async def test_a_last_attempt_that_fails_runs_the_hook_with_its_error(
    runtime: Runtime, clock: FakeClock
) -> None:
    reg = Registry()
    seen: list[tuple[int, str, bool]] = []

    @reg.handler("k")
    async def failing(ctx: JobContext, payload: dict[str, Any]) -> None:
        await ctx.conn.execute(text(
            f"INSERT INTO {EFFECT_TABLE} (job_id, worker_id, attempt) VALUES (:j, 'h', :a)"),
            {"j": ctx.job_id, "a": ctx.attempt})
        raise RuntimeError(f"attempt {ctx.attempt} failed")

    @reg.on_dead("k")
    async def died(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
        seen.append((ctx.attempts, ctx.error, ctx.lease_expired))
        await record_death(ctx)

    db = runtime.db
    job_id = await add(db, millis(clock), "k", max_attempts=2)
    w = Worker(runtime, registry=reg, worker_id="w")
    [first] = await w.claim(1)
    assert await w.execute(first) == "retry"
    assert seen == []
    clock.advance(3_600)
    [last] = await w.claim(1)
    assert await w.execute(last) == "dead"
    assert seen == [(2, "RuntimeError: attempt 2 failed", False)]
    # The handler's writes rolled back; the hook's committed with the job's death.
    assert await effects(runtime) == [(job_id, "on_dead", 2)]  # type: ignore[list-item]


async def test_racing_reapers_run_the_hook_once(runtime: Runtime, clock: FakeClock) -> None:
    """Two reapers (as in two processes) find the same expired leases at the same time: only
    the one whose UPDATE changed a row runs its hook. On PostgreSQL the second one runs
    entirely while the first is inside its hook, its burial not committed yet."""
    reg = Registry()
    calls: list[int] = []
    inside = asyncio.Event()
    other_done = asyncio.Event()

    @reg.on_dead("k")
    async def died(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
        calls.append(ctx.job_id)
        inside.set()
        if runtime.db.is_postgres:
            await other_done.wait()  # the other reaper skips the rows this one holds
        await record_death(ctx)

    db, now = runtime.db, millis(clock)
    ids = [await add(db, now, "k", max_attempts=1) for _ in range(3)]
    await expire(runtime, clock, *ids)
    first = Worker(runtime, registry=reg, worker_id="reaper-1")
    second = Worker(runtime, registry=reg, worker_id="reaper-2")
    outcome: dict[str, tuple[int, int]] = {}

    async def reap(worker: Worker, done: asyncio.Event | None = None) -> None:
        outcome[worker.worker_id] = await queue.reap_expired(
            db, now_ms=millis(clock), on_dead=worker._on_dead)
        if done is not None:
            done.set()

    async def reap_second_once_the_first_is_inside_its_hook() -> None:
        await inside.wait()
        await reap(second, other_done)

    with anyio.fail_after(30):
        await asyncio.gather(reap(first), reap_second_once_the_first_is_inside_its_hook())

    assert outcome == {"reaper-1": (0, 3), "reaper-2": (0, 0)}
    assert sorted(calls) == sorted(ids)  # type: ignore[type-var]
    async with db.connect() as conn:
        assert sorted(r[0] for r in await effect_rows(conn)) == sorted(ids)  # type: ignore[type-var]


def test_one_on_dead_hook_per_kind() -> None:
    reg = Registry()

    @reg.on_dead("a")
    async def a(ctx: DeadJobContext, payload: dict[str, Any]) -> None: ...

    reg.register_on_dead("a", a)  # the same function again (a module imported twice) is fine
    assert reg.dead_hook("a") is a and reg.dead_hook("b") is None
    assert reg.get("a") is None  # a hook is not a handler

    async def other(ctx: DeadJobContext, payload: dict[str, Any]) -> None: ...

    with pytest.raises(DuplicateHandler, match="'a' already given an on_dead hook"):
        reg.register_on_dead("a", other)
