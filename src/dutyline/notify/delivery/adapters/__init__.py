"""Delivery channels by name. A new channel is one module with a `send(env, out) -> Attempt`
and one line here.

A group target (a layer's webhook) and a person named by `by` may use the same channel name
with different means: a `slack` robot posts to its incoming-webhook URL, while a person paged
by `slack` gets a direct message from the server's Slack app; so there are two tables."""

from __future__ import annotations

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

# Group targets: incoming-webhook robots, the custom webhook, and the apps' group chats.
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
    "slack_app": slack_app.send,
    "feishu_app": feishu_app.send_group,
    "dingtalk_app": dingtalk_app.send_group,
    "wecom_app": wecom_app.send_group,
    "teams_app": teams_app.send,
}

# One person at their own address: e-mail, phone, or their handle on a chat platform (the
# plain and the `_app` name both mean the platform's app: a robot cannot write to a person).
PERSONAL: dict[str, Send] = {
    "email": email.send,
    "sms": twilio.send_sms,
    "voice": twilio.send_voice,
    "telegram": telegram.send,
    "slack": slack_app.send,
    "slack_app": slack_app.send,
    "feishu": feishu_app.send_personal,
    "feishu_app": feishu_app.send_personal,
    "dingtalk": dingtalk_app.send_personal,
    "dingtalk_app": dingtalk_app.send_personal,
    "wecom": wecom_app.send_personal,
    "wecom_app": wecom_app.send_personal,
    "zoom": zoom_app.send_personal,
    # Never reaches anyone (kit.channels): a delivery by it is recorded failed, with why.
    "teams_app": teams_app.send,
}


def adapter(channel: str, *, personal: bool = False) -> Send | None:
    return (PERSONAL if personal else ADAPTERS).get(channel)

