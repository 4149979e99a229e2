"""Compile and render notification templates in the sandbox.

Sources compile once (an LRU cache keyed by channel kind and source), so delivery renders a
precompiled template. Rendering is bounded while it runs (kit.gotemplate Limits): steps,
output size, the size of any value built (`printf`, `replace`, `join`...), `range` iterations,
`template` call depth and wall-clock time. Bodies written by members render off the event
loop (`render_off_loop`), parsed there too: one that runs to its time budget holds a worker
thread, not the server; each of its steps is bounded, and a function whose cost grows with its
input looks at the clock itself (kit/gotemplate/budget.py), so the thread keeps yielding the
interpreter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from dutyline.kit.gotemplate import Limits, Template
from dutyline.kit.gotemplate.funcs import notification_funcs
from dutyline.notify.template.defaults import HTML_CHANNELS

LIMITS = Limits(max_steps=100_000, max_output=256_000, max_depth=20, max_value=256_000,
                max_iterations=50_000, max_seconds=0.5)
_FUNC_NAMES: dict[str, Any] = notification_funcs()


@functools.lru_cache(maxsize=512)
def compile_body(source: str, html: bool) -> Template:
    """Parse a body; TemplateSyntaxError for a bad one (unknown functions included)."""
    return Template.parse(source, name="body", funcs=_FUNC_NAMES, html=html)


def compile_for(channel: str, source: str) -> Template:
    return compile_body(source, channel in HTML_CHANNELS)


@functools.lru_cache(maxsize=64)
def _funcs_for(tz: str, now: Callable[[], float] | None) -> dict[str, Any]:
    # bound per (zone, clock) once: a render reuses the same dict (Template caches the merge)
    return notification_funcs(tz, now)


def render(tmpl: Template, data: dict[str, Any], *, tz: str = "",
           now: Callable[[], float] | None = None) -> str:
    """`now`: the clock `ago` measures from (the actor's; the system clock when None)."""
    return tmpl.render(data, LIMITS, funcs=_funcs_for(tz, now))


def compile_and_render(channel: str, source: str, data: dict[str, Any], *, tz: str = "",
                       now: Callable[[], float] | None = None) -> str:
    return render(compile_for(channel, source), data, tz=tz, now=now)


async def render_off_loop(channel: str, source: str, data: dict[str, Any], *, tz: str = "",
                          now: Callable[[], float] | None = None) -> str:
    """Compile (a member's body of 64 KiB parses in a good part of a second) and render,
    in a worker thread."""
    return await anyio.to_thread.run_sync(functools.partial(
        compile_and_render, channel, source, data, tz=tz, now=now))
