"""The delivery job: one attempt of one delivery (or of each delivery of a batch).

The attempts are made outside any write transaction (the rows are read on a short read
transaction of their own), so a slow receiver holds no lock, on SQLite the only writer's
least of all. Each outcome is committed as soon as its receiver answers, in a short
transaction of its own (the outcomes that arrive while one commits go into the next), not
with the rest of the batch: a worker that dies mid-batch leaves unrecorded only the sends
still waiting for an answer, and only those are sent again when its lease runs out.

Before sending, the job holds its lease for the longest an attempt may take
(ATTEMPT_TIMEOUT_S, which cuts a send off), so no other worker takes a delivery whose
send is still in flight; a job whose lease was taken meanwhile sends nothing (its new
owner does). A job runs once per attempt number (its dedupe key), and an attempt is
recorded once (repository.finish_attempts): a resent attempt carries the same
Idempotency-Key, for the receivers that drop repeats (at least once, never lost)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import structlog

from dutyline.api.runtime import Runtime
from dutyline.notify.delivery import repository as repo
from dutyline.notify.delivery import service
from dutyline.notify.delivery.adapters import adapter
from dutyline.notify.delivery.adapters.base import (
    ATTEMPT_TIMEOUT_S,
    Attempt,
    Outgoing,
    SendEnv,
)
from dutyline.work import queue
from dutyline.work.registry import BatchContext, JobContext, job_batch_handler, job_handler

log = structlog.get_logger("dutyline.notify.delivery")
_json = msgspec.json.Decoder()


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
        async with asyncio.timeout(ATTEMPT_TIMEOUT_S):
            return await send(env, out)
    except TimeoutError:
        return Attempt(ok=False, error=f"no answer within {ATTEMPT_TIMEOUT_S:g} s")
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


# What a delivery job holds its lease for beyond its longest send: time to record the outcome.
RECORD_MARGIN_S = 5


async def _hold_lease(ctx: JobContext | BatchContext, job_ids: list[int]) -> None:
    """Hold the jobs' leases for the longest send and the outcome's record (the loop's
    heartbeat never shortens a lease), or raise LeaseLost when another worker took any of
    them meanwhile: its new owner sends, this one must not."""
    settings = ctx.runtime.settings
    hold_s = max(settings.job_lease_seconds, ATTEMPT_TIMEOUT_S + RECORD_MARGIN_S)
    if not await queue.extend_lease(ctx.runtime.db, job_ids, ctx.worker_id,
                                    now_ms=ctx.now_ms(), lease_ms=int(hold_s * 1000)):
        raise queue.LeaseLost(f"delivery jobs {job_ids} are no longer leased to "
                              f"{ctx.worker_id}; not sending")


async def _send_and_record(runtime: Runtime, rows: list[Any]) -> None:
    """Send side by side (none waits on another's slow receiver longer than its own
    timeout) and commit each outcome as soon as its receiver answers; the outcomes that
    arrive while a commit runs go into the next one."""
    env = service.send_env(runtime)
    sending = {asyncio.create_task(_send(env, row)): row for row in rows}
    try:
        while sending:
            answered, _ = await asyncio.wait(sending, return_when=asyncio.FIRST_COMPLETED)
            outcomes = [(sending.pop(task), task.result()) for task in answered]
            async with runtime.db.transaction(write=True) as conn:
                statuses = await service.record_attempts(conn, runtime.clock, outcomes)
            for (row, attempt), status in zip(outcomes, statuses, strict=True):
                _log(row, attempt, status)
    finally:
        # Stopped (shutdown) or a record failed: the sends still out are left unrecorded,
        # and their jobs send them again.
        for task in sending:
            task.cancel()
        await asyncio.gather(*sending, return_exceptions=True)


async def _deliver(ctx: JobContext | BatchContext, jobs: list[tuple[int, dict[str, Any]]]
                   ) -> None:
    """The attempts the jobs (id, payload) name: one read, the lease held, the sends side
    by side, each outcome committed when its receiver answers (`_send_and_record`)."""
    # A delivery may have a stale job beside its due one in a batch: it is due if any of
    # its jobs' attempts is still to be made, and then sent once.
    wanted: dict[str, list[int | None]] = {}
    for _, payload in jobs:
        wanted.setdefault(str(payload["delivery_id"]), []).append(_attempt_of(payload))
    async with ctx.runtime.db.statement(write=False) as reading:
        rows = await repo.get_deliveries(reading, list(wanted))
    rows = [row for row in rows
            if any(_due(row, attempt) for attempt in wanted[row.delivery_id])]
    if not rows:
        return
    await _hold_lease(ctx, [job_id for job_id, _ in jobs])
    await _send_and_record(ctx.runtime, rows)


@job_handler(service.DELIVER_JOB)
async def deliver(ctx: JobContext, payload: dict[str, Any]) -> None:
    await _deliver(ctx, [(ctx.job_id, payload)])


@job_batch_handler(service.DELIVER_JOB, max_size=64)
async def deliver_many(ctx: BatchContext) -> None:
    await _deliver(ctx, [(job.job_id, job.payload) for job in ctx.jobs])
