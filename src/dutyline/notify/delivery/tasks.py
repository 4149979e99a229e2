"""The delivery job: one attempt of one delivery.

The attempt is made outside any write transaction (the row is read on a short read
transaction of its own), so a slow receiver holds no lock, on SQLite the only writer's least
of all; its outcome is then written in the job's own transaction. A job runs once per
attempt number (its dedupe key); if a presumed-dead runner and its successor both send, the
receiver sees the same Idempotency-Key twice and only one of them records the attempt."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import msgspec
import structlog

from dutyline.api.runtime import Runtime
from dutyline.notify.delivery import repository as repo
from dutyline.notify.delivery import service
from dutyline.notify.delivery.adapters import adapter, needs
from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, session_for
from dutyline.work.registry import BatchContext, JobContext, job_batch_handler, job_handler

log = structlog.get_logger("dutyline.notify.delivery")
_json = msgspec.json.Decoder()


def send_env(runtime: Runtime) -> SendEnv:
    policy = needs.policy_of(runtime.settings, runtime.outbound_policy())
    env = SendEnv(settings=runtime.settings, policy=policy, secrets=runtime.secrets,
                  clock=runtime.clock)
    return replace(env, session=runtime.kept_sessions.get("delivery", lambda: session_for(env)))


def _due(row: Any, attempt: int | None) -> bool:
    """Whether the job's attempt of this delivery is still to be made (a stale job's
    attempt number was made already)."""
    return (row is not None and row.status == service.PENDING
            and (attempt is None or int(row.attempts) + 1 == attempt))


def _attempt_of(payload: dict[str, Any]) -> int | None:
    return None if payload.get("attempt") is None else int(payload["attempt"])


async def _send(env: SendEnv, row: Any) -> Attempt:
    send = adapter(row.channel, personal=bool(row.person_id))
    if send is None:
        what = " for a person" if row.person_id else ""
        return Attempt(ok=False, retryable=False,
                       error=f"channel {row.channel!r} is not supported{what}")
    out = Outgoing(delivery_id=row.delivery_id, channel=row.channel, address=row.address,
                   content=_json.decode(row.content), attempt=int(row.attempts) + 1)
    try:
        return await send(env, out)
    except Exception as exc:  # an adapter's own fault (a secret sealed with an old key...)
        log.exception("notify.delivery.adapter_failed", delivery_id=row.delivery_id)
        return Attempt(ok=False, retryable=False, error=f"{type(exc).__name__}: {exc}")


def _log(row: Any, attempt: Attempt, status: str | None) -> None:
    fields = {"delivery_id": row.delivery_id, "incident_id": row.incident_id,
              "channel": row.channel, "person_id": row.person_id,
              "attempt": int(row.attempts) + 1, "ok": attempt.ok, "status": status}
    if attempt.ok:
        log.info("notify.delivery.attempt", **fields)
    else:
        # Nobody was reached this way: the operator must see why without reading the history.
        log.warning("notify.delivery.failed", **fields, reason=attempt.error)


async def _deliver(ctx: JobContext | BatchContext, payloads: list[dict[str, Any]]) -> None:
    """The attempts the jobs name: one read, the sends side by side (none waits on another's
    slow receiver longer than its own timeout), the outcomes written together in the job's
    (or batch's) transaction."""
    # A delivery may have a stale job beside its due one in a batch: it is due if any of
    # its jobs' attempts is still to be made, and then sent once.
    wanted: dict[str, list[int | None]] = {}
    for payload in payloads:
        wanted.setdefault(str(payload["delivery_id"]), []).append(_attempt_of(payload))
    async with ctx.runtime.db.statement(write=False) as reading:
        rows = await repo.get_deliveries(reading, list(wanted))
    rows = [row for row in rows
            if any(_due(row, attempt) for attempt in wanted[row.delivery_id])]
    if not rows:
        return
    env = send_env(ctx.runtime)
    attempts = await asyncio.gather(*(_send(env, row) for row in rows))
    outcomes = list(zip(rows, attempts, strict=True))
    statuses = await service.record_attempts(ctx.conn, ctx.clock, outcomes)
    for row, attempt, status in zip(rows, attempts, statuses, strict=True):
        _log(row, attempt, status)


@job_handler(service.DELIVER_JOB)
async def deliver(ctx: JobContext, payload: dict[str, Any]) -> None:
    await _deliver(ctx, [payload])


@job_batch_handler(service.DELIVER_JOB, max_size=32)
async def deliver_many(ctx: BatchContext) -> None:
    await _deliver(ctx, [job.payload for job in ctx.jobs])
