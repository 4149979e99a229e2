"""Test-only batch handlers, on a Registry of their own (never the process-wide one).

`BatchJobs` holds a kind with both a single and a batch handler, and a kind with a single
handler only. Both handlers write one effect row per job in the transaction they are given
(tests/work/jobs_for_test.py's effect table, whose primary key is the job id, so a second
commit of a job's effects cannot go unnoticed); the batch handler marks its rows' worker
with BATCH_MARK, so a test can tell which path committed a job. Every call is recorded, and
a test can make a path fail or hook into the batch before or after it writes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import text

from dutyline.work.registry import BatchContext, JobContext, Registry
from tests.work.jobs_for_test import EFFECT_TABLE, write_effect

BATCH_KIND = "test.batch"
SOLO_KIND = "test.solo"
BATCH_MARK = ":batch"

Hook = Callable[[BatchContext], Awaitable[None]]


class BatchJobs:
    def __init__(self, *, max_size: int = 4) -> None:
        self.registry = Registry()
        self.batch_calls: list[list[int]] = []
        self.batch_attempts: list[list[int]] = []
        self.single_calls: list[int] = []
        # The batch calls that ran to their end without raising (so a batch that did not
        # commit after one of these was refused by the fence, not by its handler).
        self.batch_returns: list[list[int]] = []
        # The batch handler raises this after writing its effects, when set.
        self.batch_error: Exception | None = None
        # Job ids whose single handler raises (after writing its effect).
        self.failing_singles: set[int] = set()
        # Run inside the batch handler before it writes (nothing of the batch's transaction
        # is begun yet: on SQLite it holds no writer lock), and after it wrote.
        self.before_write: Hook | None = None
        self.after_write: Hook | None = None
        self.registry.register(BATCH_KIND, self.single)
        self.registry.register_batch(BATCH_KIND, self.batch, max_size=max_size)
        self.registry.register(SOLO_KIND, self.single)

    async def single(self, ctx: JobContext, payload: dict[str, Any]) -> None:
        self.single_calls.append(ctx.job_id)
        await write_effect(ctx)
        if ctx.job_id in self.failing_singles:
            raise RuntimeError(f"single handler of job {ctx.job_id} failed")

    async def batch(self, ctx: BatchContext) -> None:
        self.batch_calls.append([j.job_id for j in ctx.jobs])
        self.batch_attempts.append([j.attempt for j in ctx.jobs])
        if self.before_write is not None:
            await self.before_write(ctx)
        await ctx.conn.execute(
            text(f"INSERT INTO {EFFECT_TABLE} (job_id, worker_id, attempt) VALUES (:j, :w, :a)"),
            [{"j": j.job_id, "w": ctx.worker_id + BATCH_MARK, "a": j.attempt} for j in ctx.jobs],
        )
        if self.after_write is not None:
            await self.after_write(ctx)
        if self.batch_error is not None:
            raise self.batch_error
        self.batch_returns.append([j.job_id for j in ctx.jobs])

    def calls(self) -> int:
        return len(self.batch_calls) + len(self.single_calls)
