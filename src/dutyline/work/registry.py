"""Which coroutine runs a job of a given kind, and what happens when one dies.

Domains register their handlers on import, with `@job_handler("incident.notify")` in the
task modules they list in the composition root (domains.py), and, where a dead job would
leave the domain's own state hanging (a migration "running" forever), an
`@job_on_dead("incident.notify")` hook next to it. Every process imports every domain's task
modules at start (build_runtime), and the worker also those named in `DUTYLINE_JOB_MODULES`,
before it claims anything, so a worker never claims (or buries) a kind it could not have
known about only because a module was not imported yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.unit import Unit, system_actor
from dutyline.kit.clock import Clock, millis

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime
    from dutyline.work.queue import Handoff


@dataclass(frozen=True)
class JobContext:
    """What a handler gets besides its payload.

    `conn` is the job's own transaction: write the job's effects there, so they commit
    together with the job's `done` (or not at all). Never commit it."""

    conn: AsyncConnection
    runtime: Runtime
    job_id: int
    kind: str
    attempt: int  # 1 on the first run
    max_attempts: int
    worker_id: str
    # Where the jobs this one makes for its own worker go (queue.NewJobs' `handoff`); None
    # when the handler runs outside a worker (tests, tools).
    handoff: Handoff | None = None
    # The job's unit of work (api/unit.py), joined to `conn`: it holds every actor made
    # while the handler runs and flushes what their services noted before the job's `done`.
    unit: Unit | None = None

    @property
    def clock(self) -> Clock:
        return self.runtime.clock

    def system_actor(self, account_id: int) -> Actor:
        """The service acting inside an account for this job: its writes reach the audit
        log as the system's, named after the job."""
        if self.unit is not None:
            return self.unit.system(account_id)
        return system_actor(account_id, self.runtime.clock)

    def now_ms(self) -> int:
        return millis(self.runtime.clock)


JobHandler = Callable[[JobContext, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class DeadJobContext:
    """What an on_dead hook gets besides the job's payload.

    The hook runs once per dead job, whatever killed it: its last attempt failed, or its
    lease ran out on the last attempt (the worker stopped or stalled) and the reaper buried
    it. Either way nothing of that attempt committed. `conn` is the transaction that marks
    the job dead: the hook's writes commit together with the burial, or not at all (a hook
    that raises has its writes rolled back to a savepoint; the job is dead regardless). On
    SQLite that transaction holds the only writer lock, so a hook only writes rows: no
    outbound calls, nothing slow. Never commit it."""

    conn: AsyncConnection
    runtime: Runtime
    job_id: int
    kind: str
    attempts: int
    error: str  # the job's last_error: the last attempt's failure, or "lease expired"
    lease_expired: bool
    # The hook's unit of work, joined to `conn` (inside the hook's savepoint): what its
    # services note is flushed with the burial, as a job's is with its `done`.
    unit: Unit | None = None

    @property
    def clock(self) -> Clock:
        return self.runtime.clock

    def system_actor(self, account_id: int) -> Actor:
        """The service acting inside an account for this hook (as JobContext's)."""
        if self.unit is not None:
            return self.unit.system(account_id)
        return system_actor(account_id, self.runtime.clock)

    def now_ms(self) -> int:
        return millis(self.runtime.clock)


DeadJobHook = Callable[[DeadJobContext, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class BatchJob:
    job_id: int
    attempt: int  # 1 on the first run
    max_attempts: int
    payload: dict[str, Any]


@dataclass(frozen=True)
class BatchContext:
    """What a batch handler gets: several claimed jobs of one kind and ONE transaction for
    all their effects, which commit together with every job's `done` or not at all. When
    the handler raises (or a lease was lost meanwhile), nothing of the batch commits and
    the worker runs each job again, alone, through the kind's single handler: so a batch
    handler never has to isolate one job's failure from the others'. What a batch did
    outside the database (a webhook it sent) is then done again by the single runs: outbound
    effects are at least once, as for any job, and carry an idempotency key. Never commit
    `conn`."""

    conn: AsyncConnection
    runtime: Runtime
    kind: str
    worker_id: str
    jobs: list[BatchJob]
    handoff: Handoff | None = None  # as JobContext's
    unit: Unit | None = None  # as JobContext's

    @property
    def clock(self) -> Clock:
        return self.runtime.clock

    def now_ms(self) -> int:
        return millis(self.runtime.clock)


BatchHandler = Callable[[BatchContext], Awaitable[None]]


@dataclass(frozen=True)
class BatchSpec:
    fn: BatchHandler
    max_size: int


class DuplicateHandler(Exception):
    pass


class Registry:
    def __init__(self) -> None:
        self._handlers: dict[str, JobHandler] = {}
        self._dead_hooks: dict[str, DeadJobHook] = {}
        self._batches: dict[str, BatchSpec] = {}

    def register(self, kind: str, handler: JobHandler) -> None:
        _add(self._handlers, kind, handler, "handled")

    def register_on_dead(self, kind: str, hook: DeadJobHook) -> None:
        _add(self._dead_hooks, kind, hook, "given an on_dead hook")

    def register_batch(self, kind: str, fn: BatchHandler, *, max_size: int) -> None:
        """A way to run several due jobs of `kind` at once (the kind keeps its single handler,
        which runs a job that is due alone and every job of a batch that failed)."""
        if max_size < 2:
            raise ValueError("a batch holds at least two jobs")
        existing = self._batches.get(kind)
        if existing is not None and _qualname(existing.fn) != _qualname(fn):
            raise DuplicateHandler(
                f"job kind {kind!r} already batched by {_qualname(existing.fn)}")
        self._batches[kind] = BatchSpec(fn, max_size)

    def handler(self, kind: str) -> Callable[[JobHandler], JobHandler]:
        def decorate(fn: JobHandler) -> JobHandler:
            self.register(kind, fn)
            return fn

        return decorate

    def on_dead(self, kind: str) -> Callable[[DeadJobHook], DeadJobHook]:
        def decorate(fn: DeadJobHook) -> DeadJobHook:
            self.register_on_dead(kind, fn)
            return fn

        return decorate

    def batch_handler(
        self, kind: str, *, max_size: int = 16
    ) -> Callable[[BatchHandler], BatchHandler]:
        def decorate(fn: BatchHandler) -> BatchHandler:
            self.register_batch(kind, fn, max_size=max_size)
            return fn

        return decorate

    def batch(self, kind: str) -> BatchSpec | None:
        """The kind's batch handler, if it has one and a single handler to fall back on."""
        return self._batches.get(kind) if kind in self._handlers else None

    def get(self, kind: str) -> JobHandler | None:
        return self._handlers.get(kind)

    def dead_hook(self, kind: str) -> DeadJobHook | None:
        return self._dead_hooks.get(kind)

    def kinds(self) -> list[str]:
        return sorted(self._handlers)


def _add(table: dict[str, Any], kind: str, fn: Callable[..., Any], what: str) -> None:
    existing = table.get(kind)
    # Re-importing the same module (tests, reloads) registers the same function again.
    if existing is not None and _qualname(existing) != _qualname(fn):
        raise DuplicateHandler(f"job kind {kind!r} already {what} by {_qualname(existing)}")
    table[kind] = fn


def _qualname(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


# The process-wide registry domains register into at import time; tests may build their own
# Registry and hand it to the worker instead.
registry = Registry()
job_handler = registry.handler
job_on_dead = registry.on_dead
job_batch_handler = registry.batch_handler


def load_handler_modules(extra: Iterable[str] = ()) -> list[str]:
    """Import the configured extra handler modules (the domains' own are imported by the
    composition root at start); return their names."""
    names = list(extra)
    for name in names:
        importlib.import_module(name)
    return names
