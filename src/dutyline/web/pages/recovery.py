"""A forgotten password: ask for a reset link by e-mail, then choose a new password with it.

The request page answers the same whatever the address (and mails nothing for an unknown
one); requests count toward the address's and the client's back-off (or a known device's
alone, web/lockout.py), so the form cannot be used to flood mailboxes. A reset ends every
session of the person and signs nobody in: they sign in with the new password (and their
second factor, when they have one)."""

from __future__ import annotations

from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.unit import unit
from dutyline.web import lockout, passwords
from dutyline.web import mail as link_mail
from dutyline.web import service as signin
from dutyline.web.context import ConsoleContext
from dutyline.web.page import SIGN_IN, Pages
from dutyline.web.pages.auth import too_many

pages = Pages()

FORGOT = "/console/forgot"
RESET = "/console/reset/{token}"
SENT = ("If an account uses this address, a link to reset its password is on its way. "
        "It works once, within an hour.")


@pages.get(FORGOT, public=True)
async def forgot_form(ctx: ConsoleContext) -> Response:
    return ctx.render("auth/forgot.html", sent=False)


@pages.post(FORGOT, public=True, template="auth/forgot.html")
async def forgot(ctx: ConsoleContext) -> Response:
    form = await ctx.form()
    email = form.get("email", "").strip()
    ctx.kept["sent"] = False
    device = ctx.device_subject(lockout.email_subject(email))
    subjects = lockout.subjects(lockout.reset_subject(email), ctx.client_ip, device)
    now = int(ctx.runtime.clock.now())
    async with ctx.read() as conn:
        wait = await lockout.locked_for(conn, subjects, now)
    if wait:
        return too_many(ctx, wait, "auth/forgot.html", form={"email": email}, sent=False)
    if "@" not in email:
        raise errors.invalid("email", "is invalid")
    async with ctx.write() as conn:
        await link_mail.request_reset(conn, email=email, now_ms=int(now * 1000))
        await lockout.note_failure(conn, subjects, now)
    return ctx.render("auth/forgot.html", sent=True, form={"email": email})


def _dead_link(ctx: ConsoleContext) -> Response:
    return ctx.render("layout/error.html", status=404, title="Link not usable", message=(
        "This link has expired or was already used. Ask for a new one on the sign-in page."))


@pages.get(RESET, public=True)
async def reset_form(ctx: ConsoleContext) -> Response:
    async with ctx.read() as conn:
        holder = await signin.link_holder(conn, ctx.runtime.clock,
                                          token=ctx.path_params["token"], purpose="reset")
    if holder is None:
        return _dead_link(ctx)
    return ctx.render("auth/reset.html", holder=holder)


@pages.post(RESET, public=True, template="auth/reset.html")
async def reset(ctx: ConsoleContext) -> Response:
    token = ctx.path_params["token"]
    form = await ctx.form()
    async with ctx.read() as conn:
        holder = await signin.link_holder(conn, ctx.runtime.clock, token=token,
                                          purpose="reset")
        caller = None if holder is None else await signin.caller_of(
            conn, account_id=holder.account_id, person_id=holder.person_id)
    if holder is None or caller is None:
        return _dead_link(ctx)
    ctx.kept["holder"] = holder
    password = form.get("password", "")
    if password != form.get("password_again", ""):
        raise errors.invalid("password_again", "does not match the password")
    prepared = await passwords.new_password(password)
    async with unit(ctx.runtime, signin.person_actor(caller, ctx.runtime.clock,
                                                     credential="signed_link"),
                    write=True, call=ctx.unit_call()) as work:
        await signin.set_password_by_link(work.conn, work.actor, token=token, purpose="reset",
                                          password=prepared)
        await lockout.note_success(work.conn, [lockout.email_subject(holder.email)])
    ctx.flash("Your password is changed. Sign in with it.")
    return ctx.redirect(SIGN_IN)
