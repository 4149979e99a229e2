"""DingTalk through the server's internal app and its robot (DUTYLINE_DINGTALK_APP_KEY,
_APP_SECRET, and _ROBOT_CODE, which defaults to the app key):

1. `POST {api}/v1.0/oauth2/accessToken` with `{"appKey", "appSecret"}` ->
   `{"accessToken", "expireIn": 7200}` (cached);
2. a person: `POST {api}/v1.0/robot/oToMessages/batchSend` with
   `{"robotCode", "userIds": [<userId>], "msgKey": "sampleText", "msgParam":
   "{\\"content\\": …}"}` -> `{"processQueryKey", "invalidStaffIdList",
   "flowControlledStaffIdList"}`;
   a group (`dingtalk_app` target, `chat_ids` = openConversationIds):
   `POST {api}/v1.0/robot/groupMessages/send` with `{"robotCode", "openConversationId",
   "msgKey", "msgParam"}` -> `{"processQueryKey"}`;

both with the token in `x-acs-dingtalk-access-token`. `msgParam` is a JSON *string*. A user
DingTalk does not know comes back in `invalidStaffIdList` (failed, for good); one throttled in
`flowControlledStaffIdList` (retried). The processQueryKey is the message id."""

from __future__ import annotations

from typing import Any

import msgspec

from dutyline.notify.delivery.adapters import app_tokens
from dutyline.notify.delivery.adapters.base import (
    Attempt,
    Outgoing,
    SendEnv,
    dumps,
    post,
    response_field,
)

MAX_BYTES = 4_000
TOKEN_HEADER = "x-acs-dingtalk-access-token"


def _key(env: SendEnv) -> str:
    apps = env.settings.chat_apps
    return app_tokens.cache_key("dingtalk", apps.dingtalk_api_url, apps.dingtalk_app_key or "",
                                apps.dingtalk_app_secret or "")


async def _fetch_token(env: SendEnv) -> str | Attempt:
    apps = env.settings.chat_apps
    url = f"{apps.dingtalk_api_url}/v1.0/oauth2/accessToken"

    async def fetch() -> Attempt:
        body = {"appKey": apps.dingtalk_app_key, "appSecret": apps.dingtalk_app_secret}
        return await post(env, url, dumps(body).encode(), {})

    return await app_tokens.token(env, _key(env), fetch, token_path=("accessToken",),
                                  ttl_path=("expireIn",))


def _listed(attempt: Attempt, field: str) -> list[Any]:
    try:
        value = msgspec.json.decode(attempt.response_body).get(field) or []
    except (msgspec.DecodeError, AttributeError):
        return []
    return list(value) if isinstance(value, list) else []


async def _send(env: SendEnv, out: Outgoing, *, group: bool) -> Attempt:
    apps = env.settings.chat_apps
    path = "groupMessages/send" if group else "oToMessages/batchSend"
    url = f"{apps.dingtalk_api_url}/v1.0/robot/{path}"
    if not (apps.dingtalk_app_key and apps.dingtalk_app_secret):
        return Attempt(ok=False, retryable=False, endpoint=url, error=(
            "dingtalk_app needs DUTYLINE_DINGTALK_APP_KEY and DUTYLINE_DINGTALK_APP_SECRET"))
    if not out.address:
        return Attempt(ok=False, retryable=False, endpoint=url,
                       error="the recipient has no DingTalk user id (im.dingtalk)")
    token = await _fetch_token(env)
    if isinstance(token, Attempt):
        return token
    text = str(out.content.get("text", "")).encode("utf-8")[:MAX_BYTES].decode("utf-8", "ignore")
    body: dict[str, Any] = {"robotCode": apps.dingtalk_robot_code or apps.dingtalk_app_key,
                            "msgKey": "sampleText", "msgParam": dumps({"content": text})}
    if group:
        body["openConversationId"] = out.address
    else:
        body["userIds"] = [out.address]
    attempt = await post(env, url, dumps(body).encode(), {TOKEN_HEADER: token})
    if attempt.status_code == 401:
        app_tokens.forget(_key(env))  # revoked or expired early: a fresh one next time
        attempt.retryable = True
    if not attempt.ok:
        code = response_field(attempt, "code")
        if code:
            attempt.error = f"dingtalk: {code}: {response_field(attempt, 'message')}"[:500]
        return attempt
    if out.address in _listed(attempt, "invalidStaffIdList"):
        attempt.ok, attempt.retryable = False, False
        attempt.error = f"dingtalk: unknown user id {out.address}"
    elif out.address in _listed(attempt, "flowControlledStaffIdList"):
        attempt.ok, attempt.error = False, "dingtalk: throttled (flow control)"
    else:
        attempt.message_id = response_field(attempt, "processQueryKey")
    return attempt


async def send_personal(env: SendEnv, out: Outgoing) -> Attempt:
    return await _send(env, out, group=False)


async def send_group(env: SendEnv, out: Outgoing) -> Attempt:
    return await _send(env, out, group=True)


async def access_token(env: SendEnv) -> str | Attempt:
    """The app's accessToken (cached), for the other DingTalk calls the server makes (war
    rooms: DingTalk takes it on its server API, oapi, too); a failed fetch answers its
    Attempt."""
    return await _fetch_token(env)


def forget_token(env: SendEnv) -> None:
    app_tokens.forget(_key(env))
