"""Saying, at start-up, how each delivery channel sends with the server's settings, or what
to set for it: printed for the operator by `serve` and `worker` alike, once (not again as a
log record on the same terminal)."""

from __future__ import annotations

import click

from dutyline.config import Settings
from dutyline.notify.delivery.adapters import needs


def announce(settings: Settings) -> list[str]:
    """Print (stderr) the start-up lines of delivery; returns them."""
    lines = needs.startup_lines(settings)
    for line in lines:
        click.echo(line, err=True)
    return lines
