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
