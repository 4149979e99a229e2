"""The Me page's forms for how the person is reached: their contacts and chat handles, a
test notification by each, and their channels per incident severity. Each goes through
the API's own service (/member/info/reset, /member/notify/reset, /member/notify/test), so
the same checks, warnings, cooldown and audit entries apply.

A form answers with a redirect to the Me page (which shows the saved values and their
warnings); a test sent by htmx answers with its outcome alone, swapped in beside its
button, and without JavaScript the outcome comes back as a message on the page."""

from __future__ import annotations

from typing import Protocol

from starlette.responses import Response

from dutyline.api import errors
from dutyline.kit.channels import BY_NAME, IM_PLATFORMS
from dutyline.kit.vocabulary import SEVERITY_KEYS
from dutyline.notify.delivery import service as delivery
from dutyline.notify.preference import service as preferences
from dutyline.platform.member import service as members
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.page import Pages
from dutyline.web.pages import me_view

pages = Pages()

ME = "/console/me"
_CONTACT_FIELDS = ("email", "country_code", "phone")


async def _keep_page(ctx: ConsoleContext) -> me_view.PageState:
    """Load the page into what a failed form shows again, and return the saved state."""
    page = await me_view.load(ctx)
    ctx.kept.update(page)
    return me_view.PageState(page["person"], page["preference"])


@pages.post(ME + "/contacts", template="me/me.html")
async def save_contacts(ctx: ConsoleContext) -> Response:
    form = await ctx.form()
    saved = await _keep_page(ctx)
    was = {"email": saved.person.email, "country_code": saved.person.country_code,
           "phone": saved.person.phone}
    typed = forms.decode(await ctx.form_lists(), members.ProfileChanges)
    changes = {name: value for name in _CONTACT_FIELDS
               if (value := getattr(typed, name)) is not None
               and value.strip().lower() != was[name].lower()}
    im = {**saved.preference.im, **{p: form[f"im.{p}"] for p in IM_PLATFORMS
                                    if f"im.{p}" in form}}
    im_changed = {k: v.strip() for k, v in im.items() if v.strip()} != saved.preference.im
    try:
        async with ctx.write() as conn:
            if changes:
                await members.reset_info(conn, ctx.actor, member_id=ctx.actor.person_id,
                                         changes=members.ProfileChanges(**changes))
            if im_changed:  # a handle is refused by its field, `im.slack`, as posted
                await preferences.notify_reset(conn, ctx.actor, member_id=0, im=im,
                                               critical=None, warning=None, info=None)
    except errors.InvalidParameter as exc:
        raise forms.on_form(exc, form=await ctx.form_lists()) from None
    ctx.flash("Your contacts are saved." if changes or im_changed else "Nothing changed.")
    return ctx.redirect(ME + "#contacts")


class _Outcome(Protocol):
    """A channel's answer of the test service (NotifyTestResult)."""

    channel: str
    status: str
    reason: str
    address: str


def _outcome(ctx: ConsoleContext, result: _Outcome) -> str:
    what = me_view.channel_label(result.channel) if result.channel in BY_NAME \
        else result.channel
    if result.status == "sent":
        return f"Test by {what}: sent to {result.address}."
    if result.status == "failed":
        return f"Test by {what}: failed: {result.reason}."
    if ctx.runtime.reach_gap(result.channel):
        # The reason names the server's settings: the operator's business, not the reader's.
        return (f"Test by {what}: not sent: {what} is not set up on this server; ask your "
                "administrator.")
    return f"Test by {what}: not sent: {result.reason}."


@pages.post(ME + "/test", template="me/me.html")
async def send_test(ctx: ConsoleContext) -> Response:
    channel = (await ctx.form()).get("channel", "")
    in_place = ctx.request.headers.get("hx-request") == "true"
    if not in_place:
        await _keep_page(ctx)
    try:
        async with ctx.write() as conn:
            answer = await delivery.send_test(conn, ctx.actor, runtime=ctx.runtime,
                                              member_id=0, channels=[channel])
    except errors.RequestTooFrequently as exc:
        if not in_place:
            raise
        # htmx swaps only a 2xx answer in place; the refusal is this button's outcome.
        return ctx.render("me/_test_result.html", status_kind="failed",
                          text=f"Not sent: {ctx.message(exc)}.")
    [result] = answer.results
    if in_place:
        return ctx.render("me/_test_result.html", status_kind=result.status,
                          text=_outcome(ctx, result))
    ctx.flash(_outcome(ctx, result), "info" if result.status == "sent" else "error")
    return ctx.redirect(ME + "#contacts")


@pages.post(ME + "/notifications", template="me/me.html")
async def save_notifications(ctx: ConsoleContext) -> Response:
    given = await ctx.form_lists()
    chosen: dict[str, list[str] | None] = {s: given.get(s, [])
                                           for s in SEVERITY_KEYS}
    await _keep_page(ctx)
    ctx.kept["chosen"] = chosen
    async with ctx.write() as conn:
        await preferences.notify_reset(conn, ctx.actor, member_id=0, im=None,
                                       critical=chosen["critical"],
                                       warning=chosen["warning"], info=chosen["info"])
    ctx.flash("Your notification preferences are saved.")
    return ctx.redirect(ME + "#notifications")
