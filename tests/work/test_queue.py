"""The job table's state machine: enqueue, dedupe, claim, reaper, retention."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select

from dutyline.api.runtime import Runtime
from dutyline.db.engine import Database
from dutyline.db.tables.work import job
from dutyline.kit.clock import millis
from dutyline.work import queue
from tests.fixtures.clock import FakeClock

pytestmark = pytest.mark.anyio

LEASE_MS = 30_000


async def job_row(db: Database, job_id: int) -> Any:
    async with db.connect() as conn:
        return (await conn.execute(select(job).where(job.c.id == job_id))).one()


async def job_count(db: Database) -> int:
    async with db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(job))).scalar_one())


async def add(db: Database, now_ms: int, kind: str = "k", **kw: Any) -> int | None:
    async with db.transaction() as conn:
        return await queue.enqueue(conn, kind, kw.pop("payload", {}), now_ms=now_ms, **kw)


async def test_enqueue_in_rolled_back_transaction_leaves_nothing(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)

    async def failing_request() -> None:
        async with db.transaction() as conn:
            assert await queue.enqueue(conn, "k", {"a": 1}, now_ms=now) is not None
            raise RuntimeError("request failed")

    with pytest.raises(RuntimeError, match="request failed"):
        await failing_request()
    assert await job_count(db) == 0

    job_id = await add(db, now, payload={"a": 1})
    assert job_id is not None
    row = await job_row(db, job_id)
    assert (row.status, row.payload, row.run_at, row.attempts) == ("pending", '{"a":1}', now, 0)


async def test_dedupe_key_is_held_until_the_job_finishes(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    first = await add(db, now, dedupe_key="incident:1")
    assert first is not None
    assert await add(db, now, dedupe_key="incident:1") is None
    other = await add(db, now, dedupe_key="incident:2")
    assert other is not None
    assert await job_count(db) == 2

    # Still held while running.
    claimed = await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=10)
    assert {c.id for c in claimed} == {first, other}
    assert await add(db, now, dedupe_key="incident:1") is None

    async with db.transaction() as conn:
        await queue.mark_done(conn, first, "w1", now_ms=now)
    assert (await job_row(db, first)).dedupe_key is None
    again = await add(db, now, dedupe_key="incident:1")
    assert again is not None and again != first


async def test_dead_job_releases_its_dedupe_key(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    job_id = await add(db, now, dedupe_key="once", max_attempts=1)
    [claimed] = await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=1)
    assert await queue.mark_failed(db, claimed, "boom", now_ms=now) == "dead"
    row = await job_row(db, job_id)  # type: ignore[arg-type]
    assert (row.status, row.dedupe_key, row.last_error) == ("dead", None, "boom")
    assert await add(db, now, dedupe_key="once") is not None


async def test_claim_leases_due_jobs_oldest_first(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    later = await add(db, now, run_at_ms=now + 60_000)
    second = await add(db, now, run_at_ms=now - 1)
    first = await add(db, now, run_at_ms=now - 5)
    third = await add(db, now, payload={"x": [1, 2]})

    got = await queue.claim(db, "w1", now_ms=now, lease_ms=LEASE_MS, limit=2)
    assert [c.id for c in got] == sorted([first, second])  # type: ignore[type-var]
    for c in got:
        assert (c.attempts, c.lease_owner, c.lease_expires_at) == (1, "w1", now + LEASE_MS)
        row = await job_row(db, c.id)
        assert (row.status, row.lease_owner, row.lease_expires_at, row.attempts) == (
            "running", "w1", now + LEASE_MS, 1,
        )
    [rest] = await queue.claim(db, "w2", now_ms=now, lease_ms=LEASE_MS, limit=10)
    assert (rest.id, rest.payload) == (third, {"x": [1, 2]})
    assert await queue.claim(db, "w2", now_ms=now, lease_ms=LEASE_MS, limit=10) == []
    # The future job becomes claimable when it is due.
    [due] = await queue.claim(db, "w2", now_ms=now + 60_000, lease_ms=LEASE_MS, limit=10)
    assert due.id == later


async def test_concurrent_claimers_never_share_a_job(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    async with db.transaction() as conn:
        ids = [await queue.enqueue(conn, "k", {"n": n}, now_ms=now) for n in range(300)]
    # A separate pool per claimer on PostgreSQL would not add anything: SKIP LOCKED works per
    # transaction, and each claim is its own transaction on its own pooled connection.
    taken: dict[str, list[int]] = {}

    async def claimer(name: str) -> None:
        mine = taken.setdefault(name, [])
        while batch := await queue.claim(db, name, now_ms=now, lease_ms=LEASE_MS, limit=7):
            mine.extend(c.id for c in batch)
            await asyncio.sleep(0)

    await asyncio.gather(*(claimer(f"w{i}") for i in range(8)))
    every = [i for got in taken.values() for i in got]
    assert len(every) == len(set(every)) == 300
    assert set(every) == set(ids)
    # The work was actually spread, not taken by one claimer before the others started.
    assert sum(1 for got in taken.values() if got) > 1
    async with db.connect() as conn:
        owners = dict((await conn.execute(select(job.c.id, job.c.lease_owner))).all())
    assert all(owners[i] == name for name, got in taken.items() for i in got)


async def test_reaper_requeues_expired_leases_and_buries_spent_jobs(
    runtime: Runtime, clock: FakeClock
) -> None:
    db, now = runtime.db, millis(clock)
    retry = await add(db, now, max_attempts=3)
    spent = await add(db, now, max_attempts=1, dedupe_key="spent")
    await queue.claim(db, "w1", now_ms=now, lease_ms=1_000, limit=2)
    fresh = await add(db, now)
    await queue.claim(db, "w2", now_ms=now, lease_ms=LEASE_MS, limit=1)

    assert await queue.reap_expired(db, now_ms=now + 1_000) == (0, 0)  # not yet expired
    assert await queue.reap_expired(db, now_ms=now + 1_001) == (1, 1)

    r = await job_row(db, retry)  # type: ignore[arg-type]
    assert (r.status, r.last_error, r.lease_owner, r.lease_expires_at, r.attempts, r.run_at) == (
        "pending", "lease expired", None, None, 1, now + 1_001,
    )
    s = await job_row(db, spent)  # type: ignore[arg-type]
    assert (s.status, s.last_error, s.dedupe_key) == ("dead", "lease expired", None)
    f = await job_row(db, fresh)  # type: ignore[arg-type]
    assert (f.status, f.lease_owner) == ("running", "w2")
    # The requeued job runs again, as a second attempt.
    [again] = await queue.claim(db, "w3", now_ms=now + 1_001, lease_ms=LEASE_MS, limit=5)
    assert (again.id, again.attempts) == (retry, 2)


async def test_heartbeat_extension_is_fenced_on_the_owner(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    job_id = await add(db, now)
    await queue.claim(db, "w1", now_ms=now, lease_ms=1_000, limit=1)
    assert not await queue.extend_lease(db, job_id, "w2", now_ms=now + 500, lease_ms=1_000)  # type: ignore[arg-type]
    assert await queue.extend_lease(db, job_id, "w1", now_ms=now + 500, lease_ms=1_000)  # type: ignore[arg-type]
    assert (await job_row(db, job_id)).lease_expires_at == now + 1_500  # type: ignore[arg-type]
    assert await queue.reap_expired(db, now_ms=now + 1_200) == (0, 0)


async def test_a_heartbeat_never_shortens_a_lease_held_longer(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    job_id = await add(db, now)
    await queue.claim(db, "w1", now_ms=now, lease_ms=1_000, limit=1)
    # Held for a long send, then the loop's heartbeat with its own, shorter lease.
    assert await queue.extend_lease(db, job_id, "w1", now_ms=now, lease_ms=60_000)  # type: ignore[arg-type]
    assert await queue.extend_lease(db, job_id, "w1", now_ms=now + 500, lease_ms=1_000)  # type: ignore[arg-type]
    assert (await job_row(db, job_id)).lease_expires_at == now + 60_000  # type: ignore[arg-type]
    assert await queue.reap_expired(db, now_ms=now + 30_000) == (0, 0)


async def test_prune_deletes_only_old_done_jobs(runtime: Runtime) -> None:
    db, now = runtime.db, millis(runtime.clock)
    ids = [await add(db, now) for _ in range(5)]
    claimed = await queue.claim(db, "w", now_ms=now, lease_ms=LEASE_MS, limit=3)
    async with db.transaction() as conn:
        await queue.mark_done(conn, claimed[0].id, "w", now_ms=now - 10)
        await queue.mark_done(conn, claimed[1].id, "w", now_ms=now + 10)
    await queue.mark_failed(db, claimed[2], "x", now_ms=now - 10)  # back to pending
    assert await queue.prune_done(db, older_than_ms=now, batch=1) == 1
    async with db.connect() as conn:
        left = set((await conn.execute(select(job.c.id))).scalars())
    assert left == set(ids) - {claimed[0].id}


@given(attempts=st.integers(min_value=0, max_value=200), seed=st.integers(0, 2**32))
def test_retry_delay_is_exponential_capped_and_jittered(attempts: int, seed: int) -> None:
    delay = queue.retry_delay_ms(attempts, rng=random.Random(seed))
    ceiling = min(queue.RETRY_BASE_MS * 2 ** min(attempts, 40), queue.RETRY_CAP_MS)
    assert ceiling // 2 <= delay <= ceiling <= queue.RETRY_CAP_MS


def test_last_error_is_truncated() -> None:
    assert queue.truncate_error("short") == "short"
    long = queue.truncate_error("x" * 10_000)
    assert len(long) == queue.LAST_ERROR_MAX and long.endswith("...")
