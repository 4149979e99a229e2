"""Slack through the server's app (bot token, DUTYLINE_SLACK_BOT_TOKEN):
`POST {api}/chat.postMessage` with `Authorization: Bearer xoxb-…` and
`{"channel": <id>, "text": …}` (JSON, UTF-8).

A person is reached at their Slack member id (`im.slack`, `U…`): the message arrives in the
app's direct-message conversation with them. A `slack_app` target of a layer names channel
ids in `chat_ids` (the app must be a member of each). Slack answers HTTP 200 with
`{"ok": false, "error": …}` for most failures; its `ts` is the message id."""

from __future__ import annotations

from dutyline.notify.delivery.adapters.base import (
    Attempt,
    Outgoing,
    SendEnv,
    dumps,
    post,
    response_field,
)

MAX_TEXT = 15_000
# Errors Slack documents as passing: trying again later can help.
RETRYABLE = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable",
                       "request_timeout", "team_added_to_org"})


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    apps = env.settings.chat_apps
    url = f"{apps.slack_api_url}/chat.postMessage"
    if not apps.slack_bot_token:
        return Attempt(ok=False, retryable=False, endpoint=url,
                       error="slack needs a bot token (DUTYLINE_SLACK_BOT_TOKEN)")
    if not out.address:
        return Attempt(ok=False, retryable=False, endpoint=url,
                       error="the recipient has no Slack member id (im.slack)")
    body = {"channel": out.address, "text": str(out.content.get("text", ""))[:MAX_TEXT]}
    attempt = await post(env, url, dumps(body).encode(),
                         {"Authorization": f"Bearer {apps.slack_bot_token}"},
                         content_type="application/json; charset=utf-8")
    if attempt.ok and response_field(attempt, "ok") != "True":
        error = response_field(attempt, "error") or "no ok in the answer"
        attempt.ok, attempt.error = False, f"slack: {error}"
        attempt.retryable = error in RETRYABLE
    if attempt.ok:
        attempt.message_id = response_field(attempt, "ts")
    return attempt
