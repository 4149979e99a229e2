"""The account's Settings page, for those who manage the account: its name, time zone and
language (through the account service, the record /account/info reads, audited with the
session as credential); the address links start with; and what each means of delivery
(e-mail, SMS and voice, the chat platforms) needs, in words, with whether this server has it.

The base URL and the delivery settings are the server's (environment or dutyline.toml), read
from the process's settings: shown, never changed here, and never a secret (how a means sends
names its service with credentials masked)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import Response

from dutyline.api import errors
from dutyline.notify.delivery import service as delivery
from dutyline.platform.account import service as accounts
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import require_manager
from dutyline.web.page import Pages

pages = Pages()

PATH = "/console/settings"
LOCALES = (("en-US", "English"), ("zh-CN", "简体中文"))
# Every zone the account may choose, by name (the service refuses any other).
ZONES = tuple((zone, zone) for zone in sorted(accounts.TIME_ZONES))
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}

# How each means of delivery is named on the page (keys of delivery.Means.key).
LABELS = {"email": "E-mail", "twilio": "SMS and voice calls", "telegram": "Telegram",
          "slack": "Slack", "feishu": "Feishu", "dingtalk": "DingTalk", "wecom": "WeCom",
          "zoom": "Zoom", "teams": "Microsoft Teams"}
# What each means of delivery needs, for the operator who sets it up (keys of
# delivery.Means.key); the setting names are shown beside, as the server's own.
NEEDS = {
    "email": "An SMTP server to send from: its address, and the user name and password if "
             "it asks for them. Pages, invitations and password links go out by e-mail.",
    "twilio": "A Twilio account (or a gateway that speaks its API): the account SID, the "
              "auth token and the phone number messages and calls come from.",
    "telegram": "A Telegram bot, made with @BotFather: its token. Each person writes to the "
                "bot once, then gives their chat id on their profile.",
    "slack": "A Slack app installed in your workspace, with its bot token; it pages people "
             "by direct message and posts to channels it is invited to.",
    "feishu": "A Feishu custom app: its app ID and app secret.",
    "dingtalk": "A DingTalk internal app: its app key and app secret.",
    "wecom": "A WeCom self-built app: the company's corp ID, the app's secret and its agent "
             "ID.",
    "zoom": "A Zoom Team Chat bot app: its client ID and secret, the bot's JID and the "
            "account ID.",
    "teams": "Microsoft Teams is reached by its incoming webhooks (a chat robot of an "
             "escalation rule), not by an app of this server.",
}


@dataclass(frozen=True)
class MeansRow:
    key: str
    label: str
    ready: bool
    how: str
    needs: str
    settings: tuple[str, ...]
    unsupported: str


def _means(ctx: ConsoleContext) -> list[MeansRow]:
    return [MeansRow(m.key, LABELS.get(m.key, m.label), m.ready, m.how,
                     NEEDS.get(m.key, ""), m.settings, m.unsupported)
            for m in delivery.means_of(ctx.runtime.settings)]


def _base_url(ctx: ConsoleContext) -> dict[str, Any]:
    url = ctx.runtime.settings.base_url
    host = (urlsplit(url).hostname or "").lower()
    return {"base_url": url, "base_url_local": host in _LOCAL_HOSTS,
            "base_url_plain": url.startswith("http://") and host not in _LOCAL_HOSTS}


async def _context(ctx: ConsoleContext) -> dict[str, Any]:
    require_manager(ctx)
    actor = ctx.actor
    # The read /account/info does, as one unit on the database (api/operation.py).
    account = await ctx.runtime.db.run_sync(
        lambda conn: accounts.account_info_sync(conn, actor), write=False)
    return {"title": "Settings", "account": account, "zones": ZONES, "locales": LOCALES,
            "means": _means(ctx), **_base_url(ctx)}


@pages.get(PATH)
async def settings(ctx: ConsoleContext) -> Response:
    return ctx.render("settings/settings.html", **await _context(ctx))


@pages.post(PATH)
async def save(ctx: ConsoleContext) -> Response:
    """The service refuses, and the audit log records, a change by anyone who may not
    manage the account ("Not allowed"); a refused value shows by its field."""
    await ctx.form()  # what was typed, shown again with an error
    form = await ctx.form_lists()
    try:
        changes = forms.decode(form, accounts.AccountChanges)
        async with ctx.write() as conn:
            await accounts.update_account(conn, ctx.actor, changes=changes)
    except errors.InvalidParameter as exc:
        return ctx.form_failed("settings/settings.html", forms.on_form(exc, form=form),
                               **await _context(ctx))
    ctx.flash("The account's settings are saved.")
    return ctx.redirect(PATH)
