"""What the Me page shows, read through the same services as the API: the person's
profile and contacts (/member/info, their own unmasked phone to edit), chat handles and
channels per severity (/member/notify/info), with the warnings the API's saves answer for
them; their sessions and second factor. A form of the page that fails shows the page
again from `load`, with the error by its field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from dutyline.api.types import SaveWarning
from dutyline.kit.channels import BY_NAME, IM_PLATFORMS, PERSONAL_CHANNELS, address_key
from dutyline.kit.vocabulary import SEVERITY_KEY, SEVERITY_KEYS
from dutyline.notify.preference import service as preferences
from dutyline.platform.member import service as members
from dutyline.web import second_factor
from dutyline.web import service as signin
from dutyline.web.context import ConsoleContext

# How a platform and a channel are named on the page; the names themselves (the form's
# values) are those of kit/channels.py.
_PLATFORMS = {"dingtalk": "DingTalk", "wecom": "WeCom", "feishu": "Feishu", "slack": "Slack",
              "telegram": "Telegram", "zoom": "Zoom"}
_CHANNELS = {"email": "E-mail", "sms": "SMS", "voice": "Voice call"}
SEVERITY_LABELS = {key: f"{s} incidents" for s, key in SEVERITY_KEY.items()}
# What a contact's warning is about: the means its test sends by.
CONTACT_LABELS = {"email": "E-mail", "phone": "SMS"}


def platform_label(platform: str) -> str:
    return _PLATFORMS.get(platform, platform.capitalize())


def channel_label(name: str) -> str:
    if name in _CHANNELS:
        return _CHANNELS[name]
    app = " (app)" if BY_NAME[name].group == "chat_ids" else ""
    return platform_label(address_key(name)) + app


def tested_by(contact: str) -> str:
    """The channel a contact's test button sends by: e-mail, SMS for the phone (a test
    should not ring), the first channel that messages a chat handle."""
    if contact == "phone":
        return "sms"
    return next(c for c in PERSONAL_CHANNELS if address_key(c) == contact)


@dataclass(frozen=True)
class PageState:
    """What the person's forms compare with: their contacts and preference as saved."""

    person: members.Contact
    preference: preferences.Preference


@dataclass(frozen=True)
class ContactField:
    name: str  # the form field: email, phone, im.<platform>
    label: str
    value: str  # as saved
    input_type: str
    autocomplete: str
    hint: str
    warning: str
    test_channel: str
    test_label: str


def _contact_fields(person: members.Contact, pref: preferences.Preference,
                    warnings: dict[str, str]) -> list[ContactField]:
    fields = [
        ContactField("email", "E-mail address", person.email, "email", "email", "",
                     warnings.get("email", ""), "email", "e-mail"),
        ContactField("phone", "Phone", person.phone, "tel", "tel-national",
                     "The number without the country code given above, or all of it "
                     "with a leading +.",
                     warnings.get("phone", ""), "sms", "SMS"),
    ]
    for platform in IM_PLATFORMS:
        name = f"im.{platform}"
        channel = tested_by(platform)
        fields.append(ContactField(
            name, f"{platform_label(platform)} id", pref.im.get(platform, ""), "text", "off",
            "", warnings.get(name, ""), channel, channel_label(channel)))
    return fields


def _by_field(warnings: list[SaveWarning], chosen: dict[str, list[str] | None] | None = None
              ) -> dict[str, str]:
    """What each field's warnings are about, in a person's words: the contact or chat app
    ("E-mail", "Telegram"), or the channels of a severity ("SMS, Voice call"); the template
    says it is not set up on this server. The services' messages name the server's settings
    (DUTYLINE_...), which are the operator's business, not the responder's."""
    out: dict[str, list[str]] = {}
    for w in warnings:
        key, _, index = w.field.partition("[")  # critical[1] -> critical, 1
        if chosen is not None and index.rstrip("]").isdigit():
            channel = (chosen.get(key) or [])[int(index.rstrip("]"))]
            what = channel_label(channel) if channel in BY_NAME else channel
        else:
            what = CONTACT_LABELS.get(key) or platform_label(key.removeprefix("im."))
        if what not in out.setdefault(key, []):
            out[key].append(what)
    return {key: ", ".join(whats) for key, whats in out.items()}


async def load(ctx: ConsoleContext) -> dict[str, Any]:
    """The whole page's context, its reads as one unit of database work."""
    return await ctx.runtime.db.run_sync(lambda conn: _load(ctx, conn), write=False)


def _load(ctx: ConsoleContext, conn: Connection) -> dict[str, Any]:
    actor = ctx.actor
    settings = ctx.runtime.settings
    info = members.member_info_sync(conn, actor)
    person, pref = preferences.reach_sync(conn, actor, member_id=0)
    notify = preferences.notify_info_sync(conn, actor, member_id=0)
    contact_warnings = _by_field([
        *members.contact_warnings(ctx.runtime.reach_gap, email=person.email,
                                  phone=person.phone),
        *preferences.delivery_warnings(settings, im=pref.im, by_severity={})])
    chosen: dict[str, list[str] | None] = {s: list(getattr(notify, s))
                                           for s in SEVERITY_KEYS}
    sessions = signin.sessions_of_sync(conn, actor)
    current = ctx.session.session_hash if ctx.session else ""
    return {
        "info": info,
        "person": person,
        "preference": pref,
        "contacts": _contact_fields(person, pref, contact_warnings),
        "country_code": person.country_code,
        "severities": [(s, SEVERITY_LABELS[s]) for s in SEVERITY_KEYS],
        "channels": [(c, channel_label(c)) for c in PERSONAL_CHANNELS],
        "chosen": chosen,
        "preference_warnings": _by_field(preferences.delivery_warnings(
            settings, im=None, by_severity=chosen), chosen),
        "time_zones": members.TIME_ZONE_NAMES,
        "enrolled": second_factor.enrolled_sync(conn, actor.person_id),
        "sessions": [{"id": signin.public_id(s), "current": s.session_hash == current,
                      "session": s} for s in sessions],
    }
