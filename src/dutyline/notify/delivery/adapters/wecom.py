"""WeCom (WeChat Work) group robots: `{"msgtype": "text", "text": {"content": ...}}`."""

from __future__ import annotations

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, dumps, post_json

MAX_BYTES = 4_000


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    text = str(out.content["text"]).encode("utf-8")[:MAX_BYTES].decode("utf-8", "ignore")
    body = {"msgtype": "text", "text": {"content": text}}
    return await post_json(env, str(out.content["url"]), dumps(body).encode(), {})
