"""The three engines other branches build, each behind ONE small adapter function.

- the filter engine (`dutyline.kit.filters`, `dutyline.kit.timefilters`): `rule_matches`,
  `check_filters`;
- who is on call (`dutyline.schedule.service.oncall_for_schedules`): `oncall`,
  `schedules_exist`;
- the template renderer (`dutyline.notify.template.service.render_for_incident`): `render`.

Until a peer is merged its module does not exist: the adapter then answers conservatively
(only empty filters match, nobody is on call and no schedule exists, the built-in text is
used). When it lands, the body of the adapter becomes a direct call: one line each."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor

_TEMPLATE_COLUMN = {"teams": "teams_app"}


@functools.cache
def _module(name: str) -> ModuleType | None:
    # Cached: a failed import searches the whole path again on every call.
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None


def check_filters(filters: list[Any], time_filters: list[Any]) -> None:
    """Refuse filters the engine cannot compile, naming the offending part (400)."""
    engine, timing = _module("dutyline.kit.filters"), _module("dutyline.kit.timefilters")
    try:
        if engine is not None:
            engine.compile_filters(filters, path="filters")
        if timing is not None:
            timing.compile_time_filters(time_filters, path="time_filters")
    except ValueError as exc:
        raise errors.invalid(str(getattr(exc, "path", "filters")), str(exc)) from exc


def rule_matches(filters: list[Any], time_filters: list[Any], subject: dict[str, Any],
                 at_s: int, time_zone: str | None = None) -> bool:
    engine, timing = _module("dutyline.kit.filters"), _module("dutyline.kit.timefilters")
    if engine is None or timing is None:
        return not filters and not time_filters
    if not engine.compile_filters(filters, path="filters").matches(subject):
        return False
    return bool(timing.compile_time_filters(time_filters, path="time_filters",
                                            tz=time_zone or None).matches(at_s))


async def oncall(conn: AsyncConnection, actor: Actor, schedule_role_ids: dict[int, list[int]],
                 at_s: int) -> dict[int, list[int]]:
    """{schedule_id: person ids on call at `at_s` for those roles}."""
    schedules = _module("dutyline.schedule.service")
    if schedules is None or not schedule_role_ids:
        return {}
    found: dict[int, list[int]] = await schedules.oncall_for_schedules(
        conn, actor, schedule_role_ids=schedule_role_ids, at_s=at_s)
    return found


async def schedules_exist(conn: AsyncConnection, actor: Actor,
                          schedule_ids: list[int]) -> set[int]:
    """Which schedules are the account's (rule validation: others are not found)."""
    schedules = _module("dutyline.schedule.service")
    if schedules is None or not schedule_ids:
        return set()
    found = await oncall(conn, actor, {s: [] for s in schedule_ids}, actor.now_s)
    return set(found) & set(schedule_ids)


async def render(conn: AsyncConnection, actor: Actor, *, template_id: str, channel: str,
                 incident_id: str) -> str | None:
    """The rule's template rendered for this channel, or None: use the built-in text."""
    templates = _module("dutyline.notify.template.service")
    if templates is None or not template_id:
        return None
    # A Teams robot posts the body of the template's Teams column (the reference names it
    # teams_app); a channel templates do not cover keeps the built-in text.
    channel = _TEMPLATE_COLUMN.get(channel, channel)
    if channel not in templates.DEFAULT_BODIES:
        return None
    rendered = await templates.render_for_incident(
        conn, actor, template_id=template_id, channel=channel, incident_id=incident_id)
    return str(rendered.text)
