"""Slack incoming webhooks: `{"text": ...}` (mrkdwn), at most 15,000 characters."""

from __future__ import annotations

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, dumps, post_json

MAX_TEXT = 15_000


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    text = str(out.content["text"])[:MAX_TEXT]
    return await post_json(env, str(out.content["url"]), dumps({"text": text}).encode(), {})
