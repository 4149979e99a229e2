"""Time comes from a clock object so tests can move it (rule 4 of the house; the clock tests
move by hand is tests/fixtures/clock.py)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class FixedClock:
    """A clock stopped at one instant: for work done as of a known moment (an alert rule's
    evaluation) that acts through services reading the time from their actor."""

    def __init__(self, at: float) -> None:
        self._at = at

    def now(self) -> float:
        return self._at


def millis(clock: Clock) -> int:
    return int(clock.now() * 1000)
