"""Jobs handed off to the worker of the job that made them (queue.Handoff): inserted
already claimed by that worker, run by it right after the maker commits without a claim;
left alone (no rows) when the maker rolls back; taken over by the reaper and another worker
when the maker's worker dies before running them; ordinary pending jobs when made outside
a worker."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api.runtime import Runtime
from dutyline.db.tables.work import job
from dutyline.kit.clock import millis
from dutyline.work import queue
from dutyline.work.registry import BatchContext, JobContext, Registry
from dutyline.work.worker import Worker
from tests.fixtures.clock import FakeClock
from tests.work.jobs_for_test import effects, write_effect

pytestmark = pytest.mark.anyio

LEASE_MS = 30_000
MAKER, MADE = "test.handoff.maker", "test.handoff.made"


def registry(*, fail_after_flush: bool = False, batched: bool = False) -> Registry:
    """A maker kind whose job hands off one `made` job per maker job; `made` writes the
    effect row (job id, worker, attempt), so who ran it, and how often, is on record."""
    reg = Registry()

    async def make(conn: Any, now_ms: int, handoff: queue.Handoff | None, n: int) -> None:
        jobs = queue.NewJobs()
        jobs.add(MADE, {"n": n}, now_ms=now_ms, dedupe_key=f"{MADE}:{n}", handoff=True)
        jobs.add(MADE, {"n": n, "later": True}, now_ms=now_ms, run_at_ms=now_ms + 60_000,
                 dedupe_key=f"{MADE}:{n}:later")
        await jobs.flush(conn, handoff)
        if fail_after_flush:
            raise RuntimeError("the maker fails after making its job")

    @reg.handler(MAKER)
    async def maker(ctx: JobContext, payload: dict[str, Any]) -> None:
        await make(ctx.conn, ctx.now_ms(), ctx.handoff, int(payload["n"]))

    if batched:
        @reg.batch_handler(MAKER, max_size=8)
        async def makers(ctx: BatchContext) -> None:
            for j in ctx.jobs:
                await make(ctx.conn, ctx.now_ms(), ctx.handoff, int(j.payload["n"]))

    @reg.handler(MADE)
    async def made(ctx: JobContext, payload: dict[str, Any]) -> None:
        await write_effect(ctx)

    return reg


async def enqueue_makers(runtime: Runtime, count: int) -> None:
    async with runtime.db.transaction() as conn:
        for n in range(count):
            await queue.enqueue(conn, MAKER, {"n": n}, now_ms=millis(runtime.clock))


async def rows_of(runtime: Runtime, kind: str) -> list[Any]:
    async with runtime.db.connect() as conn:
        return list((await conn.execute(
            select(job).where(job.c.kind == kind).order_by(job.c.id))).all())


async def test_flush_inserts_handed_jobs_claimed_by_the_owner_and_returns_them(
        runtime: Runtime) -> None:
    now = millis(runtime.clock)
    handoff = queue.Handoff(owner="w1", lease_ms=LEASE_MS)
    jobs = queue.NewJobs()
    jobs.add(MADE, {"n": 1}, now_ms=now, dedupe_key="k1", handoff=True)
    jobs.add(MADE, {"n": 2}, now_ms=now, dedupe_key="k2")
    jobs.add(MADE, {"n": 3}, now_ms=now, dedupe_key="k3", handoff=True)
    async with runtime.db.transaction() as conn:
        await jobs.flush(conn, handoff)
    rows = {r.dedupe_key: r for r in await rows_of(runtime, MADE)}
    assert [(r.status, r.lease_owner, r.lease_expires_at, r.attempts)
            for r in (rows["k1"], rows["k2"], rows["k3"])] == [
        ("running", "w1", now + LEASE_MS, 1), ("pending", None, None, 0),
        ("running", "w1", now + LEASE_MS, 1)]
    assert [(c.id, c.kind, c.payload, c.attempts, c.lease_owner, c.lease_expires_at)
            for c in handoff.jobs] == [
        (rows[k].id, MADE, {"n": n}, 1, "w1", now + LEASE_MS) for k, n in (("k1", 1), ("k3", 3))]
    assert jobs.rows == []  # flushed: a second flush inserts nothing again


async def test_a_handed_job_whose_dedupe_key_is_held_is_not_handed(runtime: Runtime) -> None:
    now = millis(runtime.clock)
    async with runtime.db.transaction() as conn:
        await queue.enqueue(conn, MADE, {"n": 0}, now_ms=now, dedupe_key="held")
    handoff = queue.Handoff(owner="w1", lease_ms=LEASE_MS)
    jobs = queue.NewJobs()
    jobs.add(MADE, {"n": 1}, now_ms=now, dedupe_key="held", handoff=True)
    async with runtime.db.transaction() as conn:
        await jobs.flush(conn, handoff)
    assert handoff.jobs == []
    assert [(r.status, r.lease_owner) for r in await rows_of(runtime, MADE)] == [
        ("pending", None)]


async def test_without_a_handoff_the_jobs_are_pending_for_any_worker(runtime: Runtime) -> None:
    jobs = queue.NewJobs()
    jobs.add(MADE, {"n": 1}, now_ms=millis(runtime.clock), dedupe_key="k1", handoff=True)
    async with runtime.db.transaction() as conn:
        await jobs.flush(conn)
    assert [(r.status, r.lease_owner, r.attempts) for r in await rows_of(runtime, MADE)] == [
        ("pending", None, 0)]


def test_a_handed_job_names_its_dedupe_key() -> None:
    with pytest.raises(ValueError, match="dedupe key"):
        queue.NewJobs().add(MADE, {}, now_ms=0, handoff=True)


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_the_maker_worker_runs_what_it_was_handed_once_its_job_commits(
        runtime: Runtime, batched: bool) -> None:
    await enqueue_makers(runtime, 3)
    w = Worker(runtime, registry=registry(batched=batched), worker_id="w1", lease_ms=LEASE_MS)
    units = await w.units(await w.claim(10, kind=MAKER), more_due=False)
    assert len(units) == (1 if batched else 3)
    for unit in units:
        assert await w.run_unit(unit) == "done"
    # No claim ran after the makers': the made jobs are done, by w1, on their first attempt,
    # and the later ones (not handed) still wait.
    made = await rows_of(runtime, MADE)
    now_jobs = [r for r in made if r.dedupe_key is None or "later" not in r.dedupe_key]
    assert [(r.status, r.attempts) for r in now_jobs] == [("done", 1)] * 3
    assert sorted((worker, attempt) for _, worker, attempt in await effects(runtime)) == [
        ("w1", 1)] * 3
    later = [r for r in made if r.dedupe_key and "later" in r.dedupe_key]
    assert [(r.status, r.lease_owner) for r in later] == [("pending", None)] * 3


async def test_a_maker_that_rolls_back_hands_off_nothing(runtime: Runtime) -> None:
    await enqueue_makers(runtime, 1)
    w = Worker(runtime, registry=registry(fail_after_flush=True), worker_id="w1",
               lease_ms=LEASE_MS)
    [claimed] = await w.claim(10)
    assert await w.execute(claimed) == "retry"
    assert await rows_of(runtime, MADE) == []
    assert await effects(runtime) == []


async def test_jobs_handed_to_a_worker_that_died_are_reaped_and_run_by_another(
        runtime: Runtime, clock: FakeClock) -> None:
    # The maker's transaction commits its handed job, and its worker dies before running it.
    handoff = queue.Handoff(owner="dead-worker", lease_ms=LEASE_MS)
    jobs = queue.NewJobs()
    jobs.add(MADE, {"n": 1}, now_ms=millis(clock), dedupe_key="k1", handoff=True)
    async with runtime.db.transaction() as conn:
        await jobs.flush(conn, handoff)
    other = Worker(runtime, registry=registry(), worker_id="w2", lease_ms=LEASE_MS)
    assert await other.claim(10) == []  # leased: nobody else takes it meanwhile
    clock.advance(LEASE_MS / 1000 + 1)
    await other.reap()
    [claimed] = await other.claim(10)
    assert claimed.id == handoff.jobs[0].id and claimed.attempts == 2
    assert await other.execute(claimed) == "done"
    assert [(w, a) for _, w, a in await effects(runtime)] == [("w2", 2)]
