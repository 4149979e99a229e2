"""Telegram through the bot API: `POST {base}/bot<token>/sendMessage` with
`{"chat_id": ..., "text": ...}` (at most 4,096 characters), answered by
`{"ok": true, "result": {"message_id": ...}}`.

A person is reached with the server's bot (DUTYLINE_TELEGRAM_BOT_TOKEN) at their own chat id
(their `im.telegram` handle); a group target of a layer names its own bot `token` (sealed at
rest), its `chat_id`, and the API base in `url`. The token is part of the URL path, so the
history shows the path with the token masked.

The server's bot token is the operator's credential: it only ever goes to the operator's API
base (DUTYLINE_TELEGRAM_API_URL). A target's own `url` is used with the target's own token
only; a target without a token is posted by the server's bot at the operator's API base."""

from __future__ import annotations

from typing import Any

from dutyline.notify.delivery.adapters.base import (
    Attempt,
    Outgoing,
    SendEnv,
    dumps,
    post,
    response_field,
)

MAX_TEXT = 4_096


def _chat_id(value: Any) -> int | str:
    text = str(value).strip()
    # Numeric ids are sent as numbers, `@channelusername` as text (both are accepted).
    return int(text) if text.lstrip("-").isdigit() else text


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    c = out.content
    sealed = c.get("token")
    if sealed:
        token = env.secrets.open(str(sealed))
        base = str(c.get("url") or env.settings.telegram_api_url).rstrip("/")
    else:
        token = env.settings.telegram_bot_token or ""
        base = env.settings.telegram_api_url.rstrip("/")
    chat = c.get("chat_id") or out.address
    if not token or not chat:
        missing = "a bot token (DUTYLINE_TELEGRAM_BOT_TOKEN)" if not token else "a chat id"
        return Attempt(ok=False, retryable=False, error=f"telegram needs {missing}",
                       endpoint=f"{base}/bot******/sendMessage")
    body = {"chat_id": _chat_id(chat), "text": str(c.get("text", ""))[:MAX_TEXT]}
    attempt = await post(env, f"{base}/bot{token}/sendMessage", dumps(body).encode(), {},
                         endpoint=f"{base}/bot******/sendMessage")
    # An error text that quotes the URL must not carry the token either.
    attempt.error = attempt.error.replace(token, "******")
    if attempt.ok:
        attempt.message_id = response_field(attempt, "result", "message_id")
    return attempt
