"""War rooms on Slack through the server's app (Web API, bot token `xoxb-…`):

- `POST {api}/conversations.create` `{"name", "is_private": false}` -> `{"ok": true,
  "channel": {"id": "C…", "name"}}` (scope `channels:manage`); a taken name is tried once
  more with a suffix;
- `POST {api}/conversations.invite` `{"channel", "users": "U1,U2"}` (comma-separated member
  ids, `im.slack`); `already_in_channel` for one of several: each invited on its own, those
  in the channel already left alone;
- `POST {api}/chat.postMessage` `{"channel", "text"}`: the incident and its link;
- `POST {api}/conversations.info` (form-encoded `channel=`, a read method) -> the channel, or
  `channel_not_found`; an archived channel counts as gone;
- `POST {api}/conversations.archive` `{"channel"}`: undo a room whose set-up failed.

Each with `Authorization: Bearer <bot token>`. Slack answers HTTP 200 `{"ok": false, "error"}`
for its refusals: that error is the reason given. An answer of another shape (an HTML page
from a proxy, a body that is not JSON, an `ok` without the channel it should carry) is a
refusal too, as the other platforms' are: the caller gets a 400 naming the method. A
channel's link is Slack's documented deep link, `https://slack.com/app_redirect?channel=<id>`.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from dutyline.notify.delivery.adapters.base import SendEnv, dumps, post
from dutyline.notify.war_room.platform import PlatformError, Room, answer_of, unreachable

NAME = "Slack"
MAX_NAME = 80  # Slack's limit on channel names
APP_REDIRECT = "https://slack.com/app_redirect?channel="
ALREADY_IN = "already_in_channel"
# Refusals that mean the channel is not there any more.
GONE = frozenset({"channel_not_found", "is_archived"})


def channel_name(name: str) -> str:
    """Slack's rules: lower case letters, digits, hyphens and underscores, at most 80."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")
    return re.sub(r"-{2,}", "-", slug)[:MAX_NAME].rstrip("-") or "incident"


def link(chat_id: str) -> str:
    return APP_REDIRECT + chat_id


async def call(env: SendEnv, method: str, body: dict[str, Any], *,
               form: bool = False) -> dict[str, Any]:
    apps = env.settings.chat_apps
    url = f"{apps.slack_api_url}/{method}"
    headers = {"Authorization": f"Bearer {apps.slack_bot_token}"}
    if form:
        attempt = await post(env, url, urlencode(body).encode(), headers,
                             content_type="application/x-www-form-urlencoded")
    else:
        attempt = await post(env, url, dumps(body).encode(), headers,
                             content_type="application/json; charset=utf-8")
    if not attempt.ok:
        raise unreachable(NAME, method, attempt)
    answer = answer_of(attempt)
    if answer.get("ok") is not True:
        error = answer.get("error")
        raise PlatformError(NAME, f"{method}: " + (
            error if isinstance(error, str) and error else "no ok in the answer"))
    return answer


def _channel(answer: dict[str, Any], method: str) -> dict[str, Any]:
    """The answer's `channel` object, with its id: anything else is a refusal."""
    channel = answer.get("channel")
    if not isinstance(channel, dict) or not isinstance(channel.get("id"), str) \
            or not channel["id"]:
        raise PlatformError(NAME, f"{method}: no channel id in the answer")
    return channel


class _AlreadyIn(Exception):
    pass


async def _invite_one(env: SendEnv, chat_id: str, handle: str) -> None:
    try:
        await call(env, "conversations.invite", {"channel": chat_id, "users": handle})
    except PlatformError as exc:
        if exc.reason.endswith(ALREADY_IN):
            raise _AlreadyIn from None
        raise


class Slack:
    name = NAME

    async def open(self, env: SendEnv, *, name: str, topic: str,
                   handles: Sequence[str]) -> Room:
        wanted = channel_name(name)
        try:
            made = await call(env, "conversations.create", {"name": wanted, "is_private": False})
        except PlatformError as exc:
            if not exc.reason.endswith("name_taken"):
                raise
            # The same number in another account, or a room made by hand: one more try.
            wanted = f"{wanted[:MAX_NAME - 5]}-{secrets.token_hex(2)}"
            made = await call(env, "conversations.create", {"name": wanted, "is_private": False})
        channel = _channel(made, "conversations.create")
        chat_id = channel["id"]
        made_name = channel.get("name")
        room = Room(chat_id, made_name if isinstance(made_name, str) and made_name else wanted,
                    link(chat_id))
        try:
            await self.invite(env, chat_id, handles)
        except PlatformError:
            await self.close(env, chat_id)
            raise
        return room

    async def invite(self, env: SendEnv, chat_id: str, handles: Sequence[str]) -> None:
        if not handles:
            return
        try:
            await call(env, "conversations.invite", {"channel": chat_id,
                                                     "users": ",".join(handles)})
        except PlatformError as exc:
            if not exc.reason.endswith(ALREADY_IN):
                raise
            # Slack refuses the whole list when one of them is in the channel already (they
            # joined by the link): invite the others one by one.
            for handle in handles if len(handles) > 1 else ():
                with contextlib.suppress(_AlreadyIn):
                    await _invite_one(env, chat_id, handle)

    async def post(self, env: SendEnv, chat_id: str, text: str) -> None:
        await call(env, "chat.postMessage", {"channel": chat_id, "text": text})

    async def look(self, env: SendEnv, chat_id: str) -> Room | None:
        try:
            answer = await call(env, "conversations.info", {"channel": chat_id}, form=True)
        except PlatformError as exc:
            if exc.reason.rpartition(": ")[2] in GONE:
                return None
            raise
        channel = _channel(answer, "conversations.info")
        if channel.get("is_archived") is True:
            return None
        name = channel.get("name")
        return Room(chat_id, name if isinstance(name, str) else "", link(chat_id))

    async def close(self, env: SendEnv, chat_id: str) -> None:
        # Best effort: the error the caller reports is the one that stopped the set-up.
        with contextlib.suppress(PlatformError):
            await call(env, "conversations.archive", {"channel": chat_id})
