"""Registering console pages, and what runs around every page handler.

Adding a page is a handler, a template and one registration:

    pages = Pages()

    @pages.get("/console/teams")
    async def teams(ctx: ConsoleContext) -> Response: ...

    @pages.post("/console/teams/new", template="teams/form.html")
    async def create_team(ctx: ConsoleContext) -> Response: ...

and the module imported in web/routes.py, its `pages` added to `PAGE_MODULES` (templates
live in per-area folders: docs/console.md, "Templates"). Around each handler: the visitor's
session is resolved; a POST must carry the visitor's CSRF token (else 403, before anything
else runs); a page that is not `public` sends an anonymous visitor to the sign-in page; a
session still waiting for its second factor opens only the pages marked
`second_factor=True`. An ApiError out of the handler becomes a page with the status the API
would answer (the page's `template` again with the error by the field, when it names one).
Every answer carries the console's security headers (web/security.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import structlog
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from dutyline.api import errors
from dutyline.web.assets import Assets
from dutyline.web.context import ConsoleContext
from dutyline.web.security import ConsoleKeys
from dutyline.web.session_cache import SessionCache
from dutyline.web.templating import environment

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

log = structlog.get_logger("dutyline.web")

SIGN_IN = "/console/sign-in"
SECOND_FACTOR = "/console/sign-in/code"
HOME = "/console/incidents"

Handler = Callable[[ConsoleContext], Awaitable[Response]]


@dataclass(frozen=True)
class Page:
    method: str
    path: str
    handler: Handler
    # Open without signing in (sign-in, set-password links).
    public: bool = False
    # The page a failed form is shown again with (see ConsoleContext.form_failed).
    template: str | None = None
    # Open to a session that still owes its second factor.
    second_factor: bool = False


@dataclass
class Pages:
    """One module's pages."""

    pages: list[Page] = field(default_factory=list)

    def _add(self, method: str, path: str, **options: Any) -> Callable[[Handler], Handler]:
        if not path.startswith("/console/"):
            raise ValueError(f"console pages live under /console/: {path}")

        def register(handler: Handler) -> Handler:
            self.pages.append(Page(method, path, handler, **options))
            return handler

        return register

    def get(self, path: str, *, public: bool = False, second_factor: bool = False,
            ) -> Callable[[Handler], Handler]:
        return self._add("GET", path, public=public, second_factor=second_factor)

    def post(self, path: str, *, public: bool = False, template: str | None = None,
             second_factor: bool = False) -> Callable[[Handler], Handler]:
        return self._add("POST", path, public=public, template=template,
                         second_factor=second_factor)


class Console:
    """The process's console: templates, static files, keys; built once with the routes."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.keys = ConsoleKeys(runtime.settings)
        self.sessions = SessionCache(runtime.signals)
        self.assets = Assets()
        self.env = environment(static=self.assets.url)

    def render(self, template: str, **context: Any) -> str:
        context.setdefault("field_errors", {})
        context.setdefault("form", {})
        context.setdefault("error", "")
        return self.env.get_template(template).render(**context)

    def endpoint(self, pages: dict[str, Page]) -> Callable[[Request], Awaitable[Response]]:
        """One path's handler, for each method it answers."""

        async def run(request: Request) -> Response:
            page = pages[request.method if request.method != "HEAD" else "GET"]
            await self.keys.load()
            ctx = ConsoleContext(request, self)
            try:
                response = await self._run(ctx, page)
            except ClientDisconnect:
                # Nobody reads the answer; a hang-up is the client's business, not an error.
                log.info("console client went away", path=page.path,
                         request_id=ctx.request_id)
                return Response(status_code=400)
            except errors.ApiError as exc:
                response = self.failed(ctx, page, exc)
            except Exception as exc:  # the page shows an error; the log has the cause
                log.error("console page failed", path=page.path, request_id=ctx.request_id,
                          error=repr(exc))
                response = ctx.render("layout/error.html", status=500,
                                      title="Something went wrong",
                                      message=ctx.message(errors.InternalError()))
            return ctx.finish(response)

        return run

    async def _run(self, ctx: ConsoleContext, page: Page) -> Response:
        await ctx.identify()
        if page.method == "POST":
            try:
                await ctx.form()  # a body refused as a whole is no form to show again
            except errors.ApiError as exc:
                return body_refused(ctx, exc)
            if not await ctx.csrf_passed():
                return forbidden(ctx)
        if not page.public:
            if ctx.session is None:
                return ctx.redirect(sign_in_url(ctx.request))
            if ctx.session.second_factor_pending and not page.second_factor:
                return ctx.redirect(SECOND_FACTOR)
        return await page.handler(ctx)

    def failed(self, ctx: ConsoleContext, page: Page, exc: errors.ApiError) -> Response:
        if isinstance(exc, errors.Unauthorized):
            return ctx.redirect(sign_in_url(ctx.request))
        if page.template is not None:
            return ctx.form_failed(page.template, exc)
        title = "Not allowed" if isinstance(exc, errors.AccessDenied) else "That did not work"
        return ctx.render("layout/error.html", status=exc.status, title=title,
                          message=ctx.message(exc))


def forbidden(ctx: ConsoleContext) -> Response:
    return ctx.render(
        "layout/error.html", status=403, title="This form has expired",
        message="The form was not sent from this page, or it was open for too long. "
                "Reload the page and try again.")


def body_refused(ctx: ConsoleContext, exc: errors.ApiError) -> Response:
    title = "Form too large" if isinstance(exc, errors.EntityTooLarge) else "Form not readable"
    return ctx.render("layout/error.html", status=exc.status, title=title,
                      message=ctx.message(exc))


def sign_in_url(request: Request) -> str:
    """The sign-in page, coming back here afterwards (a GET's path; a form goes home)."""
    if request.method != "GET" or request.url.path in (SIGN_IN, "/console/"):
        return SIGN_IN
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return f"{SIGN_IN}?next={quote(target, safe='')}"


def safe_next(target: str) -> str:
    """Where to go after signing in: a console path of this site, nothing else."""
    if target.startswith("/console/") and not target.startswith("//") and "\\" not in target:
        return target
    return HOME
