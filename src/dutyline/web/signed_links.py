"""Where the links of a notification land: the signed acknowledge/resolve/open links
(`/incident/link/<token>`, made and checked by dispatch) and the incident's address as the
API gives it out (`detail_url`, and the older `/incident/detail/<id>`).

A link's GET only shows (a mail scanner or a chat preview fetches every URL): the incident and,
for acknowledge and resolve, a button that POSTs back; the POST acts as the link's person.
Then, and for the open link at once, a browser signed in to the console for that account goes
to the incident's console page; any other gets a read-only view of that one incident with a
way to sign in. Answers: 404 for a forged, altered or expired link, 403 when its person is no
longer a member, 409 when the incident is not in a state the link changes."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from dutyline.api import errors
from dutyline.api.unit import unit
from dutyline.dispatch.service import links
from dutyline.web import incident_view
from dutyline.web import service as signin
from dutyline.web.context import ConsoleContext
from dutyline.web.page import SIGN_IN

if TYPE_CHECKING:
    from dutyline.web.page import Console

DETAIL_PATH = "/incident/detail/"
_VERB = {"ack": "Acknowledge", "resolve": "Resolve"}
_DONE = {"ack": "Incident acknowledged", "resolve": "Incident resolved"}


def _page_of(incident_id: str) -> str:
    return incident_view.PAGE_PATH + incident_id


def routes(console: Console) -> list[BaseRoute]:
    runtime = console.runtime

    async def context(request: Request) -> ConsoleContext:
        await console.keys.load()
        ctx = ConsoleContext(request, console)
        await ctx.identify()
        return ctx

    async def verified(request: Request) -> links.Link | None:
        return links.verify(await links.server_key(runtime.settings),
                            request.path_params["token"], int(runtime.clock.now()))

    def signed_in_for(ctx: ConsoleContext, link: links.Link) -> bool:
        return (ctx.signed_in and ctx.session is not None
                and not ctx.session.second_factor_pending
                and ctx.actor.account_id == link.account_id)

    async def view_page(ctx: ConsoleContext, link: links.Link, *, heading: str,
                        status: int = 200, confirm: str = "", message: str = "") -> Response:
        """The read-only view of the link's incident, seen as the link's person."""
        try:
            async with unit(runtime, None, write=False, call=ctx.unit_call(False)) as work:
                actor = links.person_actor(runtime, link)
                # The times in the link's person's zone, as their own pages show them.
                ctx.time_zones = await signin.time_zones_of(
                    work.conn, account_id=link.account_id, person_id=link.person_id)
                view = await incident_view.load(work.conn, actor, incident_id=link.incident_id,
                                                deps=runtime.deps, read_only=True,
                                                tz=ctx.zone[1])
        except errors.ResourceNotFound:
            return ctx.render("layout/error.html", status=404, title="Incident not found",
                              message="The incident of this link no longer exists.")
        sign_in = f"{SIGN_IN}?next={quote(view.path, safe='')}"
        return ctx.render("incidents/link.html", status=status, view=view, heading=heading,
                          confirm=confirm, message=message, sign_in=sign_in,
                          token=ctx.path_params["token"], title=heading)

    def invalid(ctx: ConsoleContext) -> Response:
        return ctx.render("layout/error.html", status=404, title="Link expired or invalid",
                          message="Open the incident in dutyline.")

    async def show(request: Request) -> Response:
        ctx = await context(request)
        link = await verified(request)
        if link is None:
            return ctx.finish(invalid(ctx))
        if link.action == "open":
            if signed_in_for(ctx, link):
                return ctx.finish(ctx.redirect(_page_of(link.incident_id)))
            return ctx.finish(await view_page(ctx, link, heading="Incident"))
        return ctx.finish(await view_page(
            ctx, link, heading=f"{_VERB[link.action]} this incident?",
            confirm=_VERB[link.action]))

    async def act(request: Request) -> Response:
        ctx = await context(request)
        link = await verified(request)
        if link is None or link.action == "open":
            return ctx.finish(invalid(ctx))
        outcome = await links.perform(runtime, link, client_ip=ctx.client_ip)
        if outcome == links.NOT_MEMBER:
            return ctx.finish(ctx.render(
                "layout/error.html", status=403, title="Link no longer valid",
                message="You are not a member of this account any more."))
        if outcome == links.REFUSED:
            return ctx.finish(await view_page(
                ctx, link, heading="Nothing to do", status=409,
                message="The incident is not in a state this link changes (already done, "
                        "or closed)."))
        if signed_in_for(ctx, link):
            ctx.flash(_DONE[link.action] + ".")
            return ctx.finish(ctx.redirect(_page_of(link.incident_id)))
        return ctx.finish(await view_page(ctx, link, heading=_DONE[link.action]))

    async def detail(request: Request) -> Response:
        # The address incidents had before the console: links already sent keep working.
        incident_id = request.path_params["incident_id"]
        return RedirectResponse(_page_of(quote(incident_id, safe="")), status_code=301)

    return [Route(links.PATH + "{token}", show, methods=["GET"]),
            Route(links.PATH + "{token}", act, methods=["POST"]),
            Route(DETAIL_PATH + "{incident_id}", detail, methods=["GET"])]
