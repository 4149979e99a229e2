"""Delivery channels by name. A new channel (the chat apps next) is one module with a
`send(env, out) -> Attempt` and one line here."""

from __future__ import annotations

from dutyline.notify.delivery.adapters import (
    dingtalk,
    email,
    feishu,
    slack,
    teams,
    telegram,
    twilio,
    webhook,
    wecom,
    zoom,
)
from dutyline.notify.delivery.adapters.base import Send

ADAPTERS: dict[str, Send] = {
    "email": email.send,
    "webhook": webhook.send,
    "slack": slack.send,
    "feishu": feishu.send,
    "dingtalk": dingtalk.send,
    "wecom": wecom.send,
    "teams": teams.send,
    "telegram": telegram.send,
    "zoom": zoom.send,
    "sms": twilio.send_sms,
    "voice": twilio.send_voice,
}


# Channels that reach one person at their own address (e-mail, phone, Telegram chat id);
# the other chat channels post to a group's webhook and have no personal form yet.
PERSONAL = frozenset({"email", "sms", "voice", "telegram"})


def adapter(channel: str, *, personal: bool = False) -> Send | None:
    if personal and channel not in PERSONAL:
        return None
    return ADAPTERS.get(channel)
