"""The size bound on the values a running template builds.

A function checks the size of what it is about to build *before* building it (a `printf`
width, a `replace` that multiplies its input, a `join` of many parts, the formatting of a
list), so no single call can make the process allocate a huge string while it holds the
interpreter; the executor also checks every string a function returns. The bound is the
running execution's `Limits.max_value`, set by the executor for the duration of a render.
"""

from __future__ import annotations

from contextvars import ContextVar

from .errors import TemplateLimitError

DEFAULT_MAX_VALUE = 1_000_000  # characters

_MAX_VALUE: ContextVar[int] = ContextVar("gotemplate_max_value", default=DEFAULT_MAX_VALUE)


def max_value() -> int:
    return _MAX_VALUE.get()


def check_size(size: int, what: str) -> None:
    """Refuse to build a value of `size` characters when it is over the bound."""
    cap = _MAX_VALUE.get()
    if size > cap:
        raise TemplateLimitError(
            f"{what} would build a value of {size} characters, over the limit of {cap}")


def bind(cap: int) -> object:
    """Set the bound for the current render; `unbind` with the returned token."""
    return _MAX_VALUE.set(cap)


def unbind(token: object) -> None:
    _MAX_VALUE.reset(token)  # type: ignore[arg-type]
