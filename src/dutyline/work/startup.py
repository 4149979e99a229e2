"""Which background loops a `serve` process runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dutyline.config import Settings

if TYPE_CHECKING:
    from dutyline.app import BackgroundTask


def default_background(settings: Settings) -> list[BackgroundTask]:
    if not settings.run_workers:
        return []
    from dutyline.work.worker import worker_loop

    return [worker_loop]
