"""Time comes from a clock object so tests can move it (rule 4 of the house)."""

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


class FakeClock:
    """A clock tests set and advance by hand."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    def set(self, value: float) -> None:
        self._now = value


def seconds(clock: Clock) -> int:
    return int(clock.now())


def millis(clock: Clock) -> int:
    return int(clock.now() * 1000)
