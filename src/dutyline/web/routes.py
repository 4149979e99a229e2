"""The console's routes, for the composition root (domains.py): every registered page, the
static files, and a 404 page for any other /console/ path (with the console's headers, not
the API's JSON envelope)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from dutyline.web import signed_links
from dutyline.web.context import ConsoleContext
from dutyline.web.page import HOME, Console, Page, Pages

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

# Modules ("pkg.mod:attr") holding a `Pages`: a new page's module is added here.
PAGE_MODULES = (
    "dutyline.web.pages.auth:pages",
    "dutyline.web.pages.home:pages",
    "dutyline.web.pages.incidents:pages",
    "dutyline.web.pages.incidents_live:pages",
    "dutyline.web.pages.recovery:pages",
    "dutyline.web.pages.me:pages",
    "dutyline.web.pages.me_contacts:pages",
    "dutyline.web.pages.invite:pages",
    "dutyline.web.pages.incident:pages",
    "dutyline.web.pages.oncall:pages",
    "dutyline.web.pages.members:pages",
    "dutyline.web.pages.teams:pages",
)


def all_pages() -> list[Page]:
    found: list[Page] = []
    for ref in PAGE_MODULES:
        module, _, attr = ref.partition(":")
        pages = getattr(importlib.import_module(module), attr)
        assert isinstance(pages, Pages), ref
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
        return ctx.finish(ctx.render("error.html", status=404, title="Page not found",
                                     message="There is no page at this address."))

    async def home(_: Request) -> Response:
        return RedirectResponse(HOME, status_code=303)

    out.append(Route("/console", home, methods=["GET"]))
    out.append(Route("/console/{rest:path}", not_found, methods=["GET", "POST"]))
    return out
