"""Delivery channel kinds: the one vocabulary of the names a notification goes out by, and
what each can reach.

A kind may reach a person at their own address (an e-mail, a phone, their handle on a chat
platform, through the server's means for it), a group as a target of an escalation layer
(a robot's or custom webhook's URL, or group chats the server's app posts to), both, or
neither (the Teams app: dutyline has no Bot Framework bot, so `teams_app` is only a
template column). Every list of names (the template columns, the channels a person may be
paged by, the webhook target types, the `im` handle keys) and every wire `Literal` is
derived from KINDS; what each means of delivery needs from the server's settings is in
notify/delivery/adapters/needs.py, keyed by these names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

# How a group target of a kind is reached: the URL in its settings (a robot, the custom
# webhook), or the `chat_ids` it names, posted to by the server's app for the platform.
GroupReach = Literal["", "url", "chat_ids"]


@dataclass(frozen=True)
class ChannelKind:
    name: str
    # Where a person is reached: "email", "phone", or the platform whose handle (`im.<it>`)
    # the server's app writes to; "" when the kind cannot reach a person.
    person: str
    group: GroupReach
    # The template column its body comes from ("" when it renders none: the custom webhook
    # posts a JSON payload).
    template: str


KINDS: tuple[ChannelKind, ...] = (
    # The reference's template columns first, in its order (TemplateItem).
    ChannelKind("email", "email", "", "email"),
    ChannelKind("sms", "phone", "", "sms"),
    ChannelKind("voice", "phone", "", "voice"),
    ChannelKind("dingtalk", "dingtalk", "url", "dingtalk"),
    ChannelKind("wecom", "wecom", "url", "wecom"),
    ChannelKind("feishu", "feishu", "url", "feishu"),
    ChannelKind("feishu_app", "feishu", "chat_ids", "feishu_app"),
    ChannelKind("dingtalk_app", "dingtalk", "chat_ids", "dingtalk_app"),
    ChannelKind("wecom_app", "wecom", "chat_ids", "wecom_app"),
    ChannelKind("slack_app", "slack", "chat_ids", "slack_app"),
    ChannelKind("teams_app", "", "", "teams_app"),
    ChannelKind("telegram", "telegram", "url", "telegram"),
    ChannelKind("slack", "slack", "url", "slack"),
    ChannelKind("zoom", "zoom", "url", "zoom"),
    # Group targets only: a Teams channel's incoming webhook (its body is the template's
    # Teams column) and the custom webhook.
    ChannelKind("teams", "", "url", "teams_app"),
    ChannelKind("webhook", "", "url", ""),
)
BY_NAME = {k.name: k for k in KINDS}
# Another name a layer's webhook target may carry for a kind (the reference's `custom`).
GROUP_ALIASES = {"custom": "webhook"}

# The template columns, in the reference's order.
TEMPLATE_CHANNELS = tuple(k.name for k in KINDS if k.template == k.name)
# What a person may be paged by (a layer's `by`, a preference, a responder, a schedule).
PERSONAL_CHANNELS = tuple(k.name for k in KINDS if k.person)
# The types of a layer's webhook targets, and of the deliveries they make.
GROUP_CHANNELS = tuple(k.name for k in KINDS if k.group)
WEBHOOK_TYPES = (*GROUP_CHANNELS, *GROUP_ALIASES)
# Group targets that are the server's app posting into group chats (`chat_ids`).
APP_TYPES = frozenset(k.name for k in KINDS if k.group == "chat_ids")
# The chat platforms a member names a handle on (`im.<platform>`).
IM_PLATFORMS = tuple(dict.fromkeys(k.person for k in KINDS
                                   if k.person not in ("", "email", "phone")))

# Wire enums: msgspec validates a Literal built from the tuple; a type checker sees a str.
if TYPE_CHECKING:
    TemplateChannel = str
    PersonalChannel = str
else:
    TemplateChannel = Literal.__getitem__(TEMPLATE_CHANNELS)
    PersonalChannel = Literal.__getitem__(PERSONAL_CHANNELS)


def personal_refusal(name: str) -> str | None:
    """Why `name` can never page a person (None: it can, given the server's means)."""
    kind = BY_NAME.get(name)
    if kind is None:
        return f"unknown channel {name!r}: one of {', '.join(PERSONAL_CHANNELS)}"
    if not kind.person:
        why = (" (dutyline has no Teams bot to message a person)"
               if name.startswith("teams") else "")
        return f"{name} cannot reach a person{why}: one of {', '.join(PERSONAL_CHANNELS)}"
    return None


def group_refusal(name: str) -> str | None:
    """Why a layer's webhook target of type `name` can never be reached (None: it can)."""
    kind = BY_NAME.get(GROUP_ALIASES.get(name, name))
    if kind is None:
        return f"unknown type {name!r}: one of {', '.join(WEBHOOK_TYPES)}"
    if not kind.group:
        hint = ("; a Teams channel is reached by its incoming webhook (type teams)"
                if name == "teams_app" else "")
        return f"{name} is not a group target{hint}"
    return None


def template_column(name: str) -> str:
    """The template column a delivery of this kind renders ("" : none)."""
    kind = BY_NAME.get(GROUP_ALIASES.get(name, name))
    return kind.template if kind is not None else ""


def address_key(name: str) -> str:
    """Where a person's address for this kind is: "email", "phone", a platform's `im` key,
    or "" when the kind cannot reach a person."""
    kind = BY_NAME.get(name)
    return kind.person if kind is not None else ""
