"""Which coroutine runs a job of a given kind.

Domains register their handlers on import, with `@job_handler("incident.notify")` in their
`tasks.py`; the worker imports the built-in handler modules plus any named in
`DUTYLINE_JOB_MODULES` before it claims anything, so a worker never claims a kind it could
not have known about only because a module was not imported yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.kit.clock import Clock, millis

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

# Modules of the domains that define job handlers; each registers on import.
BUILTIN_JOB_MODULES: tuple[str, ...] = (
    "dutyline.incident.ingest.tasks",
    "dutyline.status_page.migration.tasks",
    "dutyline.status_page.notify",
    "dutyline.status_page.public.subscribe",
)


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

    @property
    def clock(self) -> Clock:
        return self.runtime.clock

    def now_ms(self) -> int:
        return millis(self.runtime.clock)


JobHandler = Callable[[JobContext, dict[str, Any]], Awaitable[None]]


class DuplicateHandler(Exception):
    pass


class Registry:
    def __init__(self) -> None:
        self._handlers: dict[str, JobHandler] = {}

    def register(self, kind: str, handler: JobHandler) -> None:
        existing = self._handlers.get(kind)
        # Re-importing the same module (tests, reloads) registers the same function again.
        if existing is not None and _qualname(existing) != _qualname(handler):
            raise DuplicateHandler(f"job kind {kind!r} already handled by {_qualname(existing)}")
        self._handlers[kind] = handler

    def handler(self, kind: str) -> Callable[[JobHandler], JobHandler]:
        def decorate(fn: JobHandler) -> JobHandler:
            self.register(kind, fn)
            return fn

        return decorate

    def get(self, kind: str) -> JobHandler | None:
        return self._handlers.get(kind)

    def kinds(self) -> list[str]:
        return sorted(self._handlers)


def _qualname(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


# The process-wide registry domains register into at import time; tests may build their own
# Registry and hand it to the worker instead.
registry = Registry()
job_handler = registry.handler


def load_handler_modules(extra: Iterable[str] = ()) -> list[str]:
    """Import the built-in handler modules and the configured extra ones; return their names."""
    names = [*BUILTIN_JOB_MODULES, *extra]
    for name in names:
        importlib.import_module(name)
    return names
