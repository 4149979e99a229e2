"""War rooms on Feishu / Lark through the server's custom app (tenant_access_token, fetched and
cached as for its messages: notify/delivery/adapters/feishu_app.py):

- `POST /open-apis/im/v1/chats?user_id_type=open_id&set_bot_manager=true` `{"name",
  "description", "chat_mode": "group", "chat_type": "private", "user_id_list"}` ->
  `{"code": 0, "data": {"chat_id": "oc_…", "name"}}`; the app's bot owns the chat;
- `POST /open-apis/im/v1/chats/:chat_id/members?member_id_type=<type>` `{"id_list"}`: members
  whose handle is of another kind (union_id, user_id), and later additions;
- `POST /open-apis/im/v1/chats/:chat_id/link` `{"validity_period": "permanently"}` ->
  `data.share_link`, the join link;
- `POST /open-apis/im/v1/messages?receive_id_type=chat_id`: the incident and its link;
- `GET /open-apis/im/v1/chats/:chat_id` -> `data.name`, or code 232006 (no such chat);
- `DELETE /open-apis/im/v1/chats/:chat_id`: undo a room whose set-up failed.

All with `Authorization: Bearer t-…`; Feishu answers `{"code": <non-zero>, "msg"}` when it
refuses, which is the reason given. A handle that is an e-mail address names no chat member
(`im.feishu` must then be an open_id, union_id or user_id): such people are left out."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

from dutyline.notify.delivery.adapters import feishu_app
from dutyline.notify.delivery.adapters.base import Attempt, SendEnv, dumps, request
from dutyline.notify.war_room.platform import PlatformError, Room, answer_of, unreachable

NAME = "Feishu"
MAX_NAME = 60
MAX_DESCRIPTION = 100
BATCH = 50  # ids per create or add-members call (Feishu's limit)
GONE = frozenset({"232006"})  # the chat_id names no chat (disbanded)
MEMBER_KINDS = ("open_id", "union_id", "user_id")


def by_kind(handles: Sequence[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {k: [] for k in MEMBER_KINDS}
    for handle in dict.fromkeys(handles):
        kind = feishu_app.receive_id_type(handle, group=False)
        if kind in grouped:
            grouped[kind].append(handle)
    return grouped


async def call(env: SendEnv, method: str, path: str, *, query: dict[str, str] | None = None,
               body: dict[str, Any] | None = None, fresh: bool = False) -> dict[str, Any]:
    apps = env.settings.chat_apps
    token = await feishu_app.tenant_token(env)
    if isinstance(token, Attempt):
        raise unreachable(NAME, "tenant_access_token", token)
    url = f"{apps.feishu_api_url}{path}" + (f"?{urlencode(query)}" if query else "")
    payload = dumps(body).encode() if body is not None else b""
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json; charset=utf-8"
    attempt = await request(env, method, url, payload, headers)
    answer = answer_of(attempt)
    code = str(answer.get("code", ""))
    if code == "0" and attempt.ok:
        data = answer.get("data")
        return data if isinstance(data, dict) else {}
    if code in feishu_app.TOKEN_REFUSED and not fresh:
        feishu_app.forget_token(env)  # expired early: once more with a new one
        return await call(env, method, path, query=query, body=body, fresh=True)
    if not code:
        raise unreachable(NAME, f"{method} {path}", attempt)
    raise PlatformError(NAME, f"code {code}: {answer.get('msg', '')}",
                        refused=attempt.status_code < 500)


def _chat_path(chat_id: str, tail: str = "") -> str:
    return f"/open-apis/im/v1/chats/{quote(chat_id, safe='')}{tail}"


class Feishu:
    name = NAME

    async def open(self, env: SendEnv, *, name: str, topic: str,
                   handles: Sequence[str]) -> Room:
        grouped = by_kind(handles)
        first, grouped["open_id"] = grouped["open_id"][:BATCH], grouped["open_id"][BATCH:]
        body: dict[str, Any] = {"name": name[:MAX_NAME], "description": topic[:MAX_DESCRIPTION],
                                "chat_mode": "group", "chat_type": "private"}
        if first:
            body["user_id_list"] = first
        made = await call(env, "POST", "/open-apis/im/v1/chats",
                          query={"user_id_type": "open_id", "set_bot_manager": "true"},
                          body=body)
        chat_id = str(made.get("chat_id", ""))
        if not chat_id:
            raise PlatformError(NAME, "create chat: no chat_id in the answer")
        try:
            await self._add(env, chat_id, grouped)
            shared = await call(env, "POST", _chat_path(chat_id, "/link"),
                                body={"validity_period": "permanently"})
        except PlatformError:
            await self.close(env, chat_id)
            raise
        return Room(chat_id, str(made.get("name") or name[:MAX_NAME]),
                    str(shared.get("share_link", "")))

    async def _add(self, env: SendEnv, chat_id: str, grouped: dict[str, list[str]]) -> None:
        for kind, ids in grouped.items():
            for start in range(0, len(ids), BATCH):
                await call(env, "POST", _chat_path(chat_id, "/members"),
                           query={"member_id_type": kind},
                           body={"id_list": ids[start:start + BATCH]})

    async def invite(self, env: SendEnv, chat_id: str, handles: Sequence[str]) -> None:
        await self._add(env, chat_id, by_kind(handles))

    async def post(self, env: SendEnv, chat_id: str, text: str) -> None:
        await call(env, "POST", "/open-apis/im/v1/messages", query={"receive_id_type": "chat_id"},
                   body={"receive_id": chat_id, "msg_type": "text",
                         "content": dumps({"text": text})})

    async def look(self, env: SendEnv, chat_id: str) -> Room | None:
        try:
            found = await call(env, "GET", _chat_path(chat_id))
        except PlatformError as exc:
            if exc.reason.startswith("code ") and exc.reason[5:].split(":")[0] in GONE:
                return None
            raise
        return Room(chat_id, str(found.get("name", "")))

    async def close(self, env: SendEnv, chat_id: str) -> None:
        # Best effort: the error the caller reports is the one that stopped the set-up.
        with contextlib.suppress(PlatformError):
            await call(env, "DELETE", _chat_path(chat_id))
