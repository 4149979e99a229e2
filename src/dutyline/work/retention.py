"""Retention: per-event rows past their kept time are deleted, so no table grows without
bound.

A durable schedule (work/scheduler.py, kind `work.retention`, one row for the server) fires
hourly in exactly one process and enqueues one job (deduplicated, so a slow run never stacks
up another); the worker that claims it walks the rules below. Each rule deletes at most
`retention_batch_rows` rows per transaction, oldest first through an index on its time column
(migration 0029g), and pauses between batches: on SQLite the writer lock is held for one
small batch at a time, and other processes' writers get in between.

What is never deleted, whatever its age:
- the events of an incident that is not closed (the escalation engine, the timeline and
  insights read them), and the raw events of an alert still active;
- a delivery still pending (the delivery job works on it);
- a session or link before it expired, a sign-in lockout before it ends;
- the row with the highest id of a table whose id SQLite assigns as max(id) + 1: deleting
  it would hand its id out again, and readers that follow ids (the console's live list,
  event jobs) would take the new row for one they have seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import Column, ColumnElement, Table, delete, exists, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.config import Settings
from dutyline.db.engine import Database
from dutyline.db.tables.dispatch import channel_notify_sent
from dutyline.db.tables.incident import (
    alert,
    alert_event,
    incident,
    incident_event,
    intake_outcome,
)
from dutyline.db.tables.notify import notify_attempt, notify_delivery
from dutyline.db.tables.platform import audit_log
from dutyline.db.tables.scheduler import work_schedule
from dutyline.db.tables.web import console_link, console_session, console_sign_in_failure
from dutyline.db.upsert import insert_for
from dutyline.kit.clock import millis
from dutyline.kit.vocabulary import CLOSED
from dutyline.work import queue
from dutyline.work.registry import JobContext, job_handler
from dutyline.work.scheduler import Fire, schedule_handler

log = structlog.get_logger("dutyline.retention")

KIND = "work.retention"
OWNER_ID = "server"
INTERVAL_MS = 3_600_000
DAY_MS = 86_400_000
# Between two batches of one rule: other processes' writers (which wait on SQLite's busy
# handler, not on this process's writer queue) take the lock meanwhile.
PAUSE_S = 0.02
SECONDS, MILLISECONDS = 1000, 1


@dataclass(frozen=True)
class Rule:
    """Rows of `table` whose `column` is older than `days(settings)` days, and for which
    `may_go` holds, are deleted."""

    table: Table
    column: Column[Any]
    unit_ms: int  # the column's unit: SECONDS or MILLISECONDS
    days: Callable[[Settings], int]
    may_go: Callable[[int], list[ColumnElement[bool]]] = lambda now_s: []
    # The table's id is SQLite's max(id) + 1: its newest row stays (see the module's doc).
    keep_newest: bool = False

    @property
    def name(self) -> str:
        return self.table.name


def _incident_not_open(now_s: int) -> list[ColumnElement[bool]]:
    return [~exists().where(incident.c.incident_id == incident_event.c.incident_id,
                            incident.c.progress != CLOSED)]


def _alert_ended(now_s: int) -> list[ColumnElement[bool]]:
    return [~exists().where(alert.c.alert_id == alert_event.c.alert_id, alert.c.end_time == 0)]


def _delivery_finished(now_s: int) -> list[ColumnElement[bool]]:
    return [notify_delivery.c.status != "pending"]


def _lockout_over(now_s: int) -> list[ColumnElement[bool]]:
    return [console_sign_in_failure.c.locked_until < now_s]


RULES: tuple[Rule, ...] = (
    Rule(channel_notify_sent, channel_notify_sent.c.created_at, SECONDS,
         lambda s: s.notify_claim_retention_days),
    Rule(console_session, console_session.c.expires_at, SECONDS,
         lambda s: s.expired_sign_in_retention_days),
    Rule(console_link, console_link.c.expires_at, SECONDS,
         lambda s: s.expired_sign_in_retention_days),
    Rule(console_sign_in_failure, console_sign_in_failure.c.last_failure_at, SECONDS,
         lambda s: s.expired_sign_in_retention_days, _lockout_over),
    Rule(notify_attempt, notify_attempt.c.event_time_ms, MILLISECONDS,
         lambda s: s.delivery_attempt_retention_days, keep_newest=True),
    Rule(notify_delivery, notify_delivery.c.created_at, SECONDS,
         lambda s: s.delivery_retention_days, _delivery_finished),
    Rule(alert_event, alert_event.c.created_at, SECONDS,
         lambda s: s.alert_event_retention_days, _alert_ended),
    # What became of an integration's last events: kept no longer than the events.
    Rule(intake_outcome, intake_outcome.c.received_at, SECONDS,
         lambda s: s.alert_event_retention_days),
    Rule(incident_event, incident_event.c.created_at, SECONDS,
         lambda s: s.incident_event_retention_days, _incident_not_open, keep_newest=True),
    Rule(audit_log, audit_log.c.created_at, MILLISECONDS,
         lambda s: s.audit_retention_days, keep_newest=True),
)


def _batch_delete(rule: Rule, cutoff: int, now_s: int, batch: int) -> Any:
    table = rule.table
    key = list(table.primary_key.columns)
    conditions = [rule.column < cutoff, *rule.may_go(now_s)]
    if rule.keep_newest:
        conditions.append(key[0] < select(func.max(key[0])).scalar_subquery())
    victims = select(*key).where(*conditions).order_by(rule.column).limit(batch)
    if len(key) == 1:
        return delete(table).where(key[0].in_(victims.scalar_subquery()))
    return delete(table).where(tuple_(*key).in_(victims))


async def prune_rule(db: Database, rule: Rule, *, settings: Settings, now_ms: int,
                     batch: int | None = None) -> int:
    """Delete one rule's expired rows, a batch per transaction; returns how many."""
    days = rule.days(settings)
    if days <= 0:
        return 0
    batch = batch or max(1, settings.retention_batch_rows)
    cutoff = (now_ms - days * DAY_MS) // rule.unit_ms
    statement = _batch_delete(rule, cutoff, now_ms // 1000, batch)
    total = 0
    while True:
        async with db.transaction(write=True) as conn:
            deleted = (await conn.execute(statement)).rowcount
        total += deleted
        if deleted < batch:
            return total
        await asyncio.sleep(PAUSE_S)


async def prune(db: Database, settings: Settings, *, now_ms: int,
                batch: int | None = None) -> dict[str, int]:
    """Run every rule; {table: rows deleted}."""
    return {rule.name: await prune_rule(db, rule, settings=settings, now_ms=now_ms, batch=batch)
            for rule in RULES}


async def ensure_schedule(db: Database, *, now_ms: int) -> None:
    """The hourly schedule's row, made by the first process that starts (the others find
    it); its first fire is an interval after that."""
    async with db.transaction(write=True) as conn:
        await conn.execute(
            insert_for(conn)(work_schedule)
            .values(kind=KIND, owner_id=OWNER_ID, interval_ms=INTERVAL_MS,
                    next_fire_at=now_ms + INTERVAL_MS, created_at=now_ms, updated_at=now_ms)
            .on_conflict_do_nothing(index_elements=["kind", "owner_id"]))


@schedule_handler(KIND)
async def _fire(conn: AsyncConnection, fire: Fire) -> None:
    # The scheduler's transaction holds the writer: only enqueue here, prune in the job.
    await queue.enqueue(conn, KIND, {}, now_ms=fire.now_ms, dedupe_key=KIND, max_attempts=3)


@job_handler(KIND)
async def _run(ctx: JobContext, payload: dict[str, Any]) -> None:
    runtime = ctx.runtime
    pruned = await prune(runtime.db, runtime.settings, now_ms=millis(runtime.clock))
    if any(pruned.values()):
        log.info("expired rows pruned", **{k: v for k, v in pruned.items() if v})
