"""What a chat platform does for a war room, and the IM integrations that offer one.

The IM integrations are the server's chat apps (config.ChatApps: one app per platform per
server, like Twilio): the contract has no operations that register IM apps per account, so
each configured app is an integration of every account, under a fixed id (`data_source_id`,
the `integration_id` of the war-room operations). A platform module (slack.py, feishu.py,
dingtalk.py) implements `ChatPlatform` with the platform's documented server API, through the
delivery adapters' guarded client (notify/delivery/adapters/base.py: the outbound guard, timeouts,
no secret in logs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from dutyline.config import Settings
from dutyline.notify.delivery.adapters import needs
from dutyline.notify.delivery.adapters.base import Attempt, SendEnv


@dataclass(frozen=True)
class Room:
    """A group chat as the platform names it."""

    chat_id: str
    chat_name: str
    share_link: str = ""


class PlatformError(Exception):
    """The platform refused a call (`refused`: its own error, which trying again will not
    mend), or could not be reached (a timeout, a 5xx, the outbound guard)."""

    def __init__(self, platform: str, reason: str, *, refused: bool = True) -> None:
        super().__init__(f"{platform}: {reason}")
        self.platform = platform
        self.reason = reason[:300]
        self.refused = refused


def unreachable(platform: str, call: str, attempt: Attempt) -> PlatformError:
    """A call that got no usable answer: refused when the platform said 4xx, answered 2xx
    in a shape that is not its API's (an HTML page, a body that is not JSON), or the
    outbound guard stopped it (trying again will not help), else unavailable."""
    answered = attempt.status_code in range(200, 300)
    why = attempt.error or ("the answer is not the platform's" if answered else "no answer")
    return PlatformError(platform, f"{call}: {why}",
                         refused=attempt.status_code in range(200, 500) or
                         "outbound guard" in attempt.error)


def answer_of(attempt: Attempt) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(attempt.response_body)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class ChatPlatform(Protocol):
    name: str

    async def open(self, env: SendEnv, *, name: str, topic: str,
                   handles: Sequence[str]) -> Room:
        """Create the group chat with these people in it (their handles), or raise."""

    async def invite(self, env: SendEnv, chat_id: str, handles: Sequence[str]) -> None: ...

    async def post(self, env: SendEnv, chat_id: str, text: str) -> None: ...

    async def look(self, env: SendEnv, chat_id: str) -> Room | None:
        """The chat as it is now, or None when it is gone (deleted or archived)."""

    async def close(self, env: SendEnv, chat_id: str) -> None:
        """Undo `open` after a later step failed (best effort: archive or disband)."""


@dataclass(frozen=True)
class ImIntegration:
    integration_id: int
    plugin_type: str  # the channel kind (kit/channels.py) of the app
    name: str
    need: needs.Need  # the settings the app takes
    handle_key: str  # members' handle on the platform: im.<handle_key>


# DingTalk makes group chats from a scene group template: its war rooms need one too.
DINGTALK_SCENE_GROUPS = needs.Need(
    "DingTalk war rooms",
    ("DUTYLINE_DINGTALK_APP_KEY", "DUTYLINE_DINGTALK_APP_SECRET",
     "DUTYLINE_DINGTALK_SCENE_GROUP_TEMPLATE_ID"),
    lambda s: bool(needs.DINGTALK_APP.ready(s) and s.chat_apps.dingtalk_scene_group_template_id))

FEISHU_APP = ImIntegration(1, "feishu_app", "Feishu / Lark app", needs.FEISHU_APP, "feishu")
SLACK_APP = ImIntegration(2, "slack_app", "Slack app", needs.SLACK_APP, "slack")
DINGTALK_APP = ImIntegration(3, "dingtalk_app", "DingTalk app", DINGTALK_SCENE_GROUPS,
                             "dingtalk")
# The apps war rooms are built for. WeCom makes group chats only as "app chats" of an app's
# visible members and Teams needs a Bot Framework bot: not offered (docs/war-rooms.md).
WAR_ROOM_APPS: tuple[ImIntegration, ...] = (FEISHU_APP, SLACK_APP, DINGTALK_APP)
BY_ID = {i.integration_id: i for i in WAR_ROOM_APPS}


def war_room_integrations(settings: Settings) -> list[ImIntegration]:
    """The IM integrations this server offers war rooms in: the apps configured, unless the
    operator turned war rooms off."""
    if not settings.chat_apps.war_rooms:
        return []
    return [i for i in WAR_ROOM_APPS if i.need.gap(settings) is None]


def war_room_integration(settings: Settings, integration_id: int) -> ImIntegration | None:
    found = BY_ID.get(integration_id)
    return found if found in war_room_integrations(settings) else None
