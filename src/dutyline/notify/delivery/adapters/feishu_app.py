"""Feishu / Lark through the server's custom app (DUTYLINE_FEISHU_APP_ID and _APP_SECRET):

1. `POST {api}/open-apis/auth/v3/tenant_access_token/internal` with `{"app_id",
   "app_secret"}` -> `{"code": 0, "tenant_access_token": "t-…", "expire": 7200}` (cached);
2. `POST {api}/open-apis/im/v1/messages?receive_id_type=<type>` with
   `Authorization: Bearer t-…` and `{"receive_id", "msg_type": "text", "content":
   "{\\"text\\": …}", "uuid": <delivery id>}` -> `{"code": 0, "data": {"message_id": "om_…"}}`.

`content` is a JSON *string* (the platform's format) and `uuid` makes Feishu drop a repeat of
the same delivery within an hour. A person's handle (`im.feishu`) is an open_id (`ou_…`), a
union_id (`on_…`), an e-mail address, or else a user_id; a `feishu_app` target's
`chat_ids` are group chat ids (`oc_…`)."""

from __future__ import annotations

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
# Codes of a tenant_access_token that is invalid or expired: fetch a new one and retry.
TOKEN_REFUSED = frozenset({"99991661", "99991663", "99991664", "99991668"})
# Rate limited, or a passing server error.
RETRYABLE = frozenset({"99991400", "230020", "1000004", "1000005"})


def receive_id_type(handle: str, *, group: bool) -> str:
    if group or handle.startswith("oc_"):
        return "chat_id"
    if handle.startswith("ou_"):
        return "open_id"
    if handle.startswith("on_"):
        return "union_id"
    return "email" if "@" in handle else "user_id"


def _key(env: SendEnv) -> str:
    apps = env.settings.chat_apps
    return app_tokens.cache_key("feishu", apps.feishu_api_url, apps.feishu_app_id or "",
                                apps.feishu_app_secret or "")


async def _fetch_token(env: SendEnv) -> str | Attempt:
    apps = env.settings.chat_apps
    url = f"{apps.feishu_api_url}/open-apis/auth/v3/tenant_access_token/internal"

    async def fetch() -> Attempt:
        body = dumps({"app_id": apps.feishu_app_id, "app_secret": apps.feishu_app_secret})
        return await post(env, url, body.encode(), {},
                          content_type="application/json; charset=utf-8")

    return await app_tokens.token(env, _key(env), fetch, token_path=("tenant_access_token",),
                                  ttl_path=("expire",))


async def _send(env: SendEnv, out: Outgoing, *, group: bool) -> Attempt:
    apps = env.settings.chat_apps
    kind = receive_id_type(out.address, group=group)
    url = f"{apps.feishu_api_url}/open-apis/im/v1/messages?receive_id_type={kind}"
    if not (apps.feishu_app_id and apps.feishu_app_secret):
        return Attempt(ok=False, retryable=False, endpoint=url, error=(
            "feishu_app needs DUTYLINE_FEISHU_APP_ID and DUTYLINE_FEISHU_APP_SECRET"))
    if not out.address:
        return Attempt(ok=False, retryable=False, endpoint=url,
                       error="the recipient has no Feishu id (im.feishu)")
    token = await _fetch_token(env)
    if isinstance(token, Attempt):
        return token
    text = str(out.content.get("text", "")).encode("utf-8")[:MAX_BYTES].decode("utf-8", "ignore")
    body = {"receive_id": out.address, "msg_type": "text",
            "content": dumps({"text": text}), "uuid": out.delivery_id}
    attempt = await post(env, url, dumps(body).encode(), {"Authorization": f"Bearer {token}"},
                         content_type="application/json; charset=utf-8")
    code = response_field(attempt, "code")
    if code == "0" and attempt.ok:
        attempt.message_id = response_field(attempt, "data", "message_id")
        return attempt
    attempt.ok = False
    if not code and not attempt.error:
        attempt.error, attempt.retryable = "feishu: no code in the answer", False
    if code:
        attempt.error = f"feishu: code {code}: {response_field(attempt, 'msg')}"[:500]
        attempt.retryable = code in TOKEN_REFUSED or code in RETRYABLE or (
            attempt.status_code >= 500)
    if code in TOKEN_REFUSED:
        app_tokens.forget(_key(env))  # revoked or expired early: a fresh one next time
    return attempt


async def send_personal(env: SendEnv, out: Outgoing) -> Attempt:
    return await _send(env, out, group=False)


async def send_group(env: SendEnv, out: Outgoing) -> Attempt:
    return await _send(env, out, group=True)


async def tenant_token(env: SendEnv) -> str | Attempt:
    """The app's tenant_access_token (cached), for the other Feishu calls the server makes
    (war rooms); a failed fetch answers its Attempt."""
    return await _fetch_token(env)


def forget_token(env: SendEnv) -> None:
    """Drop the cached token after Feishu refused it (TOKEN_REFUSED)."""
    app_tokens.forget(_key(env))
