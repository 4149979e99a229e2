"""Two real `dutyline worker` processes on one database run every job exactly once, also when
one of them is SIGKILLed in the middle of a job, and bury each dead job (running its on_dead
hook) exactly once when both reap the same expired leases.

Each run gets a database of its own (a new PostgreSQL database, or a new SQLite file): the
workers are other processes and must not see other tests' rows."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from sqlalchemy import func, select, text, update

from dutyline.db.engine import Database
from dutyline.db.tables.work import job
from dutyline.kit.clock import SystemClock, millis
from dutyline.work import queue
from tests.fixtures.server import neutral_cwd
from tests.work.jobs_for_test import (
    CREATE_DEAD_TABLE,
    CREATE_EFFECT_TABLE,
    DEAD_TABLE,
    EFFECT_KIND,
    EFFECT_TABLE,
    effect_rows,
    eventually,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

ROOT = Path(__file__).resolve().parents[2]
DUTYLINE = Path(sys.executable).parent / "dutyline"
JOBS = 2000
LEASE_SECONDS = 2
# Long enough that the kill surely lands while it sleeps; it only sleeps on the first attempt.
HANG_SECONDS = 120



@pytest.fixture
def worker_logs(tmp_path: Path) -> Iterator[list[IO[bytes]]]:
    files = [(tmp_path / f"worker-{i}.log").open("wb") for i in range(2)]
    yield files
    for f in files:
        f.close()


def _pid_of(worker_id: str) -> int:
    return int(worker_id.rsplit(":", 2)[1])


async def _setup(db: Database, hang_first: bool) -> list[int]:
    now = millis(SystemClock())
    async with db.transaction() as conn:
        await conn.execute(text(CREATE_EFFECT_TABLE))
        ids = []
        for n in range(JOBS):
            payload: dict[str, Any] = {"n": n}
            if hang_first and n == 0:
                payload["hang_first_attempt"] = HANG_SECONDS
            ids.append(await queue.enqueue(conn, EFFECT_KIND, payload, now_ms=now))
    assert None not in ids
    return [i for i in ids if i is not None]


async def _start(
    url: str, log: IO[bytes], log_level: str = "warning"
) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        # This checkout's code (src) and its tests package, whatever the venv installed.
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "DUTYLINE_DATABASE_URL": url,
        "DUTYLINE_JOB_MODULES": "tests.work.jobs_for_test",
        "DUTYLINE_JOB_LEASE_SECONDS": str(LEASE_SECONDS),
        "DUTYLINE_WORKER_CONCURRENCY": "4",
        "DUTYLINE_LOG_LEVEL": log_level,
        "DUTYLINE_SECRET_KEY": "multiprocess-test",
    }
    return await asyncio.create_subprocess_exec(
        str(DUTYLINE), "worker", cwd=neutral_cwd(), env=env, stdout=log, stderr=log,
        stdin=asyncio.subprocess.DEVNULL,
    )


async def _done_count(db: Database) -> int:
    async with db.connect() as conn:
        q = select(func.count()).select_from(job).where(job.c.status == queue.DONE)
        return int((await conn.execute(q)).scalar_one())


async def _stop(proc: asyncio.subprocess.Process) -> int:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return await asyncio.wait_for(proc.wait(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise


async def _check_exactly_once(db: Database, ids: list[int]) -> list[tuple[int, str, int]]:
    async with db.connect() as conn:
        rows = await effect_rows(conn)
        statuses = dict((await conn.execute(select(job.c.status, func.count()).group_by(
            job.c.status))).all())
        dupes = (await conn.execute(text(
            f"SELECT count(*) FROM (SELECT job_id FROM {EFFECT_TABLE} GROUP BY job_id "
            "HAVING count(*) > 1) d"))).scalar_one()
    assert statuses == {queue.DONE: JOBS}
    assert dupes == 0
    assert [r[0] for r in rows] == ids
    return rows


def _report(worker_logs: list[IO[bytes]]) -> str:
    out = []
    for f in worker_logs:
        f.flush()
        out.append(Path(f.name).read_text(errors="replace")[-3000:])
    return "\n----\n".join(out)


async def test_two_worker_processes_run_each_job_exactly_once(
    own_database: str, worker_logs: list[IO[bytes]]
) -> None:
    db = Database(own_database)
    procs: list[asyncio.subprocess.Process] = []
    try:
        ids = await _setup(db, hang_first=False)
        procs = [await _start(own_database, log) for log in worker_logs]

        async def all_done() -> bool:
            return await _done_count(db) == JOBS

        try:
            await eventually(all_done, within=120, every=0.1)
        except TimeoutError:
            pytest.fail(f"jobs not done; worker logs:\n{_report(worker_logs)}")
        codes = [await _stop(p) for p in procs]
        assert codes == [0, 0], _report(worker_logs)
        rows = await _check_exactly_once(db, ids)
        # Both processes took part: the exactly-once result is not one process working alone.
        assert {_pid_of(worker) for _, worker, _ in rows} == {p.pid for p in procs}
        assert {attempt for _, _, attempt in rows} == {1}
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()
        await db.dispose()


async def test_job_of_a_killed_worker_runs_again_after_its_lease_expires(
    own_database: str, worker_logs: list[IO[bytes]]
) -> None:
    db = Database(own_database)
    procs: list[asyncio.subprocess.Process] = []
    try:
        ids = await _setup(db, hang_first=True)
        hung = ids[0]
        procs = [await _start(own_database, log) for log in worker_logs]
        owner: dict[str, str] = {}

        async def hung_job_claimed() -> bool:
            async with db.connect() as conn:
                row = (await conn.execute(
                    select(job.c.status, job.c.lease_owner).where(job.c.id == hung))).one()
            if row.status == queue.RUNNING and row.lease_owner:
                owner["id"] = row.lease_owner
                return True
            return False

        await eventually(hung_job_claimed, within=60)
        victim = next(p for p in procs if p.pid == _pid_of(owner["id"]))
        survivor = next(p for p in procs if p is not victim)
        victim.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(victim.wait(), 30) == -signal.SIGKILL

        async def all_done() -> bool:
            return await _done_count(db) == JOBS

        try:
            await eventually(all_done, within=120, every=0.1)
        except TimeoutError:
            pytest.fail(f"jobs not done; worker logs:\n{_report(worker_logs)}")
        assert await _stop(survivor) == 0, _report(worker_logs)
        rows = await _check_exactly_once(db, ids)

        # The hung job was interrupted mid-run (nothing of it committed by the victim), its
        # lease ran out, and the survivor ran it to completion as a second attempt.
        effect = next(r for r in rows if r[0] == hung)
        assert _pid_of(effect[1]) == survivor.pid
        assert effect[2] == 2
        async with db.connect() as conn:
            attempts = (await conn.execute(
                select(job.c.attempts).where(job.c.id == hung))).scalar_one()
        assert attempts == 2
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()
        await db.dispose()


DEAD_JOBS = 300


async def test_two_reaping_processes_run_each_on_dead_hook_once(
    own_database: str, worker_logs: list[IO[bytes]]
) -> None:
    """Once both workers run, jobs appear whose worker vanished on their last attempt, their
    leases long expired; both workers reap every half second: each job is buried, and its
    hook run, by exactly one of them."""
    db = Database(own_database)
    procs: list[asyncio.subprocess.Process] = []
    try:
        async with db.transaction() as conn:
            await conn.execute(text(CREATE_DEAD_TABLE))
        procs = [await _start(own_database, log, "info") for log in worker_logs]

        async def both_running() -> bool:
            logs = [await anyio.Path(f.name).read_bytes() for f in worker_logs]
            return all(b"worker started" in log for log in logs)

        await eventually(both_running, within=60, every=0.1)
        now = millis(SystemClock())
        async with db.transaction() as conn:
            ids = [await queue.enqueue(conn, EFFECT_KIND, {"n": n}, now_ms=now,
                                       max_attempts=1) for n in range(DEAD_JOBS)]
            # In the same transaction, so neither worker can claim them first: each one is
            # on its only attempt, leased to a worker that is gone.
            await conn.execute(update(job).where(job.c.id.in_(ids)).values(
                status=queue.RUNNING, attempts=1, lease_owner="gone:1:0",
                lease_expires_at=now - 60_000))

        async def all_buried() -> bool:
            async with db.connect() as conn:
                q = select(func.count()).select_from(job).where(job.c.status == queue.DEAD)
                return int((await conn.execute(q)).scalar_one()) == DEAD_JOBS

        try:
            await eventually(all_buried, within=120, every=0.1)
        except TimeoutError:
            pytest.fail(f"jobs not buried; worker logs:\n{_report(worker_logs)}")
        codes = [await _stop(p) for p in procs]
        assert codes == [0, 0], _report(worker_logs)
        async with db.connect() as conn:
            buried = (await conn.execute(text(
                f"SELECT job_id, pid FROM {DEAD_TABLE} ORDER BY job_id"))).all()
            errors = set((await conn.execute(select(job.c.last_error))).scalars())
        assert [int(r[0]) for r in buried] == ids
        assert {int(r[1]) for r in buried} <= {p.pid for p in procs}
        assert errors == {queue.LEASE_EXPIRED}  # no hook failed
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()
        await db.dispose()
