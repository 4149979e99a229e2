"""Durable work: jobs are rows in the `job` table, enqueued, claimed, leased, retried, reaped.

Why rows in the database: a job is enqueued on the caller's connection, inside the request's
own transaction, so a rolled-back request enqueues nothing and a committed one can never lose
its job. No queue library covers both SQLite and multi-process PostgreSQL; this is the pattern
of GoAlert and solid_queue.

States::

    pending --claim--> running --handler ok, fenced--> done      (dedupe_key released)
                          |--handler failed----------> pending   (run_at = now + backoff)
                          |--failed, attempts spent--> dead      (dedupe_key released)
                          '--lease expired (reaper)--> pending | dead

Dying: whichever way a job becomes dead (its last attempt failed, or the reaper found its
last attempt's lease expired, so its handler never finished), the kind's on_dead hook runs
in the transaction that marks it dead (`mark_failed` and `reap_expired` take an `on_dead`
callback; the worker supplies one that runs the registered hooks). It runs exactly once:
only for rows whose UPDATE this transaction made, so of two reapers racing for the same
expired lease only the one that changed the row runs the hook.

Leases: a claim sets `lease_owner` (the worker's id) and `lease_expires_at`, and counts the
attempt. A worker whose handler runs long extends its lease (heartbeat). When a worker dies,
its lease runs out and the reaper puts the job back to pending, so it runs again elsewhere.

Fencing: the handler's own writes and the `status='done'` update share ONE transaction, and
that update only matches `lease_owner = me AND status = 'running'`. A worker that was presumed
dead (lease reaped, job re-claimed by someone else) matches nothing, raises `LeaseLost`, and
its transaction rolls back, so the effects of a job are committed at most once. Together with
the reaper, every job's effects are committed exactly once, as long as its handler's effects
live in this database; outbound side effects (webhooks, mail) are at-least-once and should
carry an idempotency key.

Claims use `FOR UPDATE SKIP LOCKED` on PostgreSQL, so concurrent claimers never take the same
row and never wait on each other; SQLite has one writer, so the claim runs in a
`BEGIN IMMEDIATE` transaction instead.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import Connection, and_, bindparam, case, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.engine import Database
from dutyline.db.tables.work import job
from dutyline.db.upsert import insert_for
from dutyline.work import wakeup

PENDING = "pending"
RUNNING = "running"
DONE = "done"
DEAD = "dead"

LAST_ERROR_MAX = 2000
LEASE_EXPIRED = "lease expired"
RETRY_BASE_MS = 1_000
RETRY_CAP_MS = 3_600_000


# msgspec, not json: a burst of scheduled fires encodes thousands of payloads at once.
_decoder = msgspec.json.Decoder()


def _encode(payload: dict[str, Any]) -> str:
    return msgspec.json.encode(payload).decode()


class LeaseLost(Exception):
    """This worker no longer owns the job: its effects must not be committed."""


@dataclass(frozen=True)
class ClaimedJob:
    id: int
    kind: str
    payload: dict[str, Any]
    attempts: int  # including this one
    max_attempts: int
    lease_owner: str
    lease_expires_at: int


@dataclass(frozen=True)
class DeadJob:
    """A job that has just been marked dead, handed to the on_dead callback."""

    id: int
    kind: str
    payload: dict[str, Any]
    attempts: int
    error: str  # what its last_error says
    lease_expired: bool  # buried by the reaper: its last attempt never finished


# Called inside the transaction that marks the job dead, once per job that died there.
OnDead = Callable[[AsyncConnection, DeadJob], Awaitable[None]]


@functools.cache
def _insert_job(dialect: str, returning: tuple[str, ...] = ()) -> Any:
    """The job insert, built once per database kind and RETURNING columns (every new
    incident enqueues): a job whose dedupe key an unfinished job holds is not inserted (a
    NULL key never conflicts)."""
    stmt = insert_for(dialect)(job).on_conflict_do_nothing(index_elements=[job.c.dedupe_key])
    return stmt.returning(*(job.c[name] for name in returning)) if returning else stmt


def enqueue_sync(
    conn: Connection,
    kind: str,
    payload: dict[str, Any],
    *,
    now_ms: int,
    run_at_ms: int | None = None,
    dedupe_key: str | None = None,
    max_attempts: int = 10,
) -> int | None:
    """Add a job on the caller's connection (and so in its transaction).

    Returns the new job's id, or None when `dedupe_key` is held by an unfinished job."""
    values = _job_row(kind, payload, now_ms=now_ms, run_at_ms=run_at_ms,
                      dedupe_key=dedupe_key, max_attempts=max_attempts)
    row = conn.execute(_insert_job(conn.dialect.name, ("id",)), values).first()
    if row is None:
        return None
    wakeup.note_due(conn, now_ms if run_at_ms is None else run_at_ms, now_ms)
    return int(row[0])


async def enqueue(
    conn: AsyncConnection,
    kind: str,
    payload: dict[str, Any],
    *,
    now_ms: int,
    run_at_ms: int | None = None,
    dedupe_key: str | None = None,
    max_attempts: int = 10,
) -> int | None:
    """enqueue_sync on an async connection."""
    return await conn.run_sync(
        enqueue_sync, kind, payload, now_ms=now_ms, run_at_ms=run_at_ms,
        dedupe_key=dedupe_key, max_attempts=max_attempts,
    )


async def enqueue_many(
    conn: AsyncConnection,
    kind: str,
    payloads: list[dict[str, Any]],
    *,
    now_ms: int,
    max_attempts: int = 10,
) -> None:
    """Several jobs of one kind, due now, on the caller's connection in one multi-row insert
    (no dedupe keys): for producers that make many at once, like the scheduler's batch of
    fires."""
    jobs = NewJobs()
    for payload in payloads:
        jobs.add(kind, payload, now_ms=now_ms, max_attempts=max_attempts)
    await jobs.flush(conn)


def _job_row(kind: str, payload: dict[str, Any], *, now_ms: int, run_at_ms: int | None,
             dedupe_key: str | None, max_attempts: int) -> dict[str, Any]:
    """A new pending job's columns."""
    return {
        "kind": kind, "payload": _encode(payload), "status": PENDING,
        "dedupe_key": dedupe_key, "run_at": now_ms if run_at_ms is None else run_at_ms,
        "attempts": 0, "max_attempts": max_attempts, "created_at": now_ms,
        "updated_at": now_ms, "lease_owner": None, "lease_expires_at": None,
    }


@dataclass
class Handoff:
    """Jobs a running job makes for its own worker to run next: inserted already claimed
    (running, leased to `owner`, their first attempt counted) and run by that worker as
    soon as the maker's transaction commits. No claim, no ring, no wait for the next look
    at the table; the page a step makes leaves right after the step commits. A worker that
    dies first leaves them to the reaper, like any job it held; a maker whose transaction
    rolls back made none."""

    owner: str
    lease_ms: int
    jobs: list[ClaimedJob] = field(default_factory=list)


class NewJobs:
    """Jobs made in one transaction and inserted together, one statement for all, by
    `flush` (which the maker calls before its transaction ends): for producers that make a
    job per item of a batch. A job whose `dedupe_key` an unfinished job holds is left out,
    as with `enqueue`. A job added with `handoff` goes to the flush's `Handoff`, when it
    is given one (a job's own context has it), and is an ordinary pending job otherwise."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._handoff: list[dict[str, Any] | None] = []  # the payload of a job handed off

    def add(self, kind: str, payload: dict[str, Any], *, now_ms: int,
            run_at_ms: int | None = None, dedupe_key: str | None = None,
            max_attempts: int = 10, handoff: bool = False) -> None:
        if handoff and dedupe_key is None:
            raise ValueError("a job handed off names its dedupe key")
        self.rows.append(_job_row(kind, payload, now_ms=now_ms, run_at_ms=run_at_ms,
                                  dedupe_key=dedupe_key, max_attempts=max_attempts))
        self._handoff.append(payload if handoff else None)

    async def flush(self, conn: AsyncConnection, handoff: Handoff | None = None) -> None:
        rows, marks = self.rows, self._handoff
        self.rows, self._handoff = [], []
        if not rows:
            return
        payloads: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        if handoff is not None:
            for row, payload in zip(rows, marks, strict=True):
                if payload is not None:
                    expires = int(row["created_at"]) + handoff.lease_ms
                    row.update(status=RUNNING, attempts=1, lease_owner=handoff.owner,
                               lease_expires_at=expires)
                    payloads[row["dedupe_key"]] = (row, payload)
        inserted = await conn.run_sync(_insert_jobs, rows, bool(payloads))
        for job_id, dedupe_key in inserted:
            if dedupe_key in payloads:
                row, payload = payloads[dedupe_key]
                assert handoff is not None
                handoff.jobs.append(ClaimedJob(
                    id=int(job_id), kind=row["kind"], payload=payload, attempts=1,
                    max_attempts=int(row["max_attempts"]), lease_owner=handoff.owner,
                    lease_expires_at=int(row["lease_expires_at"])))


def _insert_jobs(conn: Connection, rows: list[dict[str, Any]], returning: bool
                 ) -> list[tuple[int, str | None]]:
    """Insert the rows (executemany: SQLAlchemy sends multi-row inserts within the
    driver's limits); with `returning`, the (id, dedupe_key) of each row inserted."""
    inserted: list[tuple[int, str | None]] = []
    if returning:
        result = conn.execute(_insert_job(conn.dialect.name, ("id", "dedupe_key")), rows)
        inserted = [(int(r[0]), r[1]) for r in result.all()]
    else:
        conn.execute(_insert_job(conn.dialect.name), rows)
    pending = [r for r in rows if r["status"] == PENDING]
    if pending:
        soonest = min(pending, key=lambda r: int(r["run_at"]))
        wakeup.note_due(conn, int(soonest["run_at"]), int(soonest["created_at"]))
    return inserted


def schedule_sync(
    conn: Connection,
    kind: str,
    payload: dict[str, Any],
    *,
    now_ms: int,
    run_at_ms: int,
    dedupe_key: str,
    max_attempts: int = 10,
) -> None:
    """A timer each call pushes out: enqueue, or move the pending job holding `dedupe_key`
    to `run_at_ms`. A running holder is left alone; its handler must re-check what it acts
    on and hand over to a successor (`drop_dedupe_key`, then `schedule`) when not yet due."""
    values = _job_row(kind, payload, now_ms=now_ms, run_at_ms=run_at_ms,
                      dedupe_key=dedupe_key, max_attempts=max_attempts)
    insert = insert_for(conn)
    stmt = insert(job).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[job.c.dedupe_key],
        set_={"run_at": stmt.excluded.run_at, "updated_at": stmt.excluded.updated_at},
        where=job.c.status == PENDING,
    )
    conn.execute(stmt)
    wakeup.note_due(conn, run_at_ms, now_ms)


async def schedule(
    conn: AsyncConnection,
    kind: str,
    payload: dict[str, Any],
    *,
    now_ms: int,
    run_at_ms: int,
    dedupe_key: str,
    max_attempts: int = 10,
) -> None:
    """schedule_sync on an async connection."""
    await conn.run_sync(
        schedule_sync, kind, payload, now_ms=now_ms, run_at_ms=run_at_ms,
        dedupe_key=dedupe_key, max_attempts=max_attempts,
    )


async def drop_dedupe_key(conn: AsyncConnection, job_id: int) -> None:
    """Let a running job give up its dedupe key (in its own transaction) so it can schedule
    its successor under the same key."""
    await conn.execute(update(job).where(job.c.id == job_id).values(dedupe_key=None))


@functools.cache
def _claim_statement(postgres: bool, by_kind: bool) -> Any:
    """The claim, built once per database kind and filter (the loop runs it all the time);
    its values are bound when it runs."""
    due = (
        select(job.c.id)
        .where(job.c.status == PENDING, job.c.run_at <= bindparam("now_ms"))
        .order_by(job.c.run_at, job.c.id)
        .limit(bindparam("claim_limit"))
    )
    if by_kind:
        due = due.where(job.c.kind == bindparam("claim_kind"))
    due_cte = due.cte("due")
    if postgres:
        # MATERIALIZED: as a plain `IN (sub-select)` PostgreSQL may run the locking sub-select
        # more than once per statement and so claim more than `limit` rows (seen in tests).
        due_cte = (
            due.with_for_update(skip_locked=True).cte("due").prefix_with("MATERIALIZED")
        )
    return (
        update(job)
        # status is checked again here: harmless on SQLite, and on PostgreSQL it guards the
        # row that a concurrent transaction changed between the sub-select and the lock.
        .where(job.c.id.in_(select(due_cte.c.id)), job.c.status == PENDING)
        .values(
            status=RUNNING,
            lease_owner=bindparam("owner"),
            lease_expires_at=bindparam("expires"),
            attempts=job.c.attempts + 1,
            updated_at=bindparam("now_ms"),
        )
        .returning(job.c.id, job.c.kind, job.c.payload, job.c.attempts, job.c.max_attempts)
    )


async def claim(
    db: Database, worker_id: str, *, now_ms: int, lease_ms: int, limit: int,
    kind: str | None = None,
) -> list[ClaimedJob]:
    """Take up to `limit` due pending jobs (of `kind` only, when given: a worker filling a
    batch), oldest due first, and lease them to `worker_id`."""
    if limit <= 0:
        return []
    expires = now_ms + lease_ms
    params: dict[str, Any] = {"now_ms": now_ms, "claim_limit": limit, "owner": worker_id,
                              "expires": expires}
    if kind is not None:
        params["claim_kind"] = kind
    async with db.statement(write=True) as conn:
        rows = (await conn.execute(_claim_statement(db.is_postgres, kind is not None),
                                   params)).all()
    claimed = [
        ClaimedJob(
            id=int(r.id),
            kind=r.kind,
            payload=_decode(r.payload),
            attempts=int(r.attempts),
            max_attempts=int(r.max_attempts),
            lease_owner=worker_id,
            lease_expires_at=expires,
        )
        for r in rows
    ]
    claimed.sort(key=lambda j: j.id)
    return claimed


async def next_due_at(db: Database) -> int | None:
    """When the earliest pending job is due (epoch ms), or None: one read of the claim
    index, for an idle worker to sleep exactly until then."""
    async with db.statement(write=False) as conn:
        due = (await conn.execute(
            select(func.min(job.c.run_at)).where(job.c.status == PENDING))).scalar()
    return None if due is None else int(due)


def _decode(raw: str) -> dict[str, Any]:
    value = _decoder.decode(raw or "{}")
    return value if isinstance(value, dict) else {"value": value}


def _ids(job_id: int | list[int]) -> list[int]:
    """One job's id, or a batch's ids, as a list."""
    return job_id if isinstance(job_id, list) else [job_id]


# Still this worker's, and still running (fencing): the ids and the owner are bound.
_OWNED = and_(job.c.id.in_(bindparam("ids", expanding=True)),
              job.c.lease_owner == bindparam("owner"), job.c.status == RUNNING)
# The loop's constant statements, built once.
_MARK_DONE = (
    update(job).where(_OWNED)
    .values(status=DONE, dedupe_key=None, lease_owner=None, lease_expires_at=None,
            last_error=None, updated_at=bindparam("now_ms"))
)
# A lease is never shortened: a job may hold its lease longer than the heartbeat does (a
# delivery holds it for its longest send, so nobody takes it while the send is in flight).
_EXTEND_LEASE = (
    update(job).where(_OWNED)
    .values(lease_expires_at=case(
        (job.c.lease_expires_at > bindparam("expires"), job.c.lease_expires_at),
        else_=bindparam("expires")), updated_at=bindparam("now_ms"))
)


async def mark_done(conn: AsyncConnection, job_id: int | list[int], worker_id: str, *,
                    now_ms: int) -> None:
    """Finish the job (or every job of a batch) inside the handler's transaction; raise
    LeaseLost if we no longer own it (any of them), so the caller's transaction (with the
    handler's effects) rolls back."""
    ids = _ids(job_id)
    result = await conn.execute(_MARK_DONE, {"ids": ids, "owner": worker_id, "now_ms": now_ms})
    if result.rowcount != len(ids):
        raise LeaseLost(f"job {job_id} is no longer leased to {worker_id}")


def retry_delay_ms(
    attempts: int,
    *,
    base_ms: int = RETRY_BASE_MS,
    cap_ms: int = RETRY_CAP_MS,
    rng: random.Random | None = None,
) -> int:
    """Exponential backoff with jitter: a delay in [d/2, d], d = min(base * 2^attempts, cap).

    The jitter spreads the retries of jobs that failed together (a peer went down)."""
    ceiling = min(base_ms * (2 ** min(attempts, 40)), cap_ms)
    return int(ceiling * (rng or random).uniform(0.5, 1.0))


def truncate_error(error: str) -> str:
    return error if len(error) <= LAST_ERROR_MAX else error[: LAST_ERROR_MAX - 3] + "..."


async def mark_failed(
    db: Database,
    claimed: ClaimedJob,
    error: str,
    *,
    now_ms: int,
    rng: random.Random | None = None,
    on_dead: OnDead | None = None,
) -> str | None:
    """Record a failed attempt in its own transaction (the handler's has rolled back); when
    its attempts are spent the job dies and `on_dead` runs in that same transaction.

    Returns the new status (pending or dead), or None when the lease was already lost."""
    dead = claimed.attempts >= claimed.max_attempts
    values: dict[str, Any] = {
        "status": DEAD if dead else PENDING,
        "lease_owner": None,
        "lease_expires_at": None,
        "last_error": truncate_error(error),
        "updated_at": now_ms,
    }
    if dead:
        values["dedupe_key"] = None
    else:
        values["run_at"] = now_ms + retry_delay_ms(claimed.attempts, rng=rng)
    async with db.transaction(write=True) as conn:
        result = await conn.execute(
            update(job).where(_OWNED).values(**values),
            {"ids": [claimed.id], "owner": claimed.lease_owner})
        if result.rowcount != 1:
            return None
        if dead and on_dead is not None:
            await on_dead(conn, DeadJob(
                id=claimed.id, kind=claimed.kind, payload=claimed.payload,
                attempts=claimed.attempts, error=values["last_error"], lease_expired=False,
            ))
    return DEAD if dead else PENDING


async def release(db: Database, claimed: ClaimedJob, *, now_ms: int) -> bool:
    """Hand an unfinished job back at shutdown without spending the attempt."""
    async with db.statement(write=True) as conn:
        result = await conn.execute(
            update(job)
            .where(_OWNED)
            .values(
                status=PENDING,
                lease_owner=None,
                lease_expires_at=None,
                attempts=job.c.attempts - 1,
                run_at=now_ms,
                updated_at=now_ms,
            ),
            {"ids": [claimed.id], "owner": claimed.lease_owner},
        )
    return bool(result.rowcount == 1)


async def extend_lease(
    db: Database, job_id: int | list[int], worker_id: str, *, now_ms: int, lease_ms: int
) -> bool:
    """Heartbeat: push the lease (of one job, or of each job of a batch) out to at least
    `now_ms + lease_ms`; False when the job, or any job of the batch, is no longer ours."""
    ids = _ids(job_id)
    async with db.statement(write=True) as conn:
        result = await conn.execute(_EXTEND_LEASE, {
            "ids": ids, "owner": worker_id, "expires": now_ms + lease_ms, "now_ms": now_ms})
    return bool(result.rowcount == len(ids))


async def reap_expired(
    db: Database, *, now_ms: int, on_dead: OnDead | None = None
) -> tuple[int, int]:
    """Return expired running leases to pending (or dead when attempts are spent); for each
    job buried here, `on_dead` runs in the same transaction.

    Returns (requeued, dead). The attempt that was running is counted already, at claim."""
    expired = (
        select(job.c.id)
        .where(job.c.status == RUNNING, job.c.lease_expires_at < now_ms)
        .order_by(job.c.id)
    )
    expired_cte = expired.cte("expired")
    if db.is_postgres:
        # As in `claim`: a reaper in another process skips the rows this one holds instead
        # of queueing behind them (or deadlocking on rows locked in another order), and so
        # never sees, nor buries a second time, a job whose burial is not committed yet.
        expired_cte = (
            expired.with_for_update(skip_locked=True).cte("expired").prefix_with("MATERIALIZED")
        )
    spent = job.c.attempts >= job.c.max_attempts
    stmt = (
        update(job)
        # The lease is checked again: a row changed between the sub-select and its lock.
        .where(
            job.c.id.in_(select(expired_cte.c.id)),
            job.c.status == RUNNING,
            job.c.lease_expires_at < now_ms,
        )
        .values(
            status=case((spent, DEAD), else_=PENDING),
            dedupe_key=case((spent, None), else_=job.c.dedupe_key),
            lease_owner=None,
            lease_expires_at=None,
            last_error=LEASE_EXPIRED,
            run_at=now_ms,
            updated_at=now_ms,
        )
        .returning(job.c.id, job.c.kind, job.c.payload, job.c.attempts, job.c.status)
    )
    async with db.transaction(write=True) as conn:
        # RETURNING names exactly the rows this statement changed: a concurrent reaper that
        # got there first has already moved them out of `running`, so they are not here.
        reaped = (await conn.execute(stmt)).all()
        buried = sorted((r for r in reaped if r.status == DEAD), key=lambda r: int(r.id))
        if on_dead is not None:
            for r in buried:
                await on_dead(conn, DeadJob(
                    id=int(r.id), kind=r.kind, payload=_decode(r.payload),
                    attempts=int(r.attempts), error=LEASE_EXPIRED, lease_expired=True,
                ))
    return len(reaped) - len(buried), len(buried)


async def note_on_dead_failure(conn: AsyncConnection, dead: DeadJob, error: str) -> None:
    """Say in a dead job's last_error that its on_dead hook failed (and did nothing), so the
    row tells an operator why the domain was not told."""
    await conn.execute(
        update(job)
        .where(job.c.id == dead.id)
        .values(last_error=truncate_error(f"{dead.error}; on_dead failed: {error}"))
    )


async def prune_done(db: Database, *, older_than_ms: int, batch: int = 1000) -> int:
    """Delete done jobs last touched before `older_than_ms`, in batches so no single
    transaction holds the writer (SQLite) or many row locks (PostgreSQL) for long."""
    total = 0
    while True:
        victims = (
            select(job.c.id)
            .where(job.c.status == DONE, job.c.updated_at < older_than_ms)
            .limit(batch)
            .scalar_subquery()
        )
        async with db.transaction(write=True) as conn:
            result = await conn.execute(delete(job).where(job.c.id.in_(victims)))
        total += result.rowcount
        if result.rowcount < batch:
            return total
