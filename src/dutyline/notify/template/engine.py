"""Compile and render notification templates in the sandbox.

Sources compile once (an LRU cache keyed by channel kind and source), so delivery renders a
precompiled template. Rendering is bounded (kit.gotemplate Limits): steps, output size and
`template` call depth.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from dutyline.kit.gotemplate import Limits, Template
from dutyline.kit.gotemplate.funcs import notification_funcs
from dutyline.notify.template.defaults import HTML_CHANNELS

LIMITS = Limits(max_steps=100_000, max_output=256_000, max_depth=20)
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
