"""Signing in (password, then the TOTP code of a person who enrolled one) and out, and the
one-time welcome link that sets a first password.

A wrong password and an unknown address get the same answer, in the same time (one Argon2
verification either way), so the sign-in form does not tell which addresses have accounts.
Failures back off per account and per client, or on a known device alone (web/lockout.py);
a full sign-in makes the browser a known device of the account (web/devices.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.unit import unit
from dutyline.web import lockout, passwords, second_factor
from dutyline.web import service as signin
from dutyline.web.context import ConsoleContext
from dutyline.web.page import HOME, SECOND_FACTOR, SIGN_IN, Pages, safe_next

pages = Pages()

WRONG = "Wrong e-mail address or password."


@pages.get(SIGN_IN, public=True)
async def sign_in_form(ctx: ConsoleContext) -> Response:
    if ctx.session is not None and not ctx.session.second_factor_pending:
        return ctx.redirect(HOME)
    return ctx.render("auth/sign_in.html", next=safe_next(ctx.request.query_params.get("next", "")))


@pages.post(SIGN_IN, public=True, template="auth/sign_in.html")
async def sign_in(ctx: ConsoleContext) -> Response:
    form = await ctx.form()
    email, password = form.get("email", "").strip(), form.get("password", "")
    target = safe_next(form.get("next", ""))
    ctx.kept["next"] = target
    account = lockout.email_subject(email)
    device = ctx.device_subject(account)
    subjects = lockout.subjects(account, ctx.client_ip, device)
    now = int(ctx.runtime.clock.now())
    async with ctx.read() as conn:
        wait = await lockout.locked_for(conn, subjects, now)
        if wait:
            return too_many(ctx, wait, "auth/sign_in.html", form={"email": email}, next=target)
        found = await signin.check_password(conn, email=email, password=password)
        caller = None if found is None else await signin.caller_of(
            conn, account_id=found[0], person_id=found[1])
        second = caller is not None and await second_factor.enrolled(conn, caller.person_id)
    if caller is None:
        async with ctx.write() as conn:
            await lockout.note_failure(conn, subjects, now)
        return ctx.render("auth/sign_in.html", status=401, error=WRONG, form={"email": email},
                          next=target)
    async with ctx.write() as conn:
        await lockout.note_success(conn, [account, *subjects])
    await ctx.start_session(signin.person_actor(caller, ctx.runtime.clock),
                            second_factor_pending=second)
    if second:
        return ctx.redirect(f"{SECOND_FACTOR}?next={quote(target, safe='')}")
    # Known only once fully signed in: a right password alone never escapes the code's lock.
    ctx.remember_device(account, lockout.person_subject(caller.person_id))
    return ctx.redirect(target)


def too_many(ctx: ConsoleContext, wait_s: int, template: str, **context: Any) -> Response:
    minutes = max(1, -(-wait_s // 60))
    return ctx.render(template, status=429, error=(
        f"Too many failed attempts. Try again in {minutes} minute"
        f"{'s' if minutes > 1 else ''}."), **context)


@pages.get(SECOND_FACTOR, second_factor=True)
async def code_form(ctx: ConsoleContext) -> Response:
    if ctx.session is None or not ctx.session.second_factor_pending:
        return ctx.redirect(HOME if ctx.session else SIGN_IN)
    return ctx.render("auth/sign_in_code.html",
                      next=safe_next(ctx.request.query_params.get("next", "")))


@pages.post(SECOND_FACTOR, second_factor=True, template="auth/sign_in_code.html")
async def code(ctx: ConsoleContext) -> Response:
    """The code of a person whose password was right: a right one replaces the waiting
    session with a full one (a new token again)."""
    session = ctx.session
    if session is None or not session.second_factor_pending:
        return ctx.redirect(HOME if session else SIGN_IN)
    form = await ctx.form()
    target = safe_next(form.get("next", ""))
    ctx.kept["next"] = target
    person = lockout.person_subject(session.person_id)
    subjects = lockout.subjects(person, ctx.client_ip, ctx.device_subject(person))
    now = int(ctx.runtime.clock.now())
    async with ctx.read() as conn:
        wait = await lockout.locked_for(conn, subjects, now)
    if wait:
        return too_many(ctx, wait, "auth/sign_in_code.html", next=target)
    async with ctx.write() as conn:
        right = await second_factor.check_code(
            conn, ctx.runtime.secrets, person_id=session.person_id,
            code=form.get("code", ""), now=ctx.runtime.clock.now())
        if right:
            await lockout.note_success(conn, [person, *subjects])
            email = await signin.email_of(conn, ctx.actor)
        else:
            await lockout.note_failure(conn, subjects, now)
    if not right:
        raise errors.invalid("code", "is not right")
    await ctx.start_session(ctx.actor)
    ctx.remember_device(person, *([lockout.email_subject(email)] if email else []))
    return ctx.redirect(target)


@pages.post("/console/sign-out", public=True)
async def sign_out(ctx: ConsoleContext) -> Response:
    if ctx.session is not None:
        session = ctx.session
        async with ctx.write() as conn:
            await signin.end_session(conn, ctx.actor, session=session)
    ctx.end_session()
    ctx.flash("You are signed out.")
    return ctx.redirect(SIGN_IN)


WELCOME = "/console/welcome/{token}"
_DEAD_LINK = ("This link has expired or was already used. Ask an administrator of your "
              "account for a new one.")


def _dead_link(ctx: ConsoleContext) -> Response:
    return ctx.render("layout/error.html", status=404, title="Link not usable", message=_DEAD_LINK)


@pages.get(WELCOME, public=True)
async def welcome_form(ctx: ConsoleContext) -> Response:
    token = ctx.path_params["token"]
    async with ctx.read() as conn:
        holder = await signin.link_holder(conn, ctx.runtime.clock, token=token,
                                          purpose="welcome")
    if holder is None:
        return _dead_link(ctx)
    return ctx.render("auth/welcome.html", holder=holder, need_email=not holder.email)


@pages.post(WELCOME, public=True, template="auth/welcome.html")
async def welcome(ctx: ConsoleContext) -> Response:
    token = ctx.path_params["token"]
    form = await ctx.form()
    async with ctx.read() as conn:
        holder = await signin.link_holder(conn, ctx.runtime.clock, token=token,
                                          purpose="welcome")
        caller = None if holder is None else await signin.caller_of(
            conn, account_id=holder.account_id, person_id=holder.person_id)
    if holder is None or caller is None:
        return _dead_link(ctx)
    ctx.kept.update(holder=holder, need_email=not holder.email)
    password = form.get("password", "")
    if password != form.get("password_again", ""):
        raise errors.invalid("password_again", "does not match the password")
    email = None if holder.email else form.get("email", "").strip()
    if email == "":
        raise errors.invalid("email", "is required")
    prepared = await passwords.new_password(password)
    # The link is the credential here: the audit log says so.
    # One unit of work, two actors: the link's holder sets the password, then the person
    # signs in; the unit flushes each one's row.
    async with unit(ctx.runtime, signin.person_actor(caller, ctx.runtime.clock,
                                                     credential="signed_link"),
                    write=True, call=ctx.unit_call()) as work:
        conn = work.conn
        await signin.set_password_by_link(
            conn, work.actor, token=token, purpose="welcome", password=prepared,
            email=email)
        person = signin.person_actor(caller, ctx.runtime.clock)
        # A link proves the mailbox, not the second factor: that is still asked for.
        pending = await second_factor.enrolled(conn, caller.person_id)
        await ctx.start_session(person, conn=conn, second_factor_pending=pending)
    ctx.flash("Your password is set and you are signed in.")
    return ctx.redirect(SECOND_FACTOR if pending else HOME)
