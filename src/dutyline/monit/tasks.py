"""Monit's background work: the rules' schedules (a scheduler batch handler that only queues
one evaluation job per fire) and the evaluation job itself (engine.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.monit import engine
from dutyline.monit import repository as repo
from dutyline.monit import service as rules
from dutyline.work import queue
from dutyline.work.registry import JobContext, job_handler
from dutyline.work.scheduler import Fire, schedule_batch_handler

RULES_PER_JOB = 50


@schedule_batch_handler(rules.SCHEDULE_KIND)
async def fire_rules(conn: AsyncConnection, fires: list[Fire]) -> None:
    """One evaluation job per fire of an enabled rule (a deleted or disabled rule has its
    schedule removed or paused with it, and is passed over here). No outbound call here:
    the scheduler's transaction must stay short."""
    enabled = await repo.enabled_rule_ids(conn, [f.owner_id for f in fires])
    due = [[int(f.owner_id), f.due_at_ms] for f in fires if f.owner_id in enabled]
    # A job per few rules: each evaluates its rules' queries together, and several jobs
    # spread over the workers' slots.
    payloads = [{"rules": due[n:n + RULES_PER_JOB]} for n in range(0, len(due), RULES_PER_JOB)]
    # One attempt: a failed evaluation is not retried late, the next fire runs on time.
    await queue.enqueue_many(conn, engine.EVAL_JOB, payloads, now_ms=fires[0].now_ms,
                             max_attempts=1)


@job_handler(engine.EVAL_JOB)
async def evaluate_rule(ctx: JobContext, payload: dict[str, Any]) -> None:
    items = [(int(rule_id), int(due_ms)) for rule_id, due_ms in payload["rules"]]
    await engine.evaluate_many(ctx.runtime, ctx.conn, items)
