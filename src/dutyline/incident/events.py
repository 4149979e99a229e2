"""The incident event stream.

Every change to an incident is written as an `incident_event` row in the transaction of the
change (an outbox), and each subscriber gets its own durable job for that row. So:
- a rolled-back write emits nothing (the row and the jobs roll back with it);
- a committed one is never lost (the jobs are in the database);
- a subscriber that fails retries with backoff, without holding up the others.

Subscribers (the escalation engine, the automation incident trigger, ...) register with
`@subscriber("name")` in a task module of their domain (domains.py), which every process
imports at start, so the API process knows whom to fan out to and the workers can run them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.incident import repository as repo
from dutyline.work.queue import enqueue_sync
from dutyline.work.registry import BatchContext, JobContext, job_batch_handler, job_handler

# Event kinds.
CREATED = "created"
ACKED = "acked"
UNACKED = "unacked"
RESOLVED = "resolved"
REOPENED = "reopened"
SNOOZED = "snoozed"
WOKEN = "woken"
ASSIGNED = "assigned"
MERGED = "merged"
UPDATED = "updated"  # title, severity, fields and other edits
REMOVED = "removed"
ALERT_ADDED = "alert_added"
RESPONDERS_ADDED = "responders_added"
ALERTS_MERGED = "alerts_merged"

JOB_PREFIX = "incident_event."


@dataclass(frozen=True)
class IncidentEvent:
    id: int
    account_id: int
    incident_id: str
    kind: str
    payload: dict[str, Any]
    person_id: int
    created_at: int


Subscriber = Callable[[JobContext, IncidentEvent], Awaitable[None]]
BatchSubscriber = Callable[[BatchContext, list[IncidentEvent]], Awaitable[None]]
# Asked in the emitting transaction whether the subscriber would act on the event at all.
Wants = Callable[[Connection, IncidentEvent], bool]


@dataclass(frozen=True)
class Subscription:
    fn: Subscriber
    kinds: frozenset[str] | None = None  # None: every kind
    wants: Wants | None = None

    def takes(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds


_subscribers: dict[str, Subscription] = {}


def subscriber(
    name: str, *, kinds: Collection[str] | None = None, wants: Wants | None = None
) -> Callable[[Subscriber], Subscriber]:
    """Register `fn` to receive incident events through job kind incident_event.<name>: every
    event, or only those of `kinds`, and of those only the ones `wants` (a quick sync check
    in the emitting transaction, seeing what it wrote) accepts. Both matter on the hot path: a
    job that would do nothing still costs a claim, a read and a commit. `wants` must answer
    from data that the job would read too, so that skipping the job changes nothing."""

    def register(fn: Subscriber) -> Subscriber:
        _subscribers[name] = Subscription(
            fn, None if kinds is None else frozenset(kinds), wants)

        async def deliver(ctx: JobContext, payload: dict[str, Any]) -> None:
            event = await load_event(ctx.conn, int(payload["event_id"]))
            if event is not None:
                await fn(ctx, event)

        # Named after the subscriber's own function, so re-importing its module registers
        # "the same" handler again while a second subscriber under one name is refused.
        deliver.__module__ = fn.__module__
        deliver.__qualname__ = f"deliver[{name}:{fn.__qualname__}]"
        job_handler(JOB_PREFIX + name)(deliver)
        return fn

    return register


def batch_subscriber(
    name: str, *, max_size: int = 16
) -> Callable[[BatchSubscriber], BatchSubscriber]:
    """Give the subscriber `name` a way to take several of its events at once, in one
    transaction (work/registry.py's batches): `fn` gets them in the order they happened,
    and must act on each as the subscriber itself would. When it fails, each event goes
    to the subscriber alone."""
    def register(fn: BatchSubscriber) -> BatchSubscriber:
        async def deliver_many(ctx: BatchContext) -> None:
            event_ids = [int(job.payload["event_id"]) for job in ctx.jobs]
            if not ctx.runtime.db.is_sqlite:
                await fn(ctx, await load_events(ctx.conn, event_ids))
                return
            # Events never change once written: on SQLite they are read without taking
            # the one writer, which the job's transaction takes at its first statement.
            async with ctx.runtime.db.statement(write=False) as reading:
                batch = await load_events(reading, event_ids)
            await fn(ctx, batch)

        deliver_many.__module__ = fn.__module__
        deliver_many.__qualname__ = f"deliver_many[{name}:{fn.__qualname__}]"
        job_batch_handler(JOB_PREFIX + name, max_size=max_size)(deliver_many)
        return fn

    return register


def subscribers(kind: str | None = None) -> list[str]:
    """The subscribers' names; with `kind`, those that receive events of that kind."""
    return sorted(name for name, sub in _subscribers.items() if kind is None or sub.takes(kind))


def emit_sync(
    conn: Connection,
    *,
    account_id: int,
    incident_id: str,
    kind: str,
    now_s: int,
    person_id: int = 0,
    payload: dict[str, Any] | None = None,
) -> int:
    """Record an incident change and hand it to every subscriber of its kind, in the
    caller's transaction. Returns the event id."""
    event_id = repo.insert_event(conn, {
        "account_id": account_id, "incident_id": incident_id, "kind": kind,
        "payload": msgspec.json.encode(payload or {}).decode(), "person_id": person_id,
        "created_at": now_s,
    })
    event = IncidentEvent(id=event_id, account_id=account_id, incident_id=incident_id,
                          kind=kind, payload=payload or {}, person_id=person_id,
                          created_at=now_s)
    for name in subscribers(kind):
        wants = _subscribers[name].wants
        if wants is None or wants(conn, event):
            enqueue_sync(conn, JOB_PREFIX + name, {"event_id": event_id}, now_ms=now_s * 1000)
    return event_id


async def emit(
    conn: AsyncConnection,
    *,
    account_id: int,
    incident_id: str,
    kind: str,
    now_s: int,
    person_id: int = 0,
    payload: dict[str, Any] | None = None,
) -> int:
    """emit_sync on an async connection."""
    return await conn.run_sync(
        emit_sync, account_id=account_id, incident_id=incident_id, kind=kind, now_s=now_s,
        person_id=person_id, payload=payload,
    )


async def load_event(conn: AsyncConnection, event_id: int) -> IncidentEvent | None:
    row = await repo.event_row(conn, event_id)
    return None if row is None else _event(row)


async def load_events(conn: AsyncConnection, event_ids: list[int]) -> list[IncidentEvent]:
    """The events that still exist, in the order they happened."""
    return [_event(row) for row in await repo.event_rows(conn, event_ids)]


def _event(row: Any) -> IncidentEvent:
    return IncidentEvent(
        id=row.id,
        account_id=row.account_id,
        incident_id=row.incident_id,
        kind=row.kind,
        payload=msgspec.json.decode(row.payload),
        person_id=row.person_id,
        created_at=row.created_at,
    )
