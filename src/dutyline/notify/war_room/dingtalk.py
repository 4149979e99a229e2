"""War rooms on DingTalk through the server's internal app. DingTalk lets an app create group
chats as "scene groups" from a template made in its developer console (the template puts the
app's robot in the group), on its server API (oapi), with the app's accessToken (fetched and
cached as for messages: notify/delivery/adapters/dingtalk_app.py) in `access_token`:

- `POST {oapi}/topapi/im/chat/scenegroup/create` `{"title", "template_id", "owner_user_id",
  "user_ids": "a,b", "uuid"}` -> `{"errcode": 0, "result": {"open_conversation_id": "cid…",
  "chat_id"}}`; the owner is the first person with a DingTalk handle (the caller when they
  have one), `uuid` makes a repeat of the same request create no second group;
- `POST {oapi}/topapi/im/chat/scenegroup/member/add` `{"open_conversation_id", "user_ids"}`;
- `POST {oapi}/topapi/im/chat/scenegroup/get` `{"open_conversation_id"}` -> `result.title`;
- the incident and its link: the robot's `groupMessages/send`, as a `dingtalk_app` group
  target is posted to.

DingTalk answers `{"errcode": <non-zero>, "errmsg"}` when it refuses, which is the reason
given. Its API has no join link for a scene group (`share_link` is empty) and no call that
dissolves one, so a group whose set-up failed after it was made stays in DingTalk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from dutyline.kit.ids import hex_id
from dutyline.notify.delivery.adapters import dingtalk_app
from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, dumps, post
from dutyline.notify.war_room.platform import PlatformError, Room, answer_of, unreachable

NAME = "DingTalk"
MAX_TITLE = 64
BATCH = 40  # user ids per create or member/add call
# The token is not valid (expired early): fetch a new one and try once more.
TOKEN_REFUSED = frozenset({"40014", "42001"})


async def call(env: SendEnv, path: str, body: dict[str, Any], *,
               fresh: bool = False) -> dict[str, Any]:
    apps = env.settings.chat_apps
    token = await dingtalk_app.access_token(env)
    if isinstance(token, Attempt):
        raise unreachable(NAME, "accessToken", token)
    url = f"{apps.dingtalk_oapi_url}{path}?{urlencode({'access_token': token})}"
    attempt = await post(env, url, dumps(body).encode(), {},
                         content_type="application/json; charset=utf-8",
                         endpoint=f"{apps.dingtalk_oapi_url}{path}")
    answer = answer_of(attempt)
    code = str(answer.get("errcode", ""))
    if code == "0" and attempt.ok:
        return answer
    if code in TOKEN_REFUSED and not fresh:
        dingtalk_app.forget_token(env)
        return await call(env, path, body, fresh=True)
    if not code:
        raise unreachable(NAME, path.rsplit("/", 1)[-1], attempt)
    raise PlatformError(NAME, f"errcode {code}: {answer.get('errmsg', '')}",
                        refused=attempt.status_code < 500)


def _conversation_id(result: Any) -> str:
    if isinstance(result, dict):
        return str(result.get("open_conversation_id", ""))
    return str(result or "")


class DingTalk:
    name = NAME

    async def open(self, env: SendEnv, *, name: str, topic: str,
                   handles: Sequence[str]) -> Room:
        people = list(dict.fromkeys(handles))
        if not people:
            raise PlatformError(NAME, "a scene group needs an owner: the caller or one of the "
                                      "people invited must have a DingTalk handle (im.dingtalk)")
        title = name[:MAX_TITLE]
        made = await call(env, "/topapi/im/chat/scenegroup/create", {
            "title": title,
            "template_id": env.settings.chat_apps.dingtalk_scene_group_template_id,
            "owner_user_id": people[0], "user_ids": ",".join(people[:BATCH]),
            "uuid": hex_id()})
        chat_id = _conversation_id(made.get("result"))
        if not chat_id:
            raise PlatformError(NAME, "scenegroup/create: no open_conversation_id in the answer")
        await self._add(env, chat_id, people[BATCH:])
        return Room(chat_id, title)

    async def _add(self, env: SendEnv, chat_id: str, people: Sequence[str]) -> None:
        for start in range(0, len(people), BATCH):
            await call(env, "/topapi/im/chat/scenegroup/member/add", {
                "open_conversation_id": chat_id,
                "user_ids": ",".join(people[start:start + BATCH])})

    async def invite(self, env: SendEnv, chat_id: str, handles: Sequence[str]) -> None:
        await self._add(env, chat_id, list(dict.fromkeys(handles)))

    async def post(self, env: SendEnv, chat_id: str, text: str) -> None:
        sent = await dingtalk_app.send_group(env, Outgoing(
            delivery_id=hex_id(), channel="dingtalk_app", address=chat_id,
            content={"text": text}, attempt=1))
        if not sent.ok:
            raise PlatformError(NAME, f"groupMessages/send: {sent.error}",
                                refused=not sent.retryable)

    async def look(self, env: SendEnv, chat_id: str) -> Room | None:
        found = await call(env, "/topapi/im/chat/scenegroup/get",
                           {"open_conversation_id": chat_id})
        result = found.get("result")
        title = result.get("title", "") if isinstance(result, dict) else ""
        return Room(chat_id, str(title))

    async def close(self, env: SendEnv, chat_id: str) -> None:
        """DingTalk's API dissolves no scene group: the group stays (see the module)."""
