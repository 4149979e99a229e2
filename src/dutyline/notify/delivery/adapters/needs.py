"""What each delivery channel kind needs from the server's settings, in one table.

The start-up lines (how each channel delivers, or what to set for it), the warnings given when
an escalation rule, a schedule or a member's contact is saved, and the test notification's
"skipped" all read this table, so they never disagree with each other. The adapters still
check their own settings when they send: a setting can be missing on one process only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from dutyline.config import Settings
from dutyline.kit import channels, mail
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.url_secrets import mask_url
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
    # How it sends when ready: the service it reaches (credentials masked).
    how: Callable[[Settings], str] = lambda s: ""

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


def _via(url: str) -> str:
    return f"via {mask_url(url)}"


def _smtp(settings: Settings) -> str:
    try:
        target = mail.parse_smtp_url(settings.smtp_url or "", base_url=settings.base_url)
    except mail.MailError as exc:
        return f"DUTYLINE_SMTP_URL cannot be used: {exc}"
    tls = "TLS" if target.implicit_tls else f"STARTTLS {target.starttls}"
    return f"via {target.redacted} ({tls}), from {target.sender}"


EMAIL = Need("e-mail", ("DUTYLINE_SMTP_URL",), lambda s: bool(s.smtp_url), how=_smtp)
TWILIO = Need(
    "SMS and voice calls",
    ("DUTYLINE_TWILIO_ACCOUNT_SID", "DUTYLINE_TWILIO_AUTH_TOKEN", "DUTYLINE_TWILIO_FROM_NUMBER"),
    lambda s: _all(s.twilio_account_sid, s.twilio_auth_token, s.twilio_from_number),
    how=lambda s: f"{_via(s.twilio_api_url)}, from {s.twilio_from_number}")
TELEGRAM_BOT = Need("Telegram direct messages (the server's bot)",
                    ("DUTYLINE_TELEGRAM_BOT_TOKEN",), lambda s: bool(s.telegram_bot_token),
                    how=lambda s: _via(s.telegram_api_url))
SLACK_APP = Need("the Slack app", ("DUTYLINE_SLACK_BOT_TOKEN",),
                 lambda s: bool(s.chat_apps.slack_bot_token),
                 how=lambda s: _via(s.chat_apps.slack_api_url))
FEISHU_APP = Need("the Feishu app", ("DUTYLINE_FEISHU_APP_ID", "DUTYLINE_FEISHU_APP_SECRET"),
                  lambda s: _all(s.chat_apps.feishu_app_id, s.chat_apps.feishu_app_secret),
                  how=lambda s: _via(s.chat_apps.feishu_api_url))
DINGTALK_APP = Need(
    "the DingTalk app", ("DUTYLINE_DINGTALK_APP_KEY", "DUTYLINE_DINGTALK_APP_SECRET"),
    lambda s: _all(s.chat_apps.dingtalk_app_key, s.chat_apps.dingtalk_app_secret),
    how=lambda s: _via(s.chat_apps.dingtalk_api_url))
WECOM_APP = Need(
    "the WeCom app",
    ("DUTYLINE_WECOM_CORP_ID", "DUTYLINE_WECOM_CORP_SECRET", "DUTYLINE_WECOM_AGENT_ID"),
    lambda s: _all(s.chat_apps.wecom_corp_id, s.chat_apps.wecom_corp_secret,
                   s.chat_apps.wecom_agent_id),
    how=lambda s: _via(s.chat_apps.wecom_api_url))
ZOOM_APP = Need(
    "the Zoom app",
    ("DUTYLINE_ZOOM_CLIENT_ID", "DUTYLINE_ZOOM_CLIENT_SECRET", "DUTYLINE_ZOOM_BOT_JID",
     "DUTYLINE_ZOOM_ACCOUNT_ID"),
    lambda s: _all(s.chat_apps.zoom_client_id, s.chat_apps.zoom_client_secret,
                   s.chat_apps.zoom_bot_jid, s.chat_apps.zoom_account_id),
    how=lambda s: _via(s.chat_apps.zoom_api_url))
TEAMS_APP = Need("the Teams app", (), lambda s: False, unsupported=teams_app.REASON)

# The means reported at start-up, in this order (the Teams app is not: no setting helps).
# The chat apps a deployment has not configured share one line: most use none of them.
PEOPLE_MEANS = (EMAIL, TWILIO, TELEGRAM_BOT)
CHAT_APPS = (SLACK_APP, FEISHU_APP, DINGTALK_APP, WECOM_APP, ZOOM_APP)
CONFIGURABLE = (*PEOPLE_MEANS, *CHAT_APPS)

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
    """One line per means of delivery: how it sends, or what to set for it; the chat apps
    not configured together on one line."""
    lines = []
    for need in CONFIGURABLE:
        if need.ready(settings):
            lines.append(f"delivery: {need.label}: {need.how(settings)}")
        elif need in PEOPLE_MEANS:
            lines.append(f"delivery: {need.gap(settings)}")
    missing = [need for need in CHAT_APPS if not need.ready(settings)]
    if missing:
        names = [need.label.removeprefix("the ").removesuffix(" app") for need in missing]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        prefixes = ", ".join(_prefix(need) for need in missing)
        lines.append(f"delivery: chat apps not configured: {listed} (set {prefixes}; "
                     "docs/paging.md)")
    if not settings.allow_private_network:
        lines.append("delivery: webhooks and chat robots at loopback or private addresses "
                     f"will be refused: set {PRIVATE_NETWORK_VARIABLE}=true to allow them")
    return lines


def _prefix(need: Need) -> str:
    """DUTYLINE_SLACK_* for the variables of the Slack app."""
    return "_".join(need.variables[0].split("_")[:2]) + "_*"
