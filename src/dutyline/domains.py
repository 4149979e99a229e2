"""The composition root: the one list of domains.

Each domain names its routers (its operations), the modules that register its job handlers
and incident-event subscribers when imported, and any routes outside the operation layer.
The app, the workers, the OpenAPI document and the audit log all read this list, so a new
domain is one entry here and nothing can silently miss it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from dutyline.api.operation import Router

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from dutyline.api.runtime import Runtime


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
        # Registers the lookup that refuses deleting a calendar a silence rule uses.
        task_modules=("dutyline.channel.noise.service",),
    ),
    Domain(
        "dispatch",
        routers=("dutyline.dispatch.endpoints:router",
                 "dutyline.dispatch.notify_rule.endpoints:router"),
        task_modules=("dutyline.dispatch.tasks", "dutyline.dispatch.notify_rule.tasks"),
        # The signed links' pages are the console's (dutyline.web.signed_links).
        extra_routes=("dutyline.dispatch.voice:routes",),
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


def load_tasks() -> None:
    """Import every domain's job handlers and incident-event subscribers. Every process
    (API and worker) does so at start: the API to fan each event out to its subscribers,
    the workers to run their jobs."""
    for name in task_modules():
        importlib.import_module(name)


def extra_routes(runtime: Runtime) -> list[BaseRoute]:
    routes: list[BaseRoute] = []
    for d in DOMAINS:
        for ref in d.extra_routes:
            factory: Callable[[Runtime], list[BaseRoute]] = _resolve(ref)  # type: ignore[assignment]
            routes += factory(runtime)
    return routes
