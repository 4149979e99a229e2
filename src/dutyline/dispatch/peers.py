"""What dispatch uses of other engines, one function each: the filter engine
(`kit.filters`, `kit.timefilters`), service calendars (`platform.calendar.service`), who is
on call (`schedule.service`) and the template renderer (`notify.template.service`)."""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.kit.channels import template_column
from dutyline.kit.filters import Filter, compile_filters
from dutyline.kit.timefilters import TimeFilter, compile_time_filters
from dutyline.notify.template import service as templates
from dutyline.platform.calendar import service as calendars
from dutyline.schedule import service as schedules


async def check_filters(conn: AsyncConnection, actor: Actor, filters: list[Any],
                        time_filters: list[Any]) -> None:
    """Refuse filters the engine cannot compile, naming the offending part (400), and time
    windows naming a calendar that is not the account's (not found)."""
    try:
        compile_filters(filters, path="filters")
        timing = compile_time_filters(time_filters, path="time_filters", calendars=True)
    except ValueError as exc:
        raise errors.invalid(str(getattr(exc, "path", "filters")), str(exc)) from exc
    await calendars.check_calendars(conn, actor, cal_ids=timing.calendar_ids)


@functools.lru_cache(maxsize=4096)
def _compiled(filters: str, time_filters: str, time_zone: str | None
              ) -> tuple[Filter, TimeFilter]:
    # Keyed by the rule's stored JSON: a rule is compiled once per process, not per incident;
    # an edited rule has other text, so nothing stale is ever used.
    return (compile_filters(msgspec.json.decode(filters), path="filters"),
            compile_time_filters(msgspec.json.decode(time_filters), path="time_filters",
                                 tz=time_zone, calendars=True))


def filter_subject(info: Any) -> dict[str, Any]:
    """What rule filters read of an incident (the filter keys: severity, title,
    description, labels.*): escalation and channel notification rules alike."""
    return {"severity": info.incident_severity, "incident_severity": info.incident_severity,
            "title": info.title, "description": info.description, "labels": info.labels,
            "fields": info.fields, "progress": info.progress, "num": info.num,
            "channel_id": info.channel_id, "channel_name": info.channel_name}


async def rule_matches(conn: AsyncConnection, actor: Actor, filters: str, time_filters: str,
                       subject: dict[str, Any], at_s: int,
                       time_zone: str | None = None) -> bool:
    """Whether a rule (its stored filters and time filters, JSON) takes this incident; time
    windows are read in `time_zone` (the account's), calendar ones by the account's
    calendars, read only for a rule that names one."""
    match, timing = _compiled(filters, time_filters, time_zone or None)
    if not match.matches(subject):
        return False
    if not timing.calendar_ids:
        return timing.matches(at_s)
    local_days = await calendars.local_days(conn, actor, cal_ids=timing.calendar_ids,
                                            at_s=at_s, time_zone=time_zone)
    return timing.matches(at_s, local_days)


async def oncall(conn: AsyncConnection, actor: Actor, schedule_role_ids: dict[int, list[int]],
                 at_s: int) -> dict[int, list[int]]:
    """{schedule_id: person ids on call at `at_s` for those roles}."""
    if not schedule_role_ids:
        return {}
    found: dict[int, list[int]] = await schedules.oncall_for_schedules(
        conn, actor, schedule_role_ids=schedule_role_ids, at_s=at_s)
    return found


async def schedules_exist(conn: AsyncConnection, actor: Actor,
                          schedule_ids: list[int]) -> set[int]:
    """Which schedules are the account's (rule validation: others are not found)."""
    if not schedule_ids:
        return set()
    found = await oncall(conn, actor, {s: [] for s in schedule_ids}, actor.now_s)
    return set(found) & set(schedule_ids)


async def template_exists(conn: AsyncConnection, actor: Actor, template_id: str) -> bool:
    """Whether a rule may name this template: the account's own or a built-in preset."""
    return await templates.template_exists(conn, actor, template_id)


def default_template_id(actor: Actor) -> str:
    """The template of a rule that names none: the account's default (the preset)."""
    return templates.default_template_id(actor)


async def render(conn: AsyncConnection, actor: Actor, *, template_id: str, channel: str,
                 incident_id: str, deps: Deps) -> str | None:
    """The rule's template rendered for this channel, or None: use the built-in text.
    The server's base URL makes the template's links (`.DetailUrl`) absolute."""
    # A Teams robot posts the body of the template's Teams column (`teams_app`); the custom
    # webhook's JSON payload has none.
    channel = template_column(channel)
    if not template_id or not templates.has_body_for(channel):
        return None
    rendered = await templates.render_for_incident(
        conn, actor, template_id=template_id, channel=channel, incident_id=incident_id,
        deps=deps)
    return str(rendered.text)
