"""Test-only job handlers, loaded by real `dutyline worker` processes through
DUTYLINE_JOB_MODULES=tests.work.jobs_for_test, and by the in-process tests.

The effect table is created by the tests, never by migrations: it stands for a domain's own
rows, written in the job's transaction, with a unique job id so a second commit of the same
job's effects would be impossible to miss."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.runtime import Runtime
from dutyline.work.registry import DeadJobContext, JobContext, job_handler, job_on_dead

EFFECT_KIND = "test.effect"
EFFECT_TABLE = "work_test_effect"
CREATE_EFFECT_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {EFFECT_TABLE} ("
    " job_id BIGINT NOT NULL PRIMARY KEY,"
    " worker_id VARCHAR(64) NOT NULL,"
    " attempt INTEGER NOT NULL)"
)
DROP_EFFECT_TABLE = f"DROP TABLE IF EXISTS {EFFECT_TABLE}"
# Where the kind's on_dead hook notes each burial, and by which process: no key, so a job
# buried twice would show twice.
DEAD_TABLE = "work_test_dead"
CREATE_DEAD_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {DEAD_TABLE} (job_id BIGINT NOT NULL, pid INTEGER NOT NULL)"
)


async def write_effect(ctx: JobContext) -> None:
    await ctx.conn.execute(
        text(f"INSERT INTO {EFFECT_TABLE} (job_id, worker_id, attempt) VALUES (:j, :w, :a)"),
        {"j": ctx.job_id, "w": ctx.worker_id, "a": ctx.attempt},
    )


async def effect_rows(conn: AsyncConnection) -> list[tuple[int, str, int]]:
    rows = await conn.execute(
        text(f"SELECT job_id, worker_id, attempt FROM {EFFECT_TABLE} ORDER BY job_id")
    )
    return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]


def jobs_metric(runtime: Runtime, kind: str, outcome: str) -> float:
    value = runtime.metrics.registry.get_sample_value(
        "dutyline_jobs_total", {"kind": kind, "outcome": outcome}
    )
    return value or 0.0


async def effects(runtime: Runtime) -> list[tuple[int, str, int]]:
    async with runtime.db.connect() as conn:
        return await effect_rows(conn)


async def eventually(
    check: Callable[[], Awaitable[bool]], *, within: float = 30.0, every: float = 0.02
) -> None:
    """Poll until `check` holds; the limit only stops a broken run from hanging, it is not
    an assertion about speed."""
    with anyio.fail_after(within):
        while True:
            if await check():
                return
            await asyncio.sleep(every)


@job_handler(EFFECT_KIND)
async def record_effect(ctx: JobContext, payload: dict[str, Any]) -> None:
    # `hang_first_attempt`: sleep long on the first run, before touching the database (so a
    # SQLite writer lock is not held), giving a test the time to SIGKILL this process mid-job.
    if ctx.attempt == 1 and payload.get("hang_first_attempt"):
        await asyncio.sleep(float(payload["hang_first_attempt"]))
    await write_effect(ctx)


@job_on_dead(EFFECT_KIND)
async def record_death(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
    await ctx.conn.execute(
        text(f"INSERT INTO {DEAD_TABLE} (job_id, pid) VALUES (:j, :p)"),
        {"j": ctx.job_id, "p": os.getpid()},
    )
