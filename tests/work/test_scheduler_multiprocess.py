"""Two real `dutyline worker` processes on one database fire every due time of every schedule
exactly once: no due time twice, none skipped (a late tick may coalesce due times, and then
says how many it stands for), on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import IO

import pytest
from sqlalchemy import func, select, text

from dutyline.db.engine import Database
from dutyline.db.tables.scheduler import work_schedule as schedule
from dutyline.kit.clock import SystemClock, millis
from dutyline.work import scheduler
from tests.fixtures.server import neutral_cwd
from tests.work.jobs_for_test import eventually
from tests.work.schedules_for_test import CREATE_FIRE_TABLE, TICK_KIND, fires

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

ROOT = Path(__file__).resolve().parents[2]
DUTYLINE = Path(sys.executable).parent / "dutyline"
SCHEDULES = 40
INTERVAL_MS = 700
FIRES_EACH = 6



async def _start(url: str, log: IO[bytes]) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        # This checkout's code (src) and its tests package, whatever the venv installed.
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "DUTYLINE_DATABASE_URL": url,
        "DUTYLINE_JOB_MODULES": "tests.work.schedules_for_test",
        "DUTYLINE_LOG_LEVEL": "warning",
        "DUTYLINE_SECRET_KEY": "scheduler-multiprocess-test",
    }
    return await asyncio.create_subprocess_exec(
        str(DUTYLINE), "worker", cwd=neutral_cwd(), env=env, stdout=log, stderr=log,
        stdin=asyncio.subprocess.DEVNULL,
    )


async def _stop(proc: asyncio.subprocess.Process) -> int:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return await asyncio.wait_for(proc.wait(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise


async def test_two_worker_processes_fire_each_due_time_once(
    own_database: str, tmp_path: Path
) -> None:
    db = Database(own_database)
    logs = [(tmp_path / f"worker-{i}.log").open("wb") for i in range(2)]
    procs: list[asyncio.subprocess.Process] = []
    try:
        now = millis(SystemClock())
        async with db.transaction() as conn:
            await conn.execute(text(CREATE_FIRE_TABLE))
            for n in range(SCHEDULES):
                await scheduler.set_schedule(conn, kind=TICK_KIND, owner_id=f"s{n:03d}",
                                             now_ms=now, interval_ms=INTERVAL_MS)
        procs = [await _start(own_database, log) for log in logs]

        async def every_schedule_fired_enough() -> bool:
            async with db.connect() as conn:
                # Only the test's schedules: the workers also keep the server's own
                # (retention), due an hour after they start.
                least = (await conn.execute(
                    select(func.min(schedule.c.fire_count))
                    .where(schedule.c.kind == TICK_KIND))).scalar_one()
            return int(least or 0) >= FIRES_EACH

        await eventually(every_schedule_fired_enough, within=120, every=0.2)
        assert [await _stop(p) for p in procs] == [0, 0]
        async with db.connect() as conn:
            got = await fires(conn)
            state = {r.owner_id: r for r in (await conn.execute(
                select(schedule).where(schedule.c.kind == TICK_KIND))).all()}
        by_owner: dict[str, list[tuple[int, int]]] = {}
        for owner, due, missed, _ in got:
            by_owner.setdefault(owner, []).append((due, missed))
        assert sorted(by_owner) == sorted(state)
        for owner, times in by_owner.items():
            dues = [d for d, _ in times]
            assert len(dues) == len(set(dues)), f"{owner} fired a due time twice"
            first = now + INTERVAL_MS
            # Every due time from the first to the last is accounted for exactly once: each
            # fire stands for itself and the `missed` ones right before it.
            covered = sum(1 + m for _, m in times)
            assert dues[-1] == first + (covered - 1) * INTERVAL_MS, owner
            assert state[owner].fire_count == len(times)
            assert state[owner].next_fire_at == dues[-1] + INTERVAL_MS
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()
        for f in logs:
            f.close()
        await db.dispose()
