"""Saying, at start-up, which delivery channels cannot send with the server's settings and
what to set: printed for the operator and logged, by `serve` and `worker` alike."""

from __future__ import annotations

import click
import structlog

from dutyline.config import Settings
from dutyline.notify.delivery.adapters import needs

log = structlog.get_logger("dutyline.notify.delivery")


def announce(settings: Settings) -> list[str]:
    """Print (stderr) and log one line per channel that cannot deliver; returns them."""
    lines = needs.startup_lines(settings)
    for line in lines:
        click.echo(line, err=True)
        log.warning("notify.delivery.unavailable", detail=line)
    return lines
