"""Saying, at start-up, which delivery channels cannot send with the server's settings and
what to set: printed for the operator and logged, by `serve` and `worker` alike."""

from __future__ import annotations

import click
import structlog

from dutyline.config import Settings
from dutyline.notify.delivery.adapters import needs

log = structlog.get_logger("dutyline.notify.delivery")


def announce(settings: Settings) -> list[str]:
    """Print (stderr) one line per channel that cannot deliver, and log them as one record
    (the log shares stderr: one line of JSON rather than a copy of each); returns them."""
    lines = needs.startup_lines(settings)
    for line in lines:
        click.echo(line, err=True)
    if lines:
        log.warning("notify.delivery.unavailable",
                    unavailable=[line.removeprefix("delivery: ") for line in lines])
    return lines
