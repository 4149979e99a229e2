"""The delivery job: one attempt of one delivery.

The attempt is made outside any write transaction (the row is read on a short read
transaction of its own), so a slow receiver holds no lock, on SQLite the only writer's least
of all; its outcome is then written in the job's own transaction. A job runs once per
attempt number (its dedupe key); if a presumed-dead runner and its successor both send, the
receiver sees the same Idempotency-Key twice and only one of them records the attempt."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import msgspec
import structlog

from dutyline.api.actor import Actor
from dutyline.notify.delivery import repository as repo
from dutyline.notify.delivery import service
from dutyline.notify.delivery.adapters import adapter
from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, client_for
from dutyline.work.registry import JobContext, job_handler

log = structlog.get_logger("dutyline.notify.delivery")
_json = msgspec.json.Decoder()


def send_env(ctx: JobContext) -> SendEnv:
    runtime = ctx.runtime
    policy = runtime.outbound_policy()
    # `host:port` pairs let through whatever they resolve to while everything else stays
    # guarded (settings.extra; the tests' loopback receivers).
    allowed = runtime.settings.extra.get("outbound_allow_hosts")
    if allowed:
        policy = replace(policy, allow_hosts=frozenset(allowed))
    env = SendEnv(settings=runtime.settings, policy=policy, secrets=runtime.secrets,
                  clock=runtime.clock)
    return replace(env, client=runtime.kept_clients.get("delivery", lambda: client_for(env)))


@job_handler(service.DELIVER_JOB)
async def deliver(ctx: JobContext, payload: dict[str, Any]) -> None:
    delivery_id = str(payload["delivery_id"])
    async with ctx.runtime.db.transaction(write=False) as reading:
        row = await repo.get_delivery(reading, delivery_id)
    if row is None or row.status != service.PENDING:
        return
    if int(row.attempts) + 1 != int(payload.get("attempt", row.attempts + 1)):
        return  # a stale job: this attempt number was made already
    actor = Actor.system(int(row.account_id), ctx.clock)
    send = adapter(row.channel, personal=bool(row.person_id))
    if send is None:
        what = " for a person" if row.person_id else ""
        await service.record_failure_without_attempt(
            ctx.conn, actor, row, f"channel {row.channel!r} is not supported{what}")
        return
    out = Outgoing(delivery_id=row.delivery_id, channel=row.channel, address=row.address,
                   content=_json.decode(row.content), attempt=int(row.attempts) + 1)
    try:
        attempt = await send(send_env(ctx), out)
    except Exception as exc:  # an adapter's own fault (a secret sealed with an old key...)
        log.exception("notify.delivery.adapter_failed", delivery_id=delivery_id)
        attempt = Attempt(ok=False, retryable=False, error=f"{type(exc).__name__}: {exc}")
    status = await service.record_attempt(ctx.conn, actor, row, attempt)
    log.info("notify.delivery.attempt", delivery_id=delivery_id, channel=row.channel,
             attempt=out.attempt, ok=attempt.ok, status=status)
