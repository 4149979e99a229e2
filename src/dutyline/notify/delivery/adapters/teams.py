"""Microsoft Teams incoming webhooks (Workflows): one Adaptive Card with the text."""

from __future__ import annotations

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, dumps, post_json

MAX_TEXT = 28_000


def card(text: str) -> dict[str, object]:
    return {"type": "message", "attachments": [{
        "contentType": "application/vnd.microsoft.card.adaptive",
        "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard", "version": "1.4",
                    "body": [{"type": "TextBlock", "text": text, "wrap": True}]}}]}


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    body = card(str(out.content["text"])[:MAX_TEXT])
    return await post_json(env, str(out.content["url"]), dumps(body).encode(), {})
