"""Mailing a member their invitation (a welcome link): the action behind the members list's
"Send invitation" button (the button's page lives with the members)."""

from __future__ import annotations

from starlette.responses import Response

from dutyline.api import errors
from dutyline.web import mail as link_mail
from dutyline.web.context import ConsoleContext
from dutyline.web.page import Pages

pages = Pages()

MEMBERS = "/console/members"


@pages.post(MEMBERS + "/{person_id}/invite")
async def invite(ctx: ConsoleContext) -> Response:
    raw = ctx.path_params["person_id"]
    if not str(raw).isdigit():
        raise errors.invalid("person_id", "is invalid")
    async with ctx.write() as conn:
        await link_mail.invite(conn, ctx.actor, person_id=int(raw))
    ctx.flash("The invitation is on its way.")
    return ctx.redirect(MEMBERS)
