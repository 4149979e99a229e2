"""Runs: queued by a trigger (schedule, HTTP POST, on-call incident) or by hand, executed by a
durable job (`automation.run`, tasks.py), read through run/list and run/get.

    queued -> running -> succeeded | failed | skipped

A run and its job are written in the transaction of whatever queued it (the scheduler's fire,
the fire request, the incident event's job), so a fire creates exactly one run or none."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.automation import repository as repo
from dutyline.aisre.automation import service as rules
from dutyline.aisre.automation import tokens
from dutyline.aisre.automation.schemas import (
    FireResponse,
    RunListResponse,
    RunRecord,
    RunStep,
)
from dutyline.aisre.scope import require_environment_use
from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.incident.service import IncidentEvent
from dutyline.kit.ids import prefixed_id
from dutyline.work import queue

RUN_JOB = "automation.run"
QUEUED, RUNNING, SUCCEEDED, FAILED, SKIPPED = "queued", "running", "succeeded", "failed", "skipped"
FINISHED = (SUCCEEDED, FAILED, SKIPPED)
MANUAL = "manual"
MANUAL_WINDOW_MS = 60_000
# A run whose worker dies is tried once more; when that one dies too, on_dead fails it.
RUN_ATTEMPTS = 2
FIRE_BAD_TOKEN = "Missing or invalid trigger token"
_NO_TOKEN_HASH = tokens.token_hash("no trigger has this token")


def _run_row(
    *, account_id: int, rule_id: str, trigger_kind: str, trigger_id: str, context: Any,
    now_ms: int, created_by: int, due_at: int, missed_fires: int,
) -> dict[str, Any]:
    return {
        "run_id": prefixed_id("trun"), "account_id": account_id, "rule_id": rule_id,
        "trigger_kind": trigger_kind, "trigger_id": trigger_id, "status": QUEUED,
        "context": msgspec.json.encode(context if context is not None else {}).decode(),
        "due_at": due_at, "missed_fires": missed_fires, "session_id": prefixed_id("asess"),
        "created_by": created_by, "created_at": now_ms, "updated_at": now_ms,
    }


async def queue_run(
    conn: AsyncConnection,
    *,
    account_id: int,
    rule_id: str,
    trigger_kind: str,
    trigger_id: str,
    context: Any,
    now_ms: int,
    created_by: int = 0,
    due_at: int = 0,
    missed_fires: int = 0,
) -> tuple[str, str]:
    """Insert a queued run and its job on the caller's transaction; (run_id, session_id)."""
    row = _run_row(account_id=account_id, rule_id=rule_id, trigger_kind=trigger_kind,
                   trigger_id=trigger_id, context=context, now_ms=now_ms,
                   created_by=created_by, due_at=due_at, missed_fires=missed_fires)
    await repo.insert_run(conn, row)
    await queue.enqueue(conn, RUN_JOB, {"run_id": row["run_id"]}, now_ms=now_ms,
                        max_attempts=RUN_ATTEMPTS)
    return row["run_id"], row["session_id"]


async def queue_scheduled_runs(
    conn: AsyncConnection, fires: list[tuple[Any, str, int, int]], *, now_ms: int
) -> int:
    """The runs of a batch of schedule fires, (rule row, trigger id, due at, missed) each,
    in two multi-row inserts (runs, then their jobs)."""
    rows = [
        _run_row(account_id=rule.account_id, rule_id=rule.rule_id, trigger_kind="schedule",
                 trigger_id=trigger_id, now_ms=now_ms, created_by=0, due_at=due_at,
                 missed_fires=missed, context={"due_at_ms": due_at, "missed_fires": missed})
        for rule, trigger_id, due_at, missed in fires
    ]
    await repo.insert_runs(conn, rows)
    await queue.enqueue_many(conn, RUN_JOB, [{"run_id": r["run_id"]} for r in rows],
                             now_ms=now_ms, max_attempts=RUN_ATTEMPTS)
    return len(rows)


@writes("/safari/automation/rule/run")
async def run_now(
    conn: AsyncConnection, actor: Actor, *, rule_id: str, context: Any
) -> RunRecord:
    """A manual run: the caller must manage the rule; an enabled rule only; one a minute."""
    row = await rules.managed_rule(conn, actor, rule_id)
    actor.note_audit_targets(row.rule_id)
    if row.environment_kind == "byoc":
        require_environment_use(actor)
    if not row.enabled:
        raise errors.invalid("rule_id", "the rule is disabled")
    now = actor.now_ms
    if not await repo.take_manual_run_slot(conn, actor.account_id, row.rule_id, now_ms=now,
                                           window_ms=MANUAL_WINDOW_MS):
        wait_s = max(1, (int(row.last_manual_run_at) + MANUAL_WINDOW_MS - now + 999) // 1000)
        raise errors.RequestTooFrequently(retry_after=wait_s)
    run_id, _ = await queue_run(
        conn, account_id=actor.account_id, rule_id=row.rule_id, trigger_kind=MANUAL,
        trigger_id="", context=context, now_ms=now, created_by=actor.person_id,
    )
    found = await repo.get_run(conn, run_id)
    return record(found)


def list_runs_sync(
    conn: Connection, actor: Actor, *, rule_id: str, status: str, offset: int, limit: int
) -> RunListResponse:
    if rule_id:
        rules.visible_rule_sync(conn, actor, rule_id)
    teams = frozenset() if actor.is_admin else actor.team_ids_sync(conn)
    total, rows = repo.list_runs_sync(
        conn, actor.account_id, all_rules=actor.is_admin, person_id=actor.person_id,
        team_ids=teams, rule_id=rule_id, status=status, offset=offset, limit=limit,
    )
    return RunListResponse(total=total, runs=[record(r) for r in rows])


def get_run_sync(conn: Connection, actor: Actor, *, run_id: str) -> RunRecord:
    """The run with every stored step (LLM requests and answers, tool calls and results)."""
    row = repo.get_run_sync(conn, run_id)
    if row is None or row.account_id != actor.account_id:
        raise errors.not_found("automation run", run_id)
    rule = repo.get_rule_sync(conn, actor.account_id, row.rule_id)
    if rule is None or not rules.can_see_sync(conn, actor, rule):
        raise errors.not_found("automation run", run_id)
    steps = [
        RunStep(seq=s.seq, kind=s.kind, name=s.name, content=s.content, created_at=s.created_at)
        for s in repo.steps_of_sync(conn, run_id)
    ]
    return record(row, steps=steps)


# --- the HTTP POST trigger ----------------------------------------------------------------


def check_fire_token_sync(conn: Connection, trigger_id: str, token: str) -> Any:
    """The trigger, when the token is its own; the same 401 for an unknown trigger and a wrong
    token (a hash is compared either way, so timing does not tell them apart)."""
    found = repo.find_trigger_sync(conn, trigger_id) if trigger_id.startswith("atrig_") else None
    stored = found.token_hash if found is not None and found.kind == rules.HTTP_POST else ""
    ok = tokens.matches(token, stored or _NO_TOKEN_HASH)
    if found is None or not stored or not ok:
        raise errors.Unauthorized(FIRE_BAD_TOKEN)
    return found


def fire_sync(
    conn: Connection, *, trigger_id: str, token: str, context: Any, now_ms: int
) -> FireResponse:
    """Queue the run of an HTTP POST fire, the token checked again in this (writing)
    transaction. Sync: the fire endpoint runs it in one hop (Database.run_sync)."""
    found = check_fire_token_sync(conn, trigger_id, token)
    if not found.enabled:
        raise errors.AccessDenied("The trigger {trigger_id} is disabled", trigger_id=trigger_id)
    if not found.rule_enabled:
        raise errors.AccessDenied("The rule of trigger {trigger_id} is disabled",
                                  trigger_id=trigger_id)
    row = _run_row(account_id=found.account_id, rule_id=found.rule_id,
                   trigger_kind=rules.HTTP_POST, trigger_id=found.trigger_id, context=context,
                   now_ms=now_ms, created_by=0, due_at=0, missed_fires=0)
    repo.insert_run_sync(conn, row)
    queue.enqueue_sync(conn, RUN_JOB, {"run_id": row["run_id"]}, now_ms=now_ms,
                       max_attempts=RUN_ATTEMPTS)
    return FireResponse(type="routine_fire", run_id=row["run_id"], session_id=row["session_id"])


# --- the on-call incident trigger ---------------------------------------------------------


def _matching(triggers: list[Any], channel_id: int, severity: str) -> list[Any]:
    """The incident triggers that list this channel and severity."""
    return [t for t in triggers
            if channel_id in msgspec.json.decode(t.channel_ids, type=list[int])
            and severity in msgspec.json.decode(t.severities, type=list[str])]


def wants_incident_sync(conn: Connection, event: IncidentEvent) -> bool:
    """Whether the incident this event opened would fire any rule; asked in the incident's
    own transaction, so an account without such rules (most) queues no job."""
    channel_id = int(event.payload.get("channel_id") or 0)
    severity = str(event.payload.get("severity") or "")
    if not channel_id or not severity:
        return False
    triggers = repo.incident_triggers_sync(conn, event.account_id)
    return bool(_matching(triggers, channel_id, severity))


async def fire_for_incident(
    conn: AsyncConnection, *, account_id: int, incident_id: str, channel_id: int, severity: str,
    now_ms: int,
) -> list[str]:
    """Queue one run per enabled rule whose incident trigger lists this channel and severity."""
    run_ids: list[str] = []
    for t in _matching(await repo.incident_triggers(conn, account_id), channel_id, severity):
        run_id, _ = await queue_run(
            conn, account_id=account_id, rule_id=t.rule_id, trigger_kind=rules.ONCALL,
            trigger_id=t.trigger_id, now_ms=now_ms,
            context={"incident_id": incident_id, "channel_id": channel_id,
                     "severity": severity},
        )
        run_ids.append(run_id)
    return run_ids


# --- records ------------------------------------------------------------------------------


def record(row: Any, *, steps: list[RunStep] | None = None) -> RunRecord:
    return RunRecord(
        run_id=row.run_id,
        rule_id=row.rule_id,
        account_id=row.account_id,
        trigger_kind=row.trigger_kind,
        trigger_id=row.trigger_id,
        status=row.status,
        context=msgspec.json.decode(row.context),
        due_at=row.due_at,
        missed_fires=row.missed_fires,
        session_id=row.session_id,
        answer=row.answer,
        error=row.error,
        created_by=row.created_by,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        updated_at=row.updated_at,
        steps=steps,
    )
