"""Delivery channels by name. A new channel (Telegram, Zoom, SMS and voice through a
Twilio-compatible API, the chat apps) is one module with a `send(env, out) -> Attempt` and
one line here."""

from __future__ import annotations

from dutyline.notify.delivery.adapters import dingtalk, email, feishu, slack, teams, webhook, wecom
from dutyline.notify.delivery.adapters.base import Send

ADAPTERS: dict[str, Send] = {
    "email": email.send,
    "webhook": webhook.send,
    "slack": slack.send,
    "feishu": feishu.send,
    "dingtalk": dingtalk.send,
    "wecom": wecom.send,
    "teams": teams.send,
}


def adapter(channel: str) -> Send | None:
    return ADAPTERS.get(channel)
