"""The worker loop: claim due jobs, run them concurrently, heartbeat, reap (running the
on_dead hooks of the jobs it buries), prune.

Kinds with a batch handler (registry.py) run several due jobs at once: the loop fills a batch
with a claim of that kind when more work is due than it has slots for, and the batch costs
one slot, one transaction and one heartbeat. Under a burst that is what turns a commit and a
handful of statements per job into a few per batch.

Jobs that a job hands off (queue.Handoff: a step's deliveries) are already claimed by this
loop when their maker commits, and run next in the maker's slot.

It runs inside `serve` (as a background task of the app) or alone as `dutyline worker`. Any
number of loops in any number of processes may share one database: claims never overlap, and
fencing (see queue.py) keeps a job that was presumed dead from committing twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import signal
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.unit import Call, unit
from dutyline.db.engine import CancellationGuard, Database
from dutyline.kit.clock import millis
from dutyline.work import queue, retention, scheduler, wakeup
from dutyline.work.registry import (
    BatchContext,
    BatchJob,
    BatchSpec,
    DeadJobContext,
    JobContext,
    Registry,
    load_handler_modules,
)
from dutyline.work.registry import registry as default_registry

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

log = structlog.get_logger("dutyline.work")

DAY_MS = 86_400_000
PRUNE_INTERVAL_S = 3600.0
# How often the loop fires due schedules (work/scheduler.py): a fire is at most this late.
SCHEDULE_INTERVAL_S = 0.5
# How long an idle loop sleeps at most before it looks at the table again, when nothing it
# knows of is due sooner and no ring woke it (wakeup.py). SQLite's other processes cannot
# ring it, so it looks more often there; a look is one read of the claim index.
POLL_S = {"postgresql": 1.0, "sqlite": 0.25}
SHUTDOWN_GRACE_S = 10.0


def new_worker_id() -> str:
    """Unique per loop; host and pid make a lease's owner findable in the table."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(4)}"


@contextlib.asynccontextmanager
async def job_transaction(db: Database) -> AsyncIterator[AsyncConnection]:
    """The job's transaction, begun lazily by its first statement.

    Lazily, because on SQLite a write transaction holds the only writer lock: a handler that
    does slow outbound work before touching the database must not block every other writer
    (and this job's own heartbeat) meanwhile. Committed on success, rolled back on error."""
    async with (guard := CancellationGuard()), db.engine.connect() as conn:
        if db.is_sqlite:
            # The writer lock too is taken by the first statement, not here (lazy_writer).
            await conn.execution_options(**db.lazy_writer())
        try:
            async with guard.body():
                yield conn
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()


class UnknownJobKind(Exception):
    pass


class Worker:
    def __init__(
        self,
        runtime: Runtime,
        *,
        registry: Registry | None = None,
        worker_id: str | None = None,
        concurrency: int | None = None,
        lease_ms: int | None = None,
        idle_min_s: float = 0.05,
        idle_max_s: float | None = None,
        rng: random.Random | None = None,
        handoff: bool = True,
    ) -> None:
        settings = runtime.settings
        self.runtime = runtime
        self.db = runtime.db
        self.clock = runtime.clock
        self.registry = registry or default_registry
        self.worker_id = worker_id or new_worker_id()
        self.concurrency = max(1, concurrency or settings.worker_concurrency)
        self.lease_ms = lease_ms or settings.job_lease_seconds * 1000
        self.heartbeat_s = self.lease_ms / 3000
        # Often enough that a dead worker's jobs wait about one lease, rarely enough to be free.
        self.reap_interval_s = max(0.2, min(self.lease_ms / 4000, 15.0))
        self.retention_ms = settings.job_retention_days * DAY_MS
        # The shortest sleep (a due job another loop holds) and the longest (see POLL_S).
        self.idle_min_s = idle_min_s
        self.idle_max_s = idle_max_s or min(POLL_S.get(self.db.dialect, 1.0),
                                            wakeup.HORIZON_MS / 1000)
        self.rng = rng or random.Random()
        # Whether jobs that a job makes for its worker (queue.Handoff) run here; without,
        # they are pending jobs like any other (tests that claim them one by one).
        self.hands_off = handoff
        self.log = log.bind(worker_id=self.worker_id)

    def _now(self) -> int:
        return millis(self.clock)

    def _count(self, kind: str, outcome: str) -> None:
        self.runtime.metrics.jobs.labels(kind=kind, outcome=outcome).inc()

    async def claim(self, limit: int, *, kind: str | None = None) -> list[queue.ClaimedJob]:
        return await queue.claim(
            self.db, self.worker_id, now_ms=self._now(), lease_ms=self.lease_ms, limit=limit,
            kind=kind,
        )

    async def units(self, jobs: list[queue.ClaimedJob], *, more_due: bool
                    ) -> list[list[queue.ClaimedJob]]:
        """What the claimed jobs run as: a job alone, or a batch of jobs of one kind that has
        a batch handler. When the claim was cut short by the free slots (`more_due`), each
        batch is filled up with a claim of its own kind."""
        units: list[list[queue.ClaimedJob]] = []
        batched: dict[str, list[queue.ClaimedJob]] = {}
        sizes: dict[str, int] = {}
        for claimed in jobs:
            spec = self.registry.batch(claimed.kind)
            if spec is None:
                units.append([claimed])
            else:
                batched.setdefault(claimed.kind, []).append(claimed)
                sizes[claimed.kind] = spec.max_size
        for kind, group in batched.items():
            size = sizes[kind]
            if more_due and len(group) < size:
                try:
                    group += await self.claim(size - len(group), kind=kind)
                except Exception as exc:
                    self.log.warning("filling a job batch failed", kind=kind, cause=repr(exc))
            units += [group[i:i + size] for i in range(0, len(group), size)]
        return units

    def _batch_spec(self, kind: str) -> BatchSpec:
        spec = self.registry.batch(kind)
        assert spec is not None
        return spec

    async def run_unit(self, unit: list[queue.ClaimedJob]) -> str:
        return await (self.execute(unit[0]) if len(unit) == 1 else self.execute_batch(unit))

    def _handoff(self) -> queue.Handoff | None:
        return queue.Handoff(owner=self.worker_id, lease_ms=self.lease_ms) \
            if self.hands_off else None

    async def run_handed(self, handoff: queue.Handoff | None) -> None:
        """Run what a job that just committed handed to this worker (queue.Handoff), in
        the slot of the job that made it: under load the loop claims no more than it can
        run, made work included."""
        if handoff is not None and handoff.jobs:
            units = await self.units(handoff.jobs, more_due=False)
            await asyncio.gather(*(self.run_unit(unit) for unit in units))

    async def execute(self, claimed: queue.ClaimedJob) -> str:
        """Run one claimed job to an outcome: done, retry, dead, lease_lost or released."""
        jlog = self.log.bind(job_id=claimed.id, kind=claimed.kind, attempt=claimed.attempts)
        stop = asyncio.Event()
        beat = asyncio.create_task(self._heartbeat(claimed.id, stop, jlog))
        handoff = self._handoff()
        try:
            outcome = await self._run_handler(claimed, jlog, handoff)
        except asyncio.CancelledError:
            beat.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._release(claimed, jlog))
            raise
        finally:
            stop.set()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        self._count(claimed.kind, outcome)
        if outcome == "done":
            await self.run_handed(handoff)
        return outcome

    async def execute_batch(self, batch: list[queue.ClaimedJob]) -> str:
        """Run claimed jobs of one kind through its batch handler, in one transaction with
        all their `done`s: "done". When that fails (the handler raised, a lease was lost),
        nothing of it committed and each job runs alone instead: "split"."""
        kind, ids = batch[0].kind, [claimed.id for claimed in batch]
        blog = self.log.bind(kind=kind, job_ids=ids)
        stop = asyncio.Event()
        beat = asyncio.create_task(self._heartbeat(ids, stop, blog))
        handoff = self._handoff()
        try:
            committed = await self._run_batch(batch, blog, handoff)
        except asyncio.CancelledError:
            beat.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.gather(
                    *(self._release(claimed, blog) for claimed in batch)))
            raise
        finally:
            stop.set()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        if committed:
            self.runtime.metrics.jobs.labels(kind=kind, outcome="done").inc(len(batch))
            await self.run_handed(handoff)
            return "done"
        # Each alone, on the attempt its claim already counted: one job's fault (or lost
        # lease) now costs only that job.
        await asyncio.gather(*(self.execute(claimed) for claimed in batch))
        return "split"

    async def _run_batch(self, batch: list[queue.ClaimedJob], blog: structlog.BoundLogger,
                         handoff: queue.Handoff | None) -> bool:
        kind, ids = batch[0].kind, [claimed.id for claimed in batch]
        try:
            async with job_transaction(self.db) as conn:
                async with unit(self.runtime, None, write=True, conn=conn,
                                call=Call(f"job-{ids[0]}")) as work:
                    await self._batch_spec(kind).fn(BatchContext(
                        conn=conn, runtime=self.runtime, kind=kind, worker_id=self.worker_id,
                        jobs=[BatchJob(job_id=c.id, attempt=c.attempts,
                                       max_attempts=c.max_attempts, payload=c.payload)
                              for c in batch], handoff=handoff, unit=work))
                await queue.mark_done(conn, ids, self.worker_id, now_ms=self._now())
        except Exception as exc:
            blog.warning("job batch failed; its jobs run alone",
                         error=queue.truncate_error(f"{type(exc).__name__}: {exc}"))
            return False
        blog.debug("job batch done")
        return True

    async def _run_handler(self, claimed: queue.ClaimedJob, jlog: structlog.BoundLogger,
                           handoff: queue.Handoff | None) -> str:
        handler = self.registry.get(claimed.kind)
        try:
            if handler is None:
                # Retried, not dropped: a newer worker that knows the kind may be rolling out.
                raise UnknownJobKind(f"no handler for job kind {claimed.kind!r}")
            async with job_transaction(self.db) as conn:
                # The job's unit of work (api/unit.py) in the job's own transaction: it
                # flushes what the handler's services noted before the job is done.
                async with unit(self.runtime, None, write=True, conn=conn,
                                call=Call(f"job-{claimed.id}")) as work:
                    await handler(JobContext(
                        conn=conn,
                        runtime=self.runtime,
                        job_id=claimed.id,
                        kind=claimed.kind,
                        attempt=claimed.attempts,
                        max_attempts=claimed.max_attempts,
                        worker_id=self.worker_id,
                        handoff=handoff,
                        unit=work,
                    ), claimed.payload)
                await queue.mark_done(conn, claimed.id, self.worker_id, now_ms=self._now())
        except queue.LeaseLost:
            jlog.warning("job lease lost; its effects were rolled back")
            return "lease_lost"
        except Exception as exc:
            error = queue.truncate_error(f"{type(exc).__name__}: {exc}")
            try:
                status = await queue.mark_failed(
                    self.db, claimed, error, now_ms=self._now(), rng=self.rng,
                    on_dead=self._on_dead,
                )
            except Exception as record_exc:
                # The reaper will hand the job back when its lease runs out.
                jlog.error("could not record job failure", error=error, cause=repr(record_exc))
                return "error"
            if status is None:
                jlog.warning("job failed after its lease was lost", error=error)
                return "lease_lost"
            level = jlog.error if status == queue.DEAD else jlog.warning
            level("job failed", error=error, status=status)
            return "dead" if status == queue.DEAD else "retry"
        jlog.debug("job done")
        return "done"

    async def _release(self, claimed: queue.ClaimedJob, jlog: structlog.BoundLogger) -> None:
        try:
            if await queue.release(self.db, claimed, now_ms=self._now()):
                self._count(claimed.kind, "released")
                jlog.info("job released at shutdown")
        except Exception as exc:
            jlog.warning("could not release job; the reaper will", cause=repr(exc))

    async def _heartbeat(
        self, job_ids: int | list[int], stop: asyncio.Event, jlog: structlog.BoundLogger
    ) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.heartbeat_s)
            if stop.is_set():
                return
            try:
                ours = await queue.extend_lease(
                    self.db, job_ids, self.worker_id, now_ms=self._now(), lease_ms=self.lease_ms
                )
            except Exception as exc:
                jlog.warning("lease heartbeat failed", cause=repr(exc))
                continue
            if not ours:
                # Fencing will refuse the completion. A batch keeps extending the leases it
                # still holds: its jobs run alone next, and must not be reaped meanwhile.
                jlog.warning("lease lost while the job ran")
                if not isinstance(job_ids, list):
                    return

    async def _on_dead(self, conn: AsyncConnection, dead: queue.DeadJob) -> None:
        """Run the kind's on_dead hook inside the transaction that buries the job."""
        hook = self.registry.dead_hook(dead.kind)
        if hook is None:
            return
        try:
            # In a savepoint: a hook that fails (every time, perhaps) loses only its own
            # writes, and must not keep this job, or the other leases of the same reap,
            # from being buried or handed back. Its unit of work flushes what its services
            # noted inside that savepoint.
            async with conn.begin_nested(), unit(self.runtime, None, write=True, conn=conn,
                                                 call=Call(f"job-{dead.id}")) as work:
                await hook(DeadJobContext(
                    conn=conn,
                    runtime=self.runtime,
                    job_id=dead.id,
                    kind=dead.kind,
                    attempts=dead.attempts,
                    error=dead.error,
                    lease_expired=dead.lease_expired,
                    unit=work,
                ), dead.payload)
        except Exception as exc:
            error = queue.truncate_error(f"{type(exc).__name__}: {exc}")
            self.log.error("on_dead hook failed; the job is dead without it",
                           job_id=dead.id, kind=dead.kind, error=error)
            self._count(dead.kind, "on_dead_failed")
            await queue.note_on_dead_failure(conn, dead, error)

    async def reap(self) -> None:
        try:
            requeued, dead = await queue.reap_expired(
                self.db, now_ms=self._now(), on_dead=self._on_dead
            )
        except Exception as exc:
            self.log.warning("lease reaper failed", cause=repr(exc))
            return
        if requeued or dead:
            self.log.warning("expired job leases reaped", requeued=requeued, dead=dead)
            if dead:
                self.runtime.metrics.jobs.labels(kind="*", outcome="dead").inc(dead)

    async def fire_schedules(self) -> int:
        """Fire every due schedule, a batch per transaction; returns how many fired."""
        fired = 0
        try:
            while True:
                claimed = await scheduler.fire_due(
                    self.db, now_ms=self._now(), limit=scheduler.BATCH
                )
                fired += claimed
                if claimed < scheduler.BATCH:
                    return fired
        except Exception as exc:
            self.log.warning("firing schedules failed", cause=repr(exc))
            return fired

    async def until_due(self) -> float:
        """How long an idle loop may sleep: until the earliest pending job is due, at most
        one poll interval, at least `idle_min_s` (a due job may be held by another loop)."""
        try:
            due = await queue.next_due_at(self.db)
        except Exception as exc:
            self.log.warning("reading the next due job failed", cause=repr(exc))
            return self.idle_max_s
        if due is None:
            return self.idle_max_s
        return min(self.idle_max_s, max(self.idle_min_s, (due - self._now()) / 1000))

    async def prune(self) -> None:
        try:
            pruned = await queue.prune_done(self.db, older_than_ms=self._now() - self.retention_ms)
        except Exception as exc:
            self.log.warning("job pruning failed", cause=repr(exc))
            return
        if pruned:
            self.log.info("old done jobs pruned", count=pruned)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Loop until `stop` is set (then finish in-flight jobs, within a grace period) or
        until cancelled (then hand in-flight jobs back)."""
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        in_flight: set[asyncio.Task[str]] = set()  # a job alone, or a batch
        stopping = asyncio.create_task(stop.wait())
        bell = wakeup.Doorbell()
        listener = (asyncio.create_task(wakeup.listen(self.db, bell, stop))
                    if self.db.is_postgres else None)
        next_reap = next_prune = next_schedule = loop.time()
        self.log.info("worker started", concurrency=self.concurrency, lease_ms=self.lease_ms,
                      kinds=self.registry.kinds())
        try:
            while not stop.is_set():
                bell.clear()  # before looking: a ring from here on wakes the wait below
                if loop.time() >= next_reap:
                    await self.reap()
                    next_reap = loop.time() + self.reap_interval_s
                if loop.time() >= next_schedule:
                    await self.fire_schedules()
                    next_schedule = loop.time() + SCHEDULE_INTERVAL_S
                if loop.time() >= next_prune:
                    await self.prune()
                    next_prune = loop.time() + PRUNE_INTERVAL_S
                free = self.concurrency - len(in_flight)
                jobs: list[queue.ClaimedJob] = []
                if free > 0:
                    try:
                        jobs = await self.claim(free)
                    except Exception as exc:
                        self.log.warning("claiming jobs failed", cause=repr(exc))
                for unit in await self.units(jobs, more_due=len(jobs) == free):
                    task = asyncio.create_task(self.run_unit(unit))
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
                if jobs and len(jobs) == free:
                    continue  # more may be due: look again at once
                # A claim cut short found everything that was due: looking again at once
                # would only find nothing (on SQLite, a write transaction for it).
                free = self.concurrency - len(in_flight)
                timeout = await self.until_due() if free > 0 else self.reap_interval_s
                timeout = min(timeout, max(0.0, next_schedule - loop.time()))
                # Wake on stop, a ring, a free slot, or when the next job is due.
                rung = asyncio.create_task(bell.wait())
                await asyncio.wait({stopping, rung, *in_flight}, timeout=timeout,
                                   return_when=asyncio.FIRST_COMPLETED)
                rung.cancel()
            if in_flight:
                await asyncio.wait(in_flight, timeout=SHUTDOWN_GRACE_S)
        finally:
            stopping.cancel()
            bell.close()
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(BaseException):
                    await listener
            for task in in_flight:
                task.cancel()
            for task in list(in_flight):
                with contextlib.suppress(BaseException):
                    await task
            self.log.info("worker stopped")


async def worker_loop(
    runtime: Runtime, *, stop: asyncio.Event | None = None, registry: Registry | None = None
) -> None:
    """The background task `serve` starts; also the body of `dutyline worker`."""
    load_handler_modules(runtime.settings.job_modules)
    try:
        await retention.ensure_schedule(runtime.db, now_ms=millis(runtime.clock))
    except Exception as exc:  # the loop runs without it; the next start makes it
        log.warning("making the retention schedule failed", cause=repr(exc))
    await Worker(runtime, registry=registry).run(stop)


async def run_standalone(runtime: Runtime) -> None:
    """`dutyline worker`: run the loop until SIGTERM or SIGINT, then shut down cleanly.
    The runtime is built by the caller (the CLI, through the composition root)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        await worker_loop(runtime, stop=stop)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        await runtime.kept_sessions.aclose()
        await runtime.limiter.close()
        await runtime.db.dispose()
