"""Batched jobs: several due jobs of one kind run through its batch handler in one call and
one transaction with all their `done`s; a failed or fenced batch commits nothing and its jobs
run alone; a cancelled one is handed back; the loop fills batches by kind; the queue's
kind-filtered claim and list-taking done and heartbeat; the registry's rules."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from sqlalchemy import select, update

from dutyline.api.runtime import Runtime
from dutyline.db.engine import Database
from dutyline.db.tables.work import job
from dutyline.kit.clock import millis
from dutyline.work import queue
from dutyline.work.registry import BatchContext, DuplicateHandler, JobContext, Registry
from dutyline.work.worker import Worker
from tests.fixtures.clock import FakeClock
from tests.work.batches_for_test import BATCH_KIND, BATCH_MARK, SOLO_KIND, BatchJobs
from tests.work.jobs_for_test import effects, eventually, jobs_metric
from tests.work.test_queue import job_row

pytestmark = pytest.mark.anyio

LEASE_MS = 30_000


async def enqueue(db: Database, now_ms: int, *kinds: str) -> list[int]:
    """One job per kind given, in that order (so ids, and the claim order, follow it)."""
    ids: list[int] = []
    async with db.transaction() as conn:
        for n, kind in enumerate(kinds):
            job_id = await queue.enqueue(conn, kind, {"n": n}, now_ms=now_ms)
            assert job_id is not None
            ids.append(job_id)
    return ids


async def states(db: Database, ids: list[int]) -> list[tuple[str, int, str | None]]:
    """(status, attempts, lease_owner) of each job, in the order of `ids`."""
    rows = [await job_row(db, i) for i in ids]
    return [(r.status, int(r.attempts), r.lease_owner) for r in rows]


def unit_ids(units: list[list[queue.ClaimedJob]]) -> list[list[int]]:
    return [[c.id for c in unit] for unit in units]


def make_worker(runtime: Runtime, registry: Registry, name: str, **kw: Any) -> Worker:
    return Worker(runtime, registry=registry, worker_id=name, **kw)


# 1. One call for several due jobs; effects and `done`s commit together.

async def test_batch_handler_gets_due_jobs_in_one_call_committed_with_their_done(
        runtime: Runtime) -> None:
    jobs = BatchJobs(max_size=8)
    db = runtime.db
    ids = await enqueue(db, millis(runtime.clock), BATCH_KIND, BATCH_KIND, BATCH_KIND)
    seen: dict[str, Any] = {}

    async def after_write(ctx: BatchContext) -> None:
        # Written but not committed: seen from outside, no effects and nothing done yet.
        seen["effects"] = await effects(runtime)
        seen["states"] = await states(db, ids)

    jobs.after_write = after_write
    w = make_worker(runtime, jobs.registry, "w1")
    units = await w.units(await w.claim(10), more_due=False)
    assert unit_ids(units) == [ids]
    assert await w.run_unit(units[0]) == "done"

    assert jobs.batch_calls == [ids] and jobs.single_calls == []
    assert jobs.batch_attempts == [[1, 1, 1]]
    assert seen["effects"] == [] and seen["states"] == [("running", 1, "w1")] * 3
    assert await effects(runtime) == [(i, "w1" + BATCH_MARK, 1) for i in ids]
    assert await states(db, ids) == [("done", 1, None)] * 3
    assert jobs_metric(runtime, BATCH_KIND, "done") == 3


# 2. What claimed jobs run as.

async def test_units_fill_a_batch_with_its_own_kind_when_more_is_due(runtime: Runtime) -> None:
    jobs = BatchJobs(max_size=3)
    db = runtime.db
    solo1, many1, solo2, many2, many3, many4, many5 = await enqueue(
        db, millis(runtime.clock), SOLO_KIND, BATCH_KIND, SOLO_KIND, BATCH_KIND, BATCH_KIND,
        BATCH_KIND, BATCH_KIND)
    w = make_worker(runtime, jobs.registry, "w1")
    claimed = await w.claim(2)
    assert [c.id for c in claimed] == [solo1, many1]

    # Cut short by the free slots: the batch is filled by a claim of its own kind, up to its
    # max size, passing over the older job of another kind.
    units = await w.units(claimed, more_due=True)
    assert unit_ids(units) == [[solo1], [many1, many2, many3]]
    assert all(c.attempts == 1 and c.lease_owner == "w1" for u in units for c in u)
    assert await states(db, [solo2, many4, many5]) == [("pending", 0, None)] * 3
    assert await states(db, [many2, many3]) == [("running", 1, "w1")] * 2

    assert [await w.run_unit(u) for u in units] == ["done", "done"]
    assert jobs.single_calls == [solo1] and jobs.batch_calls == [[many1, many2, many3]]


async def test_units_claim_nothing_more_when_nothing_more_is_due(runtime: Runtime) -> None:
    jobs = BatchJobs(max_size=3)
    db = runtime.db
    solo, many1, many2 = await enqueue(db, millis(runtime.clock), SOLO_KIND, BATCH_KIND,
                                       BATCH_KIND)
    w = make_worker(runtime, jobs.registry, "w1")
    units = await w.units(await w.claim(2), more_due=False)
    assert unit_ids(units) == [[solo], [many1]]
    assert await states(db, [many2]) == [("pending", 0, None)]

    # A batch kind's job alone goes through the single handler.
    assert [await w.run_unit(u) for u in units] == ["done", "done"]
    assert jobs.batch_calls == [] and sorted(jobs.single_calls) == [solo, many1]


async def test_units_split_a_group_larger_than_max_size(runtime: Runtime) -> None:
    jobs = BatchJobs(max_size=3)
    db = runtime.db
    ids = await enqueue(db, millis(runtime.clock), *[BATCH_KIND] * 8)
    w = make_worker(runtime, jobs.registry, "w1")
    claimed = await w.claim(7)
    # More is due, but the group is past max_size already: nothing more is claimed.
    units = await w.units(claimed, more_due=True)
    assert unit_ids(units) == [ids[0:3], ids[3:6], ids[6:7]]
    assert await states(db, [ids[7]]) == [("pending", 0, None)]

    assert [await w.run_unit(u) for u in units] == ["done", "done", "done"]
    assert jobs.batch_calls == [ids[0:3], ids[3:6]] and jobs.single_calls == [ids[6]]
    assert [r[0] for r in await effects(runtime)] == ids[:7]


# 3. A failed batch commits nothing; its jobs run alone on the attempt already counted.

async def test_failed_batch_commits_nothing_and_each_job_runs_alone(
        runtime: Runtime, clock: FakeClock) -> None:
    jobs = BatchJobs(max_size=8)
    db = runtime.db
    a, b, c = ids = await enqueue(db, millis(runtime.clock), BATCH_KIND, BATCH_KIND, BATCH_KIND)
    jobs.batch_error = RuntimeError("the batch broke")
    jobs.failing_singles = {c}
    w = make_worker(runtime, jobs.registry, "w1")
    claimed = await w.claim(10)
    assert await w.execute_batch(claimed) == "split"

    assert jobs.batch_calls == [ids] and sorted(jobs.single_calls) == ids
    # Not one row of the batch's: a and b by their single handlers, c by nobody.
    assert await effects(runtime) == [(a, "w1", 1), (b, "w1", 1)]
    assert await states(db, [a, b]) == [("done", 1, None)] * 2
    row = await job_row(db, c)
    assert (row.status, row.attempts, row.lease_owner) == ("pending", 1, None)
    assert row.last_error == f"RuntimeError: single handler of job {c} failed"
    assert jobs_metric(runtime, BATCH_KIND, "done") == 2
    assert jobs_metric(runtime, BATCH_KIND, "retry") == 1

    # Its retry is its second attempt: the failed batch did not spend one.
    jobs.failing_singles.clear()
    clock.advance(3600)
    [again] = await w.claim(10)
    assert (again.id, again.attempts) == (c, 2)
    assert await w.execute(again) == "done"
    assert (await effects(runtime))[-1] == (c, "w1", 2)


# 4. A lease lost during the batch: it rolls back, the jobs still ours complete alone.

async def test_lease_lost_during_a_batch_rolls_it_back_and_the_others_complete_alone(
        runtime: Runtime, clock: FakeClock) -> None:
    jobs = BatchJobs(max_size=8)
    db = runtime.db
    a, b, c = ids = await enqueue(db, millis(clock), BATCH_KIND, BATCH_KIND, BATCH_KIND)
    w = make_worker(runtime, jobs.registry, "w1", lease_ms=300)
    thief = make_worker(runtime, jobs.registry, "thief")
    stolen: list[queue.ClaimedJob] = []

    async def steal_c(ctx: BatchContext) -> None:
        # c's lease alone runs out; the reaper hands it back and `thief` claims it.
        async with db.transaction() as conn:
            await conn.execute(update(job).where(job.c.id == c)
                               .values(lease_expires_at=millis(clock) - 1))
        assert await queue.reap_expired(db, now_ms=millis(clock)) == (1, 0)
        stolen.extend(await thief.claim(5))
        # Past the lease the claim took, twice: the batch's heartbeat keeps extending the
        # leases it still holds, beat after beat, although one of its jobs is lost.
        for _ in range(2):
            clock.advance(5)
            await eventually(extended_to(millis(clock) + 300), within=10)

    def extended_to(target: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return [(await job_row(db, i)).lease_expires_at for i in (a, b)] == [target] * 2
        return check

    jobs.before_write = steal_c
    claimed = await w.claim(10)
    assert await w.execute_batch(claimed) == "split"

    assert [(s.id, s.attempts) for s in stolen] == [(c, 2)]
    # The handler itself went through: it was the fenced `done` that refused the batch.
    assert jobs.batch_returns == [ids]
    assert len(jobs.batch_calls) == 1 and Counter(jobs.single_calls) == {a: 1, b: 1, c: 1}
    assert await effects(runtime) == [(a, "w1", 1), (b, "w1", 1)]
    assert await states(db, ids) == [("done", 1, None), ("done", 1, None),
                                     ("running", 2, "thief")]
    assert jobs_metric(runtime, BATCH_KIND, "lease_lost") == 1
    assert jobs_metric(runtime, BATCH_KIND, "done") == 2

    assert await thief.execute(stolen[0]) == "done"
    assert await effects(runtime) == [(a, "w1", 1), (b, "w1", 1), (c, "thief", 2)]


# 5. A batch cancelled mid-handler hands every job back.

async def test_cancelled_batch_hands_every_job_back(runtime: Runtime) -> None:
    jobs = BatchJobs(max_size=8)
    db = runtime.db
    now = millis(runtime.clock)
    ids = await enqueue(db, now, BATCH_KIND, BATCH_KIND, BATCH_KIND)
    started = asyncio.Event()

    async def hang(ctx: BatchContext) -> None:
        started.set()
        await asyncio.Event().wait()

    jobs.after_write = hang  # its effects are written, not committed
    w = make_worker(runtime, jobs.registry, "w1")
    task = asyncio.create_task(w.execute_batch(await w.claim(10)))
    with anyio.fail_after(30):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await states(db, ids) == [("pending", 0, None)] * 3
    assert [(await job_row(db, i)).run_at for i in ids] == [now] * 3
    assert await effects(runtime) == []
    assert jobs.single_calls == []  # handed back, not split
    assert jobs_metric(runtime, BATCH_KIND, "released") == 3
    # Claimable again at once, on a first attempt.
    assert [(c.id, c.attempts) for c in await w.claim(10)] == [(i, 1) for i in ids]


# 6. The queue: a claim by kind, and done and heartbeat for several jobs at once.

async def test_claim_by_kind_takes_only_that_kind(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    a1, b1, a2, b2 = await enqueue(db, now, "a", "b", "a", "b")
    got = await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=10, kind="b")
    assert [(c.id, c.kind) for c in got] == [(b1, "b"), (b2, "b")]
    assert await states(db, [a1, a2]) == [("pending", 0, None)] * 2
    assert await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=10,
                             kind="b") == []
    [first] = await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=1, kind="a")
    assert first.id == a1


async def test_mark_done_of_several_jobs_is_all_or_nothing(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    a, b, c = await enqueue(db, now, "k", "k", "k")
    mine = await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=2)
    assert [j.id for j in mine] == [a, b]
    await queue.claim(db, "w2", now_ms=now, lease_ms=LEASE_MS, limit=1)

    with pytest.raises(queue.LeaseLost):
        async with db.transaction() as conn:
            await queue.mark_done(conn, [a, b, c], "w1", now_ms=now)
    assert await states(db, [a, b, c]) == [("running", 1, "w1"), ("running", 1, "w1"),
                                           ("running", 1, "w2")]

    async with db.transaction() as conn:
        await queue.mark_done(conn, [a, b], "w1", now_ms=now)
    assert await states(db, [a, b, c]) == [("done", 1, None), ("done", 1, None),
                                           ("running", 1, "w2")]
    # Done already: not ours any more either.
    with pytest.raises(queue.LeaseLost):
        async with db.transaction() as conn:
            await queue.mark_done(conn, [a], "w1", now_ms=now)


async def test_extend_lease_of_several_jobs_extends_those_still_ours(
        runtime: Runtime, clock: FakeClock) -> None:
    db, now = runtime.db, millis(clock)
    a, b, c = await enqueue(db, now, "k", "k", "k")
    await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=2)
    await queue.claim(db, "w2", now_ms=now, lease_ms=LEASE_MS, limit=1)
    clock.advance(10)
    later = millis(clock)

    assert await queue.extend_lease(db, [a, b, c], "w1", now_ms=later,
                                    lease_ms=LEASE_MS) is False
    leases = [(await job_row(db, i)).lease_expires_at for i in (a, b, c)]
    assert leases == [later + LEASE_MS, later + LEASE_MS, now + LEASE_MS]

    clock.advance(10)
    assert await queue.extend_lease(db, [a, b], "w1", now_ms=millis(clock),
                                    lease_ms=LEASE_MS) is True
    assert (await job_row(db, a)).lease_expires_at == millis(clock) + LEASE_MS


# 7. The registry's rules for batch handlers.

def test_registry_batch_rules() -> None:
    reg = Registry()

    async def single(ctx: JobContext, payload: dict[str, Any]) -> None: ...

    async def batch(ctx: BatchContext) -> None: ...

    async def other_batch(ctx: BatchContext) -> None: ...

    for too_small in (1, 0, -3):
        with pytest.raises(ValueError, match="at least two"):
            reg.register_batch("k", batch, max_size=too_small)

    reg.register_batch("k", batch, max_size=4)
    # No single handler to fall back on: not batched.
    assert reg.batch("k") is None
    reg.register("k", single)
    spec = reg.batch("k")
    assert spec is not None and spec.fn is batch and spec.max_size == 4

    reg.register_batch("k", batch, max_size=4)  # the same function again is fine
    with pytest.raises(DuplicateHandler, match="'k'"):
        reg.register_batch("k", other_batch, max_size=4)
    spec = reg.batch("k")
    assert spec is not None and spec.fn is batch

    decorated = reg.batch_handler("d")(other_batch)
    assert decorated is other_batch and reg.batch("d") is None
    reg.register("d", single)
    spec = reg.batch("d")
    assert spec is not None and spec.fn is other_batch and spec.max_size == 16
    assert reg.batch("unknown") is None


# 8. The loop with a batch kind.

async def test_loop_runs_each_job_once_in_fewer_calls_than_jobs(runtime: Runtime) -> None:
    jobs = BatchJobs(max_size=8)
    db = runtime.db
    kinds = [BATCH_KIND] * 30 + [SOLO_KIND] * 3
    ids = await enqueue(db, millis(runtime.clock), *kinds)
    batched, solo = ids[:30], ids[30:]
    stop = asyncio.Event()
    w = make_worker(runtime, jobs.registry, "loop", concurrency=2)
    task = asyncio.create_task(w.run(stop))

    async def all_ran() -> bool:
        return len(await effects(runtime)) >= len(ids)

    await eventually(all_ran, within=60)
    stop.set()
    with anyio.fail_after(30):
        await task

    rows = await effects(runtime)
    assert [r[0] for r in rows] == ids  # one row per job: none committed twice
    assert all(attempt == 1 for _, _, attempt in rows)
    assert {worker for job_id, worker, _ in rows if job_id in solo} == {"loop"}
    assert await states(db, ids) == [("done", 1, None)] * len(ids)

    # Every job went through exactly one handler call, and the batch kind's jobs through
    # fewer calls than there were jobs (only two slots, so batches were filled by kind).
    ran = [i for call in jobs.batch_calls for i in call] + jobs.single_calls
    assert sorted(ran) == ids
    assert jobs.batch_calls and all(len(call) <= 8 for call in jobs.batch_calls)
    # Without filling by kind a claim for one or two slots would make batches of two at
    # most: half as many calls as jobs, or more.
    batch_kind_calls = len(jobs.batch_calls) + len(set(jobs.single_calls) & set(batched))
    assert batch_kind_calls < len(batched) // 2
    assert set(jobs.single_calls) >= set(solo)
    assert jobs_metric(runtime, BATCH_KIND, "done") == 30
    assert jobs_metric(runtime, SOLO_KIND, "done") == 3
    async with db.connect() as conn:
        assert set((await conn.execute(select(job.c.status))).scalars()) == {"done"}
