"""Automation's background work: the schedule trigger (a scheduler handler), the on-call
incident trigger (an incident-event subscriber), and the run job with its on_dead hook.

Each fire becomes exactly one run: the scheduler calls `fire_schedule` in the transaction that
advances the schedule, and the incident subscriber runs as a fenced job, so the run row and its
job commit together with the fire, once."""

from __future__ import annotations

from typing import Any

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.automation import agent, runner_tools, runs
from dutyline.aisre.automation import repository as repo
from dutyline.aisre.automation import service as rules
from dutyline.api.actor import Actor
from dutyline.api.permissions import ENVIRONMENT_USE
from dutyline.api.unit import system_actor
from dutyline.incident.service import events
from dutyline.platform.role import service as role_service
from dutyline.work.registry import DeadJobContext, JobContext, job_handler, job_on_dead
from dutyline.work.scheduler import Fire, schedule_batch_handler

log = structlog.get_logger("dutyline.automation")


@schedule_batch_handler(rules.SCHEDULE_KIND)
async def fire_schedules(conn: AsyncConnection, fires: list[Fire]) -> None:
    """One run per fire of an enabled rule whose schedule trigger is on; a rule deleted or
    turned off since has its schedule removed or paused with it, and is passed over here."""
    on = {r.rule_id: r for r in await repo.scheduled_rules(
        conn, [f.owner_id for f in fires], trigger_kind=rules.SCHEDULE)}
    due = [(on[f.owner_id], on[f.owner_id].trigger_id, f.due_at_ms, f.missed)
           for f in fires if f.owner_id in on]
    if due:
        await runs.queue_scheduled_runs(conn, due, now_ms=fires[0].now_ms)


@events.subscriber("automation.oncall_incident", kinds=(events.CREATED,),
                   wants=runs.wants_incident_sync)
async def on_incident_event(ctx: JobContext, event: events.IncidentEvent) -> None:
    if event.kind != events.CREATED:
        return  # a job queued before subscribers named their kinds
    channel_id = int(event.payload.get("channel_id") or 0)
    severity = str(event.payload.get("severity") or "")
    if not channel_id or not severity:
        return
    await runs.fire_for_incident(
        ctx.conn, account_id=event.account_id, incident_id=event.incident_id,
        channel_id=channel_id, severity=severity, now_ms=ctx.now_ms(),
    )


@job_handler(runs.RUN_JOB)
async def execute_run(ctx: JobContext, payload: dict[str, Any]) -> None:
    """Run the agent loop. Everything before the final state is written in short transactions
    of its own (steps must be readable while it runs; on SQLite the job's transaction would
    hold the writer lock for the whole run); the final state goes in the job's transaction."""
    runtime = ctx.runtime
    run_id = str(payload["run_id"])
    async with runtime.db.transaction(write=True) as conn:
        run = await repo.get_run(conn, run_id)
        if run is None or run.status in runs.FINISHED:
            return
        rule = await repo.get_rule_any_account(conn, run.rule_id)
        now = ctx.now_ms()
        if rule is None or not rule.enabled:
            await repo.update_run(conn, run_id, {
                "status": runs.SKIPPED, "error": "the rule was deleted or disabled",
                "finished_at": now, "updated_at": now,
            })
            return
        # A retried attempt starts over: the steps of the attempt that died are dropped.
        await repo.delete_steps(conn, run_id)
        await repo.update_run(conn, run_id, {
            "status": runs.RUNNING, "started_at": now, "error": "", "updated_at": now})
    worknode_id = rule.environment_id if rule.environment_kind == "byoc" else ""
    unavailable = ""
    if worknode_id:
        async with runtime.db.transaction(write=False) as conn:
            system = system_actor(rule.account_id, runtime.clock)
            unavailable = await _refused_environment(conn, system, rule, run)
            unavailable = unavailable or await runner_tools.check_worknode(
                conn, system, worknode_id=worknode_id)
    if unavailable:
        # A byoc run never falls back to running its tools anywhere else.
        outcome = agent.Outcome(runs.FAILED, error=f"The run could not start: {unavailable}")
        await agent.Steps(runtime, run_id).add("error", "environment", outcome.error)
    else:
        outcome = await agent.run_loop(
            runtime, run_id=run_id, account_id=rule.account_id, team_id=rule.team_id,
            owner_id=rule.owner_id, prompt=rule.prompt, context=msgspec.json.decode(run.context),
            model=agent.model_of(runtime), worknode_id=worknode_id,
        )
    now = ctx.now_ms()
    await repo.update_run(ctx.conn, run_id, {
        "status": outcome.status, "answer": outcome.answer, "error": outcome.error,
        "finished_at": now, "updated_at": now,
    }, only_status=[runs.RUNNING])


async def _refused_environment(conn: AsyncConnection, system: Actor, rule: Any, run: Any) -> str:
    """'' when the people a byoc run acts for may still use worknodes, else why not.

    Checked when the run starts, not only when the rule was saved, so a role taken away
    applies to the next run. A run acts on the authority of its rule's creator (whatever
    fired it: a schedule, a token, an incident) and, for a run started by hand, also of the
    member who started it; each must hold environment_use (account_manage implies it)."""
    people = dict.fromkeys(p for p in (int(rule.owner_id), int(run.created_by)) if p)
    for person_id in people:
        held = await role_service.member_permissions(conn, system, member_id=person_id)
        if ENVIRONMENT_USE not in held:
            return (f"member {person_id} may not use BYOC runners (the {ENVIRONMENT_USE} "
                    "permission), so nothing was sent to the runner")
    return ""


@job_on_dead(runs.RUN_JOB)
async def run_died(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
    """The run's last attempt died (its worker stopped, or it failed): never leave it running."""
    now = ctx.now_ms()
    reason = ("its worker stopped while it ran" if ctx.lease_expired
              else f"it failed: {ctx.error}")
    await repo.update_run(ctx.conn, str(payload["run_id"]), {
        "status": runs.FAILED, "error": f"The run did not finish: {reason}",
        "finished_at": now, "updated_at": now,
    }, only_status=[runs.QUEUED, runs.RUNNING])
