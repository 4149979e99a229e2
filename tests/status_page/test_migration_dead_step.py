"""A migration whose step job dies without finishing: every attempt's worker stopped or
stalled mid-step, so the reaper buries the job when its last lease runs out. The migration
must then report failed, saying why, with its key erased, not stay "running" forever."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.work import job
from dutyline.status_page.migration.service import TASK_KIND
from dutyline.work import queue
from dutyline.work.registry import registry
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.status_page.admin_helpers import check_reference_schema
from tests.status_page.migration_support import (
    SMALL,
    fake,
    job_row,
    run_jobs,
    settings,
    start_structure,
    status,
)

pytestmark = pytest.mark.anyio
__all__ = ["fake", "settings"]  # fixtures, used by name

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
LEASE_MS = 30_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


async def step_job(api: Api) -> tuple[str, int, int]:
    """(status, attempts, max_attempts) of the migration's one unfinished step job."""
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(
            select(job.c.status, job.c.attempts, job.c.max_attempts)
            .where(job.c.kind == TASK_KIND, job.c.status != queue.DONE))).all()
    [(state, attempts, max_attempts)] = rows
    return str(state), int(attempts), int(max_attempts)


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_a_step_whose_last_lease_expires_fails_the_migration_and_erases_the_key(
    api: Api, owner: Person, clock: FakeClock
) -> None:
    import dutyline.status_page.migration.tasks  # noqa: F401  (registers the kind and hook)

    job_id = await start_structure(api, owner.key)
    assert await run_jobs(api, limit=1) == ["done"]  # the page step
    state, attempts, max_attempts = await step_job(api)
    assert (state, attempts) == (queue.PENDING, 0)

    worker = Worker(api.runtime, registry=registry, worker_id="w", lease_ms=LEASE_MS)
    for attempt in range(1, max_attempts + 1):
        # A worker claims the step, then dies (or stalls) before finishing it.
        [claimed] = await worker.claim(1)
        assert claimed.attempts == attempt
        clock.advance(LEASE_MS / 1000 + 1)
        if attempt < max_attempts:
            await worker.reap()  # handed back for another attempt; the migration goes on
            record = (await status(api, owner.key, job_id)).data
            assert record["status"] == "running"
            assert (await job_row(api, job_id)).api_key_sealed != ""
    await worker.reap()  # the last lease ran out: the job is buried, its hook runs

    assert await step_job(api) == (queue.DEAD, max_attempts, max_attempts)
    record = (await status(api, owner.key, job_id)).data
    check_reference_schema("StatusPageMigrationJob", record)
    assert record["status"] == "failed"
    assert record["error"] == (
        f"the migration stopped after {max_attempts} attempts: its last attempt did not "
        "finish in time (the worker running it stopped or stalled)")
    assert record["updated_at"] == int(clock.now())
    assert record["phase"] == "structure" and record["progress"]["completed_steps"] == 1
    assert (await job_row(api, job_id)).api_key_sealed == ""

    # Nothing is left to run, and a later reap changes nothing.
    updated = record["updated_at"]
    clock.advance(60)
    await worker.reap()
    assert await run_jobs(api) == []
    assert (await status(api, owner.key, job_id)).data["updated_at"] == updated


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_a_cancelled_migration_stays_cancelled_when_its_step_dies(
    api: Api, owner: Person, clock: FakeClock
) -> None:
    import dutyline.status_page.migration.tasks  # noqa: F401

    job_id = await start_structure(api, owner.key)
    worker = Worker(api.runtime, registry=registry, worker_id="w", lease_ms=LEASE_MS)
    _, _, max_attempts = await step_job(api)
    for attempt in range(1, max_attempts + 1):
        await worker.claim(1)
        clock.advance(LEASE_MS / 1000 + 1)
        if attempt == max_attempts:  # cancelled while its last attempt hangs
            reply = await api.call("/status-page/migration/cancel", {"job_id": job_id},
                                   key=owner.key)
            assert reply.status == 200
        await worker.reap()
    assert (await step_job(api))[0] == queue.DEAD
    record = (await status(api, owner.key, job_id)).data
    assert record["status"] == "cancelled" and "error" not in record
