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


@schedule_batch_handler(rules.SCHEDULE_KIND)
async def fire_rules(conn: AsyncConnection, fires: list[Fire]) -> None:
    """One evaluation job per fire of an enabled rule (a deleted or disabled rule has its
    schedule removed or paused with it, and is passed over here). No outbound call here:
    the scheduler's transaction must stay short."""
    enabled = await repo.enabled_rule_ids(conn, [f.owner_id for f in fires])
    payloads = [{"rule_id": int(f.owner_id), "due_ms": f.due_at_ms}
                for f in fires if f.owner_id in enabled]
    # One attempt: a failed evaluation is not retried late, the next fire runs on time.
    await queue.enqueue_many(conn, engine.EVAL_JOB, payloads, now_ms=fires[0].now_ms,
                             max_attempts=1)


@job_handler(engine.EVAL_JOB)
async def evaluate_rule(ctx: JobContext, payload: dict[str, Any]) -> None:
    await engine.evaluate(ctx.runtime, ctx.conn, rule_id=int(payload["rule_id"]),
                          due_ms=int(payload["due_ms"]))
