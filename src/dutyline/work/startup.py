"""Which background loops a `serve` process runs."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from dutyline.api.runtime import Runtime
from dutyline.config import Settings

# Background loops started with the app (durable-work workers, flushers); each receives the
# runtime and runs until cancelled.
BackgroundTask = Callable[[Runtime], Coroutine[Any, Any, None]]


def default_background(settings: Settings) -> list[BackgroundTask]:
    if not settings.run_workers:
        return []
    from dutyline.work.worker import worker_loop

    return [worker_loop]
