"""The console's routes, for the composition root (domains.py): every registered page, the
static files, a 404 page for any other /console/ path (with the console's headers, not the
API's JSON envelope), and the server's own address, `/`, which opens the console."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from dutyline.web import signed_links
from dutyline.web.context import ConsoleContext
from dutyline.web.page import HOME, SECOND_FACTOR, SIGN_IN, Console, Page, Pages
from dutyline.web.pages import (
    app_keys,
    auth,
    channels,
    escalation_rules,
    home,
    incident,
    incidents,
    incidents_live,
    integrations,
    invite,
    me,
    me_contacts,
    members,
    notify_templates,
    oncall,
    recovery,
    roles,
    schedules,
    schedules_form,
    settings,
    teams,
)

if TYPE_CHECKING:
    from types import ModuleType

    from dutyline.api.runtime import Runtime

# The modules of the console's pages, each with its `pages`: a new page's module is imported
# above and named here (tests/web/test_layout.py finds any module of web/pages left out).
PAGE_MODULES: tuple[ModuleType, ...] = (
    auth, home, incidents, incidents_live, recovery, me, me_contacts, invite, incident,
    oncall, members, teams, roles, app_keys, notify_templates, channels, escalation_rules,
    settings, integrations, schedules_form, schedules,
)


def all_pages() -> list[Page]:
    found: list[Page] = []
    for module in PAGE_MODULES:
        pages = module.pages
        assert isinstance(pages, Pages), module.__name__
        found += pages.pages
    return found


def routes(runtime: Runtime) -> list[BaseRoute]:
    console = Console(runtime)
    by_path: dict[str, dict[str, Page]] = {}
    for page in all_pages():
        methods = by_path.setdefault(page.path, {})
        if page.method in methods:
            raise ValueError(f"two console pages answer {page.method} {page.path}")
        methods[page.method] = page
    out: list[BaseRoute] = [
        Route(path, console.endpoint(methods), methods=list(methods),
              name=f"console:{path}")
        for path, methods in by_path.items()
    ]
    out += console.assets.routes()
    out += signed_links.routes(console)

    async def not_found(request: Request) -> Response:
        await console.keys.load()
        ctx = ConsoleContext(request, console)
        await ctx.identify()
        return ctx.finish(ctx.render("layout/error.html", status=404, title="Page not found",
                                     message="There is no page at this address."))

    async def front_door(request: Request) -> Response:
        """The server's address and `/console`: the incident list for a signed-in visitor,
        the sign-in page (or the code it still waits for) for anyone else; one redirect."""
        await console.keys.load()
        ctx = ConsoleContext(request, console)
        await ctx.identify()
        if ctx.session is None:
            target = SIGN_IN
        else:
            target = SECOND_FACTOR if ctx.session.second_factor_pending else HOME
        return ctx.finish(ctx.redirect(target))

    # GET (and HEAD); any other method on `/` stays the API's answer (405, in its envelope).
    out.append(Route("/", front_door, methods=["GET"]))
    out.append(Route("/console", front_door, methods=["GET"]))
    out.append(Route("/console/{rest:path}", not_found, methods=["GET", "POST"]))
    return out
