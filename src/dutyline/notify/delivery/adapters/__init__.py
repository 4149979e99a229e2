"""Delivery channels by name, derived from the kinds of kit/channels.py (`KINDS`).

A kind reaches a person by the means behind their address (`ChannelKind.person`: an e-mail,
a phone, their handle on a chat platform), and a group target by its robot's own URL or the
server's app posting into group chats (`ChannelKind.group`). So a group target (a layer's
webhook) and a person named by `by` may use the same channel name with different means: a
`slack` robot posts to its incoming-webhook URL, while a person paged by `slack` gets a
direct message from the server's Slack app; hence two tables, `PERSONAL` and `GROUP`.

A new kind is one line in KINDS; a new means of delivery is one module with a
`send(env, out) -> Attempt` and one line in the means below. The tables are built from KINDS
at import, so a kind whose means is not here fails at start, and tests/notify/test_adapters.py
checks that every kind is sendable as it says (and nothing else is)."""

from __future__ import annotations

from dutyline.kit.channels import KINDS, ChannelKind
from dutyline.notify.delivery.adapters import (
    dingtalk,
    dingtalk_app,
    email,
    feishu,
    feishu_app,
    slack,
    slack_app,
    teams,
    teams_app,
    telegram,
    twilio,
    webhook,
    wecom,
    wecom_app,
    zoom,
    zoom_app,
)
from dutyline.notify.delivery.adapters.base import Send

# How the server reaches a person at each kind of address (`ChannelKind.person`; what each
# needs of the settings is needs.BY_ADDRESS). A chat platform's plain and `_app` kind are
# both its app: a robot cannot write to a person. A phone is texted or called, by the kind.
TO_PERSON: dict[str, Send] = {
    "email": email.send,
    "telegram": telegram.send,  # the server's bot
    "slack": slack_app.send,
    "feishu": feishu_app.send_personal,
    "dingtalk": dingtalk_app.send_personal,
    "wecom": wecom_app.send_personal,
    "zoom": zoom_app.send_personal,
}
BY_PHONE: dict[str, Send] = {"sms": twilio.send_sms, "voice": twilio.send_voice}

# Robots posting to a URL of their own (`ChannelKind.group == "url"`), by kind: the chat
# platforms' incoming webhooks and the custom webhook.
ROBOTS: dict[str, Send] = {
    "dingtalk": dingtalk.send,
    "wecom": wecom.send,
    "feishu": feishu.send,
    "telegram": telegram.send,  # the target's own bot token and chat
    "slack": slack.send,
    "zoom": zoom.send,
    "teams": teams.send,
    "webhook": webhook.send,
}
# The server's app posting into the group chats a target names (`group == "chat_ids"`), by
# platform.
TO_GROUP_CHATS: dict[str, Send] = {
    "slack": slack_app.send,
    "feishu": feishu_app.send_group,
    "dingtalk": dingtalk_app.send_group,
    "wecom": wecom_app.send_group,
}
# A kind that reaches no one (kit.channels refuses it when a rule is saved): a delivery by
# it, left from before, is recorded failed at once with why.
UNREACHABLE: dict[str, Send] = {"teams_app": teams_app.send}
# The e-mail addresses a layer names (`emails`) are group deliveries by e-mail.
GROUP_EMAIL = "email"


def _to_person(kind: ChannelKind) -> Send:
    return BY_PHONE[kind.name] if kind.person == "phone" else TO_PERSON[kind.person]


def _to_group(kind: ChannelKind) -> Send:
    return ROBOTS[kind.name] if kind.group == "url" else TO_GROUP_CHATS[kind.person]


# One person at their own address.
PERSONAL: dict[str, Send] = {
    **{k.name: _to_person(k) for k in KINDS if k.person},
    **{k.name: UNREACHABLE[k.name] for k in KINDS if not (k.person or k.group)},
}
# Group targets: robots, the custom webhook, the apps' group chats, a layer's e-mails.
GROUP: dict[str, Send] = {
    GROUP_EMAIL: TO_PERSON[GROUP_EMAIL],
    **{k.name: _to_group(k) for k in KINDS if k.group},
    **{k.name: UNREACHABLE[k.name] for k in KINDS if not (k.person or k.group)},
}


def adapter(channel: str, *, personal: bool = False) -> Send | None:
    return (PERSONAL if personal else GROUP).get(channel)
