"""The bounds a running template's functions check themselves: the size of a value and the
render's clock.

A function checks the size of what it is about to build *before* building it (a `printf`
width, a `replace` that multiplies its input, a `join` of many parts, the formatting of a
list), so no single call can make the process allocate a huge string while it holds the
interpreter; the executor also checks every string a function returns. A function whose cost
grows with its input looks at the clock itself (`check_time`, or `Meter.tick` in its inner
loop: `mdToHtml`), so the render's time bound holds inside one call, not only between steps.
The bounds are the running execution's `Limits`, bound by the executor for its duration.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar

from .errors import TemplateLimitError

DEFAULT_MAX_VALUE = 1_000_000  # characters


class Meter:
    """One render's value bound and deadline."""

    __slots__ = ("cap", "clock", "deadline", "seconds")

    def __init__(self, cap: int, seconds: float = float("inf"),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = cap
        self.seconds = seconds
        self.clock = clock
        self.deadline = clock() + seconds

    def check_time(self, what: str) -> None:
        if self.clock() > self.deadline:
            raise TemplateLimitError(
                f"{what} exceeded the time limit ({self.seconds:g} s)")


# Outside a render (a function called directly): the size bound, no deadline.
_UNBOUND = Meter(DEFAULT_MAX_VALUE)
_METER: ContextVar[Meter | None] = ContextVar("gotemplate_meter", default=None)


def meter() -> Meter:
    return _METER.get() or _UNBOUND


def max_value() -> int:
    return meter().cap


def check_size(size: int, what: str) -> None:
    """Refuse to build a value of `size` characters when it is over the bound."""
    cap = meter().cap
    if size > cap:
        raise TemplateLimitError(
            f"{what} would build a value of {size} characters, over the limit of {cap}")


def check_time(what: str) -> None:
    """Refuse to go on past the render's deadline."""
    meter().check_time(what)


def bind(m: Meter) -> object:
    """Set the bounds for the current render; `unbind` with the returned token."""
    return _METER.set(m)


def unbind(token: object) -> None:
    _METER.reset(token)  # type: ignore[arg-type]
