"""What each delivery channel kind needs from the server's settings, in one table.

The start-up lines (which channels cannot deliver and what to set), the warnings given when
an escalation rule, a schedule or a member's contact is saved, and the test notification's
"skipped" all read this table, so they never disagree with each other. The adapters still
check their own settings when they send: a setting can be missing on one process only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from dutyline.config import Settings
from dutyline.kit import channels
from dutyline.kit.outbound import OutboundPolicy
from dutyline.notify.delivery.adapters import teams_app

PRIVATE_NETWORK_VARIABLE = "DUTYLINE_ALLOW_PRIVATE_NETWORK"


@dataclass(frozen=True)
class Need:
    """A means of delivery some channel kinds share (an SMTP server, a Twilio account, a
    chat platform's app), the settings it takes and whether they are there."""

    label: str
    variables: tuple[str, ...]
    ready: Callable[[Settings], bool]
    # Why it can never work, for a means dutyline does not support (no setting helps).
    unsupported: str = ""

    def gap(self, settings: Settings) -> str | None:
        """Why nothing goes out by this means with these settings, or None when it can."""
        if self.unsupported:
            return self.unsupported
        if self.ready(settings):
            return None
        names = self.variables
        wanted = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"{self.label} is not configured: set {wanted}"


def _all(*values: object) -> bool:
    return all(bool(v) for v in values)


EMAIL = Need("e-mail", ("DUTYLINE_SMTP_URL",), lambda s: bool(s.smtp_url))
TWILIO = Need(
    "SMS and voice calls",
    ("DUTYLINE_TWILIO_ACCOUNT_SID", "DUTYLINE_TWILIO_AUTH_TOKEN", "DUTYLINE_TWILIO_FROM_NUMBER"),
    lambda s: _all(s.twilio_account_sid, s.twilio_auth_token, s.twilio_from_number))
TELEGRAM_BOT = Need("Telegram direct messages (the server's bot)",
                    ("DUTYLINE_TELEGRAM_BOT_TOKEN",), lambda s: bool(s.telegram_bot_token))
SLACK_APP = Need("the Slack app", ("DUTYLINE_SLACK_BOT_TOKEN",),
                 lambda s: bool(s.chat_apps.slack_bot_token))
FEISHU_APP = Need("the Feishu app", ("DUTYLINE_FEISHU_APP_ID", "DUTYLINE_FEISHU_APP_SECRET"),
                  lambda s: _all(s.chat_apps.feishu_app_id, s.chat_apps.feishu_app_secret))
DINGTALK_APP = Need(
    "the DingTalk app", ("DUTYLINE_DINGTALK_APP_KEY", "DUTYLINE_DINGTALK_APP_SECRET"),
    lambda s: _all(s.chat_apps.dingtalk_app_key, s.chat_apps.dingtalk_app_secret))
WECOM_APP = Need(
    "the WeCom app",
    ("DUTYLINE_WECOM_CORP_ID", "DUTYLINE_WECOM_CORP_SECRET", "DUTYLINE_WECOM_AGENT_ID"),
    lambda s: _all(s.chat_apps.wecom_corp_id, s.chat_apps.wecom_corp_secret,
                   s.chat_apps.wecom_agent_id))
ZOOM_APP = Need(
    "the Zoom app",
    ("DUTYLINE_ZOOM_CLIENT_ID", "DUTYLINE_ZOOM_CLIENT_SECRET", "DUTYLINE_ZOOM_BOT_JID",
     "DUTYLINE_ZOOM_ACCOUNT_ID"),
    lambda s: _all(s.chat_apps.zoom_client_id, s.chat_apps.zoom_client_secret,
                   s.chat_apps.zoom_bot_jid, s.chat_apps.zoom_account_id))
TEAMS_APP = Need("the Teams app", (), lambda s: False, unsupported=teams_app.REASON)

# The means reported at start-up, in this order (the Teams app is not: no setting helps).
CONFIGURABLE = (EMAIL, TWILIO, TELEGRAM_BOT, SLACK_APP, FEISHU_APP, DINGTALK_APP, WECOM_APP,
                ZOOM_APP)

# The means behind each way of reaching a person (kit.channels: ChannelKind.person): the
# plain and the `_app` name of a chat platform are the same app.
BY_ADDRESS: dict[str, Need] = {
    "email": EMAIL, "phone": TWILIO, "telegram": TELEGRAM_BOT, "slack": SLACK_APP,
    "feishu": FEISHU_APP, "dingtalk": DINGTALK_APP, "wecom": WECOM_APP, "zoom": ZOOM_APP,
}
# A kind that reaches no one: why, whatever the settings.
UNREACHABLE: dict[str, Need] = {"teams_app": TEAMS_APP}
# One person at their own address (adapters.PERSONAL): what each channel name needs.
PERSONAL: dict[str, Need] = {k.name: BY_ADDRESS[k.person] for k in channels.KINDS if k.person}
# Group targets (adapters.GROUP): robots carry their own URL and token; the apps' group
# chats and the e-mail addresses of a layer need the server's means.
GROUP: dict[str, Need] = {
    "email": EMAIL,
    **{k.name: BY_ADDRESS[k.person] for k in channels.KINDS if k.group == "chat_ids"},
    **{k.name: UNREACHABLE[k.name] for k in channels.KINDS if not (k.person or k.group)},
}


def gap(settings: Settings, channel: str, *, personal: bool) -> str | None:
    """Why a delivery by `channel` cannot go out with these settings, or None."""
    need = (PERSONAL if personal else GROUP).get(channel)
    return need.gap(settings) if need is not None else None


def policy_of(settings: Settings, base: OutboundPolicy | None = None) -> OutboundPolicy:
    """The guard deliveries go through: the operator's private-network switch, and the
    `host:port` pairs let through whatever they resolve to (settings.extra; the tests'
    loopback receivers)."""
    policy = base or OutboundPolicy(allow_private=settings.allow_private_network)
    allowed = settings.extra.get("outbound_allow_hosts")
    if allowed:
        policy = replace(policy, allow_hosts=frozenset(allowed))
    return policy


def startup_lines(settings: Settings) -> list[str]:
    """One line per means of delivery that cannot work, saying what to set."""
    lines = [f"delivery: {reason}" for need in CONFIGURABLE
             if (reason := need.gap(settings)) is not None]
    if not settings.allow_private_network:
        lines.append("delivery: webhooks and chat robots at loopback or private addresses "
                     f"will be refused: set {PRIVATE_NETWORK_VARIABLE}=true to allow them")
    return lines
