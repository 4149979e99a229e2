"""The composition root: the one list of domains.

Each domain names its routers (its operations), the modules that register its job handlers
and incident-event subscribers when imported, any routes outside the operation layer, and
the hooks by which a lower domain calls it at run time. The app, the workers, the OpenAPI
document and the audit log all read this list, so a new domain is one entry here and
nothing can silently miss it; with the imports (tests/arch/test_layering.py), this file is
the whole dependency graph."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from dutyline.api.operation import Router

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from dutyline.api.runtime import Runtime
    from dutyline.config import Settings


@dataclass(frozen=True)
class Hook:
    """A lower domain calling a higher one at run time, which its imports cannot do: the lower
    domain offers a registration (`offer`, "pkg.mod:fn"), and the higher one's `answer`
    ("pkg.mod:fn") is registered with it when a process starts (`load_tasks`). An `offer`
    naming a field of the runtime ("runtime:reach_gap") is set to the answer bound to the
    settings when the runtime is built (`runtime_hooks`)."""

    offer: str
    answer: str


@dataclass(frozen=True)
class Domain:
    name: str
    # Modules ("pkg.mod:attr") holding a Router; imported lazily, so building the list
    # imports nothing and there is no import circle through this module.
    routers: tuple[str, ...] = ()
    # Modules that register job handlers (@job_handler) and incident-event subscribers
    # (@subscriber) on import; every process imports them at start.
    task_modules: tuple[str, ...] = ()
    # "pkg.mod:fn" taking the runtime and returning Starlette routes with their own
    # authentication (alert ingestion, public status pages, the runners' WebSocket).
    extra_routes: tuple[str, ...] = ()
    # How lower domains call this one at run time (see Hook).
    hooks: tuple[Hook, ...] = ()


DOMAINS: tuple[Domain, ...] = (
    Domain("platform", routers=(
        "dutyline.platform.account.endpoints:router",
        "dutyline.platform.member.endpoints:router",
        "dutyline.platform.role.endpoints:router",
        "dutyline.platform.app_key.endpoints:router",
        "dutyline.platform.team.endpoints:router",
        "dutyline.platform.audit.endpoints:router",
        "dutyline.platform.calendar.endpoints:router",
    )),
    Domain(
        "channel",
        routers=(
            "dutyline.channel.endpoints:router",
            "dutyline.channel.integration.endpoints:router",
            "dutyline.channel.noise.endpoints:router",
            "dutyline.channel.pipeline.endpoints:router",
            "dutyline.channel.route.endpoints:router",
        ),
        hooks=(
            # Deleting a calendar (platform) is refused while a silence rule names it.
            Hook("dutyline.platform.calendar.service:on_calendar_delete",
                 "dutyline.channel.noise.service:silence_rules_using_calendar"),
        ),
    ),
    Domain(
        "dispatch",
        routers=("dutyline.dispatch.endpoints:router",
                 "dutyline.dispatch.notify_rule.endpoints:router"),
        task_modules=("dutyline.dispatch.tasks", "dutyline.dispatch.notify_rule.tasks"),
        # The signed links' pages are the console's (dutyline.web.signed_links).
        extra_routes=("dutyline.dispatch.voice:routes",),
        hooks=(
            # Deleting a calendar (platform) is refused while an escalation rule names it.
            Hook("dutyline.platform.calendar.service:on_calendar_delete",
                 "dutyline.dispatch.service:escalation_rules_using_calendar"),
            # An incident's assignment (incident) names an escalation rule: its name.
            Hook("dutyline.incident.references:register_escalate_rule_lookup",
                 "dutyline.dispatch.service:escalate_rule_name"),
        ),
    ),
    Domain(
        "notify",
        routers=(
            "dutyline.notify.template.endpoints:router",
            "dutyline.notify.delivery.endpoints:router",
            "dutyline.notify.preference.endpoints:router",
            "dutyline.notify.war_room.endpoints:router",
        ),
        task_modules=("dutyline.notify.delivery.tasks",),
        hooks=(
            # Responders added to an incident (incident) may be paged with a template.
            Hook("dutyline.incident.references:register_template_check",
                 "dutyline.notify.template.service:template_exists"),
            # A member's contact (platform) nothing can reach is warned about.
            Hook("runtime:reach_gap", "dutyline.notify.delivery.service:personal_gap"),
        ),
    ),
    Domain(
        "incident",
        routers=(
            "dutyline.incident.field.endpoints:router",
            "dutyline.incident.query.endpoints:router",
            "dutyline.incident.lifecycle.endpoints:router",
            "dutyline.incident.alert.endpoints:router",
            "dutyline.incident.quick_silence:router",
            "dutyline.incident.postmortem.endpoints:router",
            "dutyline.incident.custom_action.endpoints:router",
            "dutyline.incident.change.endpoints:router",
        ),
        task_modules=("dutyline.incident.ingest.tasks", "dutyline.incident.ingest.noise"),
        extra_routes=("dutyline.incident.ingest.endpoint:routes",
                      "dutyline.incident.change.push:routes"),
        hooks=(
            # An inhibit rule write (channel) rebuilds ingestion's index of its sources, in
            # the writer's transaction.
            Hook("dutyline.channel.noise.service:on_inhibit_rule_written",
                 "dutyline.incident.ingest.noise:reindex_rule"),
            # A silence rule made from an incident (channel) names one the caller sees.
            Hook("dutyline.channel.noise.service:on_source_incident_check",
                 "dutyline.incident.quick_silence:incident_is_visible"),
        ),
    ),
    Domain("insight", routers=("dutyline.insight.endpoints:router",)),
    Domain("enrichment", routers=(
        "dutyline.enrichment.endpoints:router",
        "dutyline.enrichment.api.endpoints:router",
    )),
    Domain(
        "aisre",
        routers=(
            "dutyline.aisre.a2a.endpoints:router",
            "dutyline.aisre.mcp.endpoints:router",
            "dutyline.aisre.automation.endpoints:router",
            "dutyline.aisre.runner.endpoints:router",
        ),
        task_modules=("dutyline.aisre.automation.tasks", "dutyline.aisre.postmortem.tasks"),
        extra_routes=(
            "dutyline.aisre.automation.fire_route:routes",
            "dutyline.aisre.runner.ws:routes",  # the BYOC runners' WebSocket
        ),
    ),
    Domain(
        "monit",
        routers=("dutyline.monit.endpoints:router",),
        task_modules=("dutyline.monit.tasks",),
    ),
    Domain(
        "status_page",
        routers=(
            "dutyline.status_page.page.endpoints:router",
            "dutyline.status_page.change.endpoints:router",
            "dutyline.status_page.subscriber.endpoints:router",
            "dutyline.status_page.migration.endpoints:router",
        ),
        task_modules=(
            "dutyline.status_page.migration.tasks",
            "dutyline.status_page.notify",
            "dutyline.status_page.public.subscribe",
        ),
        extra_routes=("dutyline.status_page.public.routes:routes",),
    ),
    Domain(
        "schedule",
        routers=("dutyline.schedule.endpoints:router",),
        extra_routes=("dutyline.schedule.routes:routes",),
        hooks=(
            # Deleting a calendar (platform) is refused while a schedule follows it, and a
            # calendar's change rebuilds the schedules that follow it.
            Hook("dutyline.platform.calendar.service:on_calendar_delete",
                 "dutyline.schedule.service:schedules_following_calendar"),
            Hook("dutyline.platform.calendar.service:on_calendar_change",
                 "dutyline.schedule.service:calendar_changed"),
        ),
    ),
    # The console: pages over the other domains' services, under /console/.
    Domain("web", task_modules=("dutyline.web.mail",),
           extra_routes=("dutyline.web.routes:routes",)),
)


def _resolve(ref: str) -> object:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@cache
def all_routers() -> tuple[Router, ...]:
    routers = tuple(_resolve(ref) for d in DOMAINS for ref in d.routers)
    assert all(isinstance(r, Router) for r in routers)
    return routers  # type: ignore[return-value]


def task_modules() -> tuple[str, ...]:
    return tuple(m for d in DOMAINS for m in d.task_modules)


def hooks() -> tuple[Hook, ...]:
    return tuple(h for d in DOMAINS for h in d.hooks)


RUNTIME = "runtime:"


def load_tasks() -> None:
    """Import every domain's job handlers and incident-event subscribers, and register the
    hooks. Every process (API and worker) does so at start: the API to fan each event out to
    its subscribers, the workers to run their jobs, both to answer a lower domain's call."""
    for name in task_modules():
        importlib.import_module(name)
    for hook in hooks():
        if not hook.offer.startswith(RUNTIME):
            register: Callable[[Any], Any] = _resolve(hook.offer)  # type: ignore[assignment]
            register(_resolve(hook.answer))


def runtime_hooks(settings: Settings) -> dict[str, Any]:
    """The runtime's fields a lower domain calls (`Runtime.reach_gap`), bound to the
    settings: the keyword arguments app.py builds the runtime with."""
    bound: dict[str, Any] = {}
    for hook in hooks():
        if hook.offer.startswith(RUNTIME):
            answer: Callable[..., Any] = _resolve(hook.answer)  # type: ignore[assignment]
            bound[hook.offer.removeprefix(RUNTIME)] = functools.partial(answer, settings)
    return bound


def extra_routes(runtime: Runtime) -> list[BaseRoute]:
    routes: list[BaseRoute] = []
    for d in DOMAINS:
        for ref in d.extra_routes:
            factory: Callable[[Runtime], list[BaseRoute]] = _resolve(ref)  # type: ignore[assignment]
            routes += factory(runtime)
    return routes
