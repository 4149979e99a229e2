"""The "Me" page: who you are, your sessions, your password and your second factor (how
you are reached and paged: me_contacts.py)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from dutyline.api import errors
from dutyline.platform.member import service as members
from dutyline.web import forms, passwords, qr, second_factor
from dutyline.web import service as signin
from dutyline.web.context import ConsoleContext
from dutyline.web.page import Pages
from dutyline.web.pages import me_view

pages = Pages()

ME = "/console/me"


@pages.get(ME)
async def me(ctx: ConsoleContext) -> Response:
    return ctx.render("me/me.html", **await me_view.load(ctx))


@pages.post(ME + "/profile", template="me/me.html")
async def save_profile(ctx: ConsoleContext) -> Response:
    """One's own name and time zone, through /member/info/reset's service (audited; the
    zone one of zoneinfo's, or none: the account's)."""
    ctx.kept.update(await me_view.load(ctx))
    form = await ctx.form_lists()
    typed = forms.decode(form, members.ProfileChanges)
    changes = members.ProfileChanges(member_name=typed.member_name, time_zone=typed.time_zone)
    try:
        async with ctx.write() as conn:
            await members.reset_info(conn, ctx.actor, member_id=ctx.actor.person_id,
                                     changes=changes)
    except errors.InvalidParameter as exc:
        raise forms.on_form(exc, form=form) from None
    ctx.flash(ctx.runtime.translator.gettext(ctx.locale, "Your name and time zone are saved."))
    return ctx.redirect(ME + "#profile")


@pages.post(ME + "/sessions/revoke")
async def revoke(ctx: ConsoleContext) -> Response:
    session_id = (await ctx.form()).get("session_id", "")
    own = ctx.session is not None and signin.public_id(ctx.session) == session_id
    async with ctx.write() as conn:
        await signin.revoke_session(conn, ctx.actor, session_id=session_id)
    if own:
        ctx.end_session()
        ctx.flash("You are signed out.")
        return ctx.redirect("/console/sign-in")
    ctx.flash("The session is ended.")
    return ctx.redirect(ME)


async def _password_matches(ctx: ConsoleContext, password: str) -> bool:
    """The signed-in person's own password, asked again before a change that needs it."""
    person_id = ctx.actor.person_id
    hashed = await ctx.runtime.db.run_sync(
        lambda conn: signin.password_hash_sync(conn, person_id=person_id), write=False)
    return await signin.password_matches(hashed, password)


@pages.get(ME + "/password")
async def password_form(ctx: ConsoleContext) -> Response:
    return ctx.render("me/password.html")


@pages.post(ME + "/password", template="me/password.html")
async def change_password(ctx: ConsoleContext) -> Response:
    form = await ctx.form()
    if not await _password_matches(ctx, form.get("current_password", "")):
        raise errors.invalid("current_password", "is not right")
    password = form.get("password", "")
    if password != form.get("password_again", ""):
        raise errors.invalid("password_again", "does not match the password")
    prepared = await passwords.new_password(password)
    assert ctx.session is not None
    async with ctx.write() as conn:
        ended = await signin.change_password(conn, ctx.actor, password=prepared,
                                             keep=ctx.session)
    ctx.flash("Your password is changed." + (
        f" Your {ended} other session{'s' if ended > 1 else ''} ended." if ended else ""))
    return ctx.redirect(ME)


@pages.get(ME + "/two-factor")
async def two_factor_form(ctx: ConsoleContext) -> Response:
    person_id = ctx.actor.person_id
    enrolled = await ctx.runtime.db.run_sync(
        lambda conn: second_factor.enrolled_sync(conn, person_id), write=False)
    if enrolled:
        return ctx.render("me/two_factor.html", enrolled=True)
    return ctx.render("me/two_factor.html", **_new_enrolment(ctx))


def _new_enrolment(ctx: ConsoleContext, nonce: str | None = None) -> dict[str, Any]:
    """The page of an enrolment: its nonce (the form's only trace of it) and the secret this
    session derives from it (web/second_factor.py)."""
    assert ctx.session is not None
    nonce = nonce or second_factor.new_nonce()
    secret = second_factor.enrolment_secret(
        ctx.console.keys.enrolment, session_hash=ctx.session.session_hash, nonce=nonce)
    if secret is None:  # a nonce no page of ours made: a fresh enrolment instead
        return _new_enrolment(ctx)
    uri = second_factor.provisioning_uri(secret, name=ctx.actor.person_name)
    return {"enrolled": False, "secret": secret, "nonce": nonce, "uri": uri,
            "qr": qr.qr_svg(uri)}


@pages.post(ME + "/two-factor", template="me/two_factor.html")
async def enable_two_factor(ctx: ConsoleContext) -> Response:
    form = await ctx.form()
    shown = _new_enrolment(ctx, form.get("nonce", ""))
    ctx.kept.update(shown)
    secret = shown["secret"] if shown["nonce"] == form.get("nonce") else None
    async with ctx.write() as conn:
        await second_factor.enable(conn, ctx.actor, deps=ctx.runtime.deps, secret=secret,
                                   code=form.get("code", ""))
    ctx.flash("Two-factor sign-in is on: signing in now asks for a code.")
    return ctx.redirect(ME)


@pages.post(ME + "/two-factor/disable", template="me/two_factor.html")
async def disable_two_factor(ctx: ConsoleContext) -> Response:
    form = await ctx.form()
    ctx.kept["enrolled"] = True
    if not await _password_matches(ctx, form.get("password", "")):
        raise errors.invalid("password", "is not right")
    async with ctx.write() as conn:
        await second_factor.disable(conn, ctx.actor)
    ctx.flash("Two-factor sign-in is off.")
    return ctx.redirect(ME)
