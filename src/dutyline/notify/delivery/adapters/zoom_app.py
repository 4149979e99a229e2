"""Zoom Team Chat to one person through the server's chatbot app (DUTYLINE_ZOOM_CLIENT_ID,
_CLIENT_SECRET, _BOT_JID and _ACCOUNT_ID):

1. `POST {oauth}/oauth/token?grant_type=client_credentials` with HTTP basic auth
   (client id, client secret) -> `{"access_token", "token_type": "bearer",
   "expires_in": 3600}` (cached);
2. `POST {api}/v2/im/chat/messages` with `Authorization: Bearer …` and `{"robot_jid",
   "to_jid": <the person's JID>, "account_id", "content": {"head": {"text"}, "body":
   [{"type": "message", "text"}]}}` -> `{"message_id"}`.

The person's handle (`im.zoom`) is their Zoom JID (`…@xmpp.zoom.us`). Group chats in Zoom
are the incoming-webhook `zoom` target."""

from __future__ import annotations

import base64

from dutyline.notify.delivery.adapters import app_tokens, zoom
from dutyline.notify.delivery.adapters.base import (
    Attempt,
    Outgoing,
    SendEnv,
    dumps,
    post,
    response_field,
)


def _key(env: SendEnv) -> str:
    apps = env.settings.chat_apps
    return app_tokens.cache_key("zoom", apps.zoom_oauth_url, apps.zoom_client_id or "",
                                apps.zoom_client_secret or "")


async def _fetch_token(env: SendEnv) -> str | Attempt:
    apps = env.settings.chat_apps
    url = f"{apps.zoom_oauth_url}/oauth/token?grant_type=client_credentials"
    pair = f"{apps.zoom_client_id}:{apps.zoom_client_secret}".encode()

    async def fetch() -> Attempt:
        return await post(env, url, b"",
                          {"Authorization": "Basic " + base64.b64encode(pair).decode()},
                          content_type="application/x-www-form-urlencoded")

    return await app_tokens.token(env, _key(env), fetch, token_path=("access_token",),
                                  ttl_path=("expires_in",))


async def send_personal(env: SendEnv, out: Outgoing) -> Attempt:
    apps = env.settings.chat_apps
    url = f"{apps.zoom_api_url}/v2/im/chat/messages"
    if not (apps.zoom_client_id and apps.zoom_client_secret and apps.zoom_bot_jid
            and apps.zoom_account_id):
        return Attempt(ok=False, retryable=False, endpoint=url, error=(
            "zoom needs DUTYLINE_ZOOM_CLIENT_ID, DUTYLINE_ZOOM_CLIENT_SECRET, "
            "DUTYLINE_ZOOM_BOT_JID and DUTYLINE_ZOOM_ACCOUNT_ID"))
    if not out.address:
        return Attempt(ok=False, retryable=False, endpoint=url,
                       error="the recipient has no Zoom JID (im.zoom)")
    token = await _fetch_token(env)
    if isinstance(token, Attempt):
        return token
    body = {"robot_jid": apps.zoom_bot_jid, "to_jid": out.address,
            "account_id": apps.zoom_account_id,
            **zoom.message(str(out.content.get("text", "")))}
    attempt = await post(env, url, dumps(body).encode(), {"Authorization": f"Bearer {token}"})
    if attempt.status_code == 401:
        app_tokens.forget(_key(env))  # expired early or revoked: a fresh one next time
        attempt.retryable = True
    if attempt.ok:
        attempt.message_id = response_field(attempt, "message_id")
    return attempt
