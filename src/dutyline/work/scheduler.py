"""The durable scheduler: recurring fires (cron in a time zone, or a fixed interval) stored as
rows, fired exactly once per due time whatever the number of worker processes.

A domain keeps one `schedule` row per thing that recurs (kind, owner id), sets it in the
transaction that changes that thing (`set_schedule`, `remove_schedule`), and registers a
handler for its kind with `@schedule_handler("automation.rule")` in a task module listed in
domains.py. Every worker loop calls `fire_due` about once a second.

Exactly once: due rows are claimed with the work queue's idioms (queue.py): `FOR UPDATE SKIP
LOCKED` on PostgreSQL, so two processes never hold the same row and never wait on each other;
a `BEGIN IMMEDIATE` transaction on SQLite, which has one writer. The handler runs in the
transaction that advances the row's `next_fire_at`, so its effects (a run row, a job) and the
advance commit together or not at all: a process that dies mid-fire leaves the row due, and
the next tick fires it once.

Downtime: when several due times passed unfired (every worker was down), they are coalesced
into one fire at the latest of them, and the handler is told how many were missed; the next
fire is the first due time after now. Catching up on a backlog would only stack up stale work.

A handler is called per fire (`@schedule_handler`) or per batch of due fires of its kind
(`@schedule_batch_handler`: a few multi-row statements for hundreds of fires, which is what
keeps a thousand fires a minute on time). A handler that raises loses only its own writes (it
runs in a savepoint; a failed batch is retried fire by fire, so only the bad fire is lost);
the due time is still advanced and the error kept in `last_error`, so one bad record never
blocks the others nor fires forever. Handlers only write rows: nothing slow, no outbound calls
(on SQLite the transaction holds the only writer lock). The rows claimed are advanced in one
statement.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import structlog
from sqlalchemy import BigInteger, Text, bindparam, cast, delete, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.engine import Database
from dutyline.db.tables.scheduler import work_schedule as schedule
from dutyline.kit.cron import CronInvalid, next_after

log = structlog.get_logger("dutyline.scheduler")

# Fires claimed per transaction. Round trips, not rows, are what a burst costs on a busy
# machine (each waits for the database process to be scheduled): 500 keeps the 10,000 fires
# of a minute to a few transactions per worker, while one claim's writes stay well under a
# second.
BATCH = 500
# Past this many missed due times the count stops (a month of per-minute fires): the handler
# is told "at least this many", and the next fire is computed from now.
MAX_COALESCE_SCAN = 50_000


@dataclass(frozen=True)
class Fire:
    """One fire handed to a handler."""

    kind: str
    owner_id: str
    due_at_ms: int  # the due time fired (the latest one when several were coalesced)
    missed: int  # earlier due times coalesced into this fire (0 when on time)
    first_due_at_ms: int  # the earliest of them (== due_at_ms when missed is 0)
    now_ms: int


FireHandler = Callable[[AsyncConnection, Fire], Awaitable[None]]
# Gets every due fire of its kind claimed in one transaction (up to BATCH): a handler that
# can write them with a few multi-row statements keeps a thousand fires a minute cheap.
BatchFireHandler = Callable[[AsyncConnection, list[Fire]], Awaitable[None]]


@dataclass(frozen=True)
class _Entry:
    fn: Callable[..., Awaitable[None]]
    batch: bool


_entries: dict[str, _Entry] = {}


def _register(kind: str, entry: _Entry) -> None:
    existing = _entries.get(kind)
    if existing is not None and _name(existing.fn) != _name(entry.fn):
        raise ValueError(f"schedule kind {kind!r} already handled by {_name(existing.fn)}")
    _entries[kind] = entry


def schedule_handler(kind: str) -> Callable[[FireHandler], FireHandler]:
    """Register the handler of a schedule kind, called once per fire (in a task module)."""

    def register(fn: FireHandler) -> FireHandler:
        _register(kind, _Entry(fn, batch=False))
        return fn

    return register


def schedule_batch_handler(kind: str) -> Callable[[BatchFireHandler], BatchFireHandler]:
    """Register a handler that takes the due fires of its kind a batch at a time."""

    def register(fn: BatchFireHandler) -> BatchFireHandler:
        _register(kind, _Entry(fn, batch=True))
        return fn

    return register


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


# --- setting schedules (in the caller's transaction) ------------------------------------


def next_time(cron_expr: str, interval_ms: int, timezone: str, after_ms: int) -> int:
    """The first due time strictly after `after_ms`."""
    if cron_expr:
        return next_after(cron_expr, timezone, after_ms)
    if interval_ms <= 0:
        raise CronInvalid("a schedule needs a cron expression or a positive interval")
    return after_ms + interval_ms


async def set_schedule(
    conn: AsyncConnection,
    *,
    kind: str,
    owner_id: str,
    now_ms: int,
    cron_expr: str = "",
    interval_ms: int = 0,
    timezone: str = "UTC",
    active: bool = True,
) -> int:
    """Create or change a schedule; returns its next due time (Unix ms), 0 when paused.

    An active schedule whose definition did not change keeps its due time, so a change of
    something else never skips a fire that is due but not fired yet."""
    existing = (await conn.execute(
        select(schedule.c.cron_expr, schedule.c.interval_ms, schedule.c.timezone,
               schedule.c.next_fire_at)
        .where(schedule.c.kind == kind, schedule.c.owner_id == owner_id)
    )).first()
    if not active:
        next_fire: int | None = None
    elif (existing is not None and existing.next_fire_at is not None
          and (existing.cron_expr, existing.interval_ms, existing.timezone)
          == (cron_expr, interval_ms, timezone)):
        next_fire = int(existing.next_fire_at)
    else:
        next_fire = next_time(cron_expr, interval_ms, timezone, now_ms)
    values = {
        "cron_expr": cron_expr, "interval_ms": interval_ms, "timezone": timezone,
        "next_fire_at": next_fire, "updated_at": now_ms,
    }
    if existing is None:
        await conn.execute(schedule.insert().values(
            kind=kind, owner_id=owner_id, created_at=now_ms, **values))
    else:
        await conn.execute(update(schedule).where(
            schedule.c.kind == kind, schedule.c.owner_id == owner_id).values(**values))
    return next_fire or 0


async def remove_schedule(conn: AsyncConnection, *, kind: str, owner_id: str) -> None:
    await conn.execute(
        delete(schedule).where(schedule.c.kind == kind, schedule.c.owner_id == owner_id)
    )


async def next_fire_at(conn: AsyncConnection, *, kind: str, owner_id: str) -> int:
    """The stored next due time, 0 when paused or absent."""
    value = (await conn.execute(
        select(schedule.c.next_fire_at)
        .where(schedule.c.kind == kind, schedule.c.owner_id == owner_id)
    )).scalar()
    return int(value or 0)


_NEXT_FIRES = select(schedule.c.owner_id, schedule.c.next_fire_at).where(
    schedule.c.kind == bindparam("kind"),
    schedule.c.owner_id.in_(bindparam("owner_ids", expanding=True)),
    schedule.c.next_fire_at.is_not(None))


def next_fire_times_sync(conn: Connection, *, kind: str, owner_ids: list[str]) -> dict[str, int]:
    """{owner_id: next due time} of the active schedules among `owner_ids`."""
    if not owner_ids:
        return {}
    rows = conn.execute(_NEXT_FIRES, {"kind": kind, "owner_ids": owner_ids})
    return {r.owner_id: int(r.next_fire_at) for r in rows}


# --- firing ----------------------------------------------------------------------------


# A burst of fires is mostly the same few expressions at the same due time (every rule
# "5 * * * *" due at 10:05): computing the next time once per (expression, zone, time) instead
# of once per row took a tenth of a 10,000-fire minute. Pure function, so caching is safe.
_cron_next = lru_cache(maxsize=4096)(next_after)


def _coalesce(row: Any, now_ms: int) -> tuple[int, int, int]:
    """(latest due time <= now, how many earlier ones it stands for, next due time > now)."""
    due = int(row.next_fire_at)
    if not row.cron_expr:
        step = int(row.interval_ms)
        missed = (now_ms - due) // step
        latest = due + missed * step
        return latest, missed, latest + step
    latest, missed = due, 0
    following = _cron_next(row.cron_expr, row.timezone, due)
    while following <= now_ms and missed < MAX_COALESCE_SCAN:
        latest, missed = following, missed + 1
        following = _cron_next(row.cron_expr, row.timezone, following)
    if following <= now_ms:
        following = _cron_next(row.cron_expr, row.timezone, now_ms)
    return latest, missed, following


async def fire_due(
    db: Database,
    *,
    now_ms: int,
    limit: int = BATCH,
    registry: Mapping[str, FireHandler] | None = None,
) -> int:
    """Fire up to `limit` due schedules in one transaction; returns how many were claimed
    (call again while it returns `limit`)."""
    if registry is None:
        known = dict(_entries)
    else:
        known = {k: _Entry(fn, batch=False) for k, fn in registry.items()}
    if not known or limit <= 0:
        return 0
    due = (
        select(schedule.c.id, schedule.c.kind, schedule.c.owner_id, schedule.c.cron_expr,
               schedule.c.interval_ms, schedule.c.timezone, schedule.c.next_fire_at)
        # Only kinds this process can fire: a newer worker may know kinds we do not.
        .where(schedule.c.next_fire_at <= now_ms, schedule.c.kind.in_(sorted(known)))
        # By due time alone: PostgreSQL then walks ix_work_schedule_due and stops after
        # `limit` rows. A tie-break on id made it sort every due row under FOR UPDATE on each
        # claim (11 ms a claim with 10,000 due rows, quadratic over a burst).
        .order_by(schedule.c.next_fire_at)
        .limit(limit)
    )
    if db.is_postgres:
        # Claimed straight away: a claim that finds nothing locks nothing, and a look-first
        # read transaction cost four more round trips per batch of a burst.
        due = due.with_for_update(skip_locked=True)
    else:
        # Most ticks find nothing: look in a read transaction first, so an idle tick never
        # takes SQLite's writer lock.
        async with db.transaction(write=False) as conn:
            if (await conn.execute(
                    due.with_only_columns(schedule.c.id).limit(1))).first() is None:
                return 0
    async with db.transaction(write=True) as conn:
        rows = (await conn.execute(due)).all()
        await _fire_rows(conn, rows, known, now_ms)
    return len(rows)


async def _fire_rows(
    conn: AsyncConnection, rows: Sequence[Any], known: Mapping[str, _Entry], now_ms: int
) -> None:
    """Hand the claimed rows' fires to their handlers (a batch per kind), then advance every
    row in one statement."""
    groups: dict[str, list[tuple[Any, Fire, int]]] = {}
    advances: list[dict[str, Any]] = []
    for row in rows:
        try:
            latest, missed, following = _coalesce(row, now_ms)
        except CronInvalid as exc:
            # A stored expression no longer valid (the rules changed under it): pause it.
            await conn.execute(update(schedule).where(schedule.c.id == row.id).values(
                next_fire_at=None, last_error=f"paused: {exc}", updated_at=now_ms))
            continue
        if missed:
            log.warning("missed schedule fires coalesced", kind=row.kind,
                        owner_id=row.owner_id, missed=missed, due_at_ms=latest)
        fire = Fire(kind=row.kind, owner_id=row.owner_id, due_at_ms=latest, missed=missed,
                    first_due_at_ms=int(row.next_fire_at), now_ms=now_ms)
        groups.setdefault(row.kind, []).append((row, fire, following))
    for kind, items in groups.items():
        failures = await _run_handler(conn, known[kind], [f for _, f, _ in items])
        for n, (row, fire, following) in enumerate(items):
            error = failures.get(n)
            if error is not None:
                log.error("schedule handler failed; its due time is skipped", kind=kind,
                          owner_id=row.owner_id, due_at_ms=fire.due_at_ms, error=error)
            advances.append({"b_id": row.id, "b_next": following, "b_last": fire.due_at_ms,
                             "b_error": error})
    await _advance(conn, advances, now_ms)


async def _advance(conn: AsyncConnection, advances: list[dict[str, Any]], now_ms: int) -> None:
    """Move every fired row to its next due time in one statement."""
    if not advances:
        return
    if conn.dialect.name == "postgresql":
        # One UPDATE joined to the new values passed as arrays: an executemany is one
        # statement per row on the server, two to four times slower for a batch of 500.
        new = func.unnest(
            _array([a["b_id"] for a in advances], BigInteger()),
            _array([a["b_next"] for a in advances], BigInteger()),
            _array([a["b_last"] for a in advances], BigInteger()),
            _array([a["b_error"] for a in advances], Text()),
        ).table_valued("id", "next", "last", "error").render_derived("new")
        await conn.execute(
            update(schedule).where(schedule.c.id == new.c.id).values(
                next_fire_at=new.c.next, last_fire_at=new.c.last,
                fire_count=schedule.c.fire_count + 1, last_error=new.c.error,
                updated_at=now_ms)
        )
        return
    # SQLite runs an executemany in process, one prepared statement for every row.
    await conn.execute(
        update(schedule).where(schedule.c.id == bindparam("b_id")).values(
            next_fire_at=bindparam("b_next"), last_fire_at=bindparam("b_last"),
            fire_count=schedule.c.fire_count + 1, last_error=bindparam("b_error"),
            updated_at=now_ms),
        advances,
    )


def _array(values: list[Any], item: Any) -> Any:
    return cast(bindparam(None, values, type_=ARRAY(item)), ARRAY(item))


async def _run_handler(conn: AsyncConnection, entry: _Entry, fires: list[Fire]) -> dict[int, str]:
    """Run the handler on the fires; {index: error} of the fires that failed. A batch that
    fails is retried fire by fire, so one bad record loses only its own fire."""
    if entry.batch:
        try:
            async with conn.begin_nested():
                await entry.fn(conn, fires)
            return {}
        except Exception as exc:
            if len(fires) == 1:
                return {0: _error(exc)}
    failures: dict[int, str] = {}
    for n, fire in enumerate(fires):
        try:
            async with conn.begin_nested():
                await entry.fn(conn, [fire] if entry.batch else fire)
        except Exception as exc:
            failures[n] = _error(exc)
    return failures


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]
