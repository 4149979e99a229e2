"""The auto-resolve timer: a durable job per incident, pushed out by every counted event
(grouping.schedule_auto_resolve), that closes the incident once the channel's
`auto_resolve_timeout` passed without a new event."""

from __future__ import annotations

from typing import Any

from dutyline.api.unit import system_actor
from dutyline.incident import state
from dutyline.incident.ingest import grouping
from dutyline.incident.ingest import repository as repo
from dutyline.incident.ingest.channels import load_settings
from dutyline.kit.vocabulary import CLOSED
from dutyline.work import queue
from dutyline.work.registry import JobContext, job_handler

# An incident that changed while this job was deciding is looked at again this much later.
RECHECK_S = 1


@job_handler(grouping.AUTO_RESOLVE_JOB)
async def auto_resolve(ctx: JobContext, payload: dict[str, Any]) -> None:
    incident_id = str(payload["incident_id"])
    conn = ctx.conn
    row = await repo.timer_incident(conn, incident_id)
    if row is None or row.progress == CLOSED:
        return
    settings = await load_settings(conn, system_actor(row.account_id, ctx.clock),
                                   channel_id=row.channel_id)
    if settings is None or settings.auto_resolve_timeout <= 0:
        return  # the channel turned auto-resolve off since
    if settings.auto_resolve_mode == "update":
        since = int(row.last_time)
    else:
        last_trigger = await conn.run_sync(repo.last_trigger_time, incident_id)
        since = int(row.start_time) if last_trigger is None else last_trigger
    now_s = int(ctx.clock.now())
    due = since + settings.auto_resolve_timeout
    if now_s >= due:
        closed = await conn.run_sync(
            state.close, incident_id=incident_id, account_id=row.account_id,
            channel_id=row.channel_id, now_s=now_s, reason=state.TIMED_OUT, end_alerts=True,
            if_last_time_at_most=int(row.last_time),
        )
        if closed:
            return
        due = now_s + RECHECK_S  # an event arrived meanwhile: decide again on fresh state
    # Not due yet (an event came while this job was already running, so it could not be
    # pushed out): hand the timer to a successor under the same key.
    await queue.drop_dedupe_key(conn, ctx.job_id)
    await queue.schedule(
        conn, grouping.AUTO_RESOLVE_JOB, {"incident_id": incident_id},
        now_ms=ctx.now_ms(), run_at_ms=due * 1000,
        dedupe_key=f"{grouping.AUTO_RESOLVE_JOB}:{incident_id}",
    )
