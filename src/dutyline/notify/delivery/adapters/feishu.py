"""Feishu / Lark custom bots: `{"msg_type": "text", "content": {"text": ...}}`, signed when
the bot has a signing secret: `sign` = base64(HMAC-SHA256(key = "<timestamp>\\n<secret>",
message = empty)), with the timestamp in seconds (the platform's documented scheme)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, dumps, post_json

MAX_BYTES = 4_000


def sign(secret: str, timestamp: int) -> str:
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    text = str(out.content["text"]).encode("utf-8")[:MAX_BYTES].decode("utf-8", "ignore")
    body: dict[str, Any] = {"msg_type": "text", "content": {"text": text}}
    sealed = out.content.get("sign_secret") or out.content.get("secret")
    if sealed:
        timestamp = int(env.clock.now())
        body = {"timestamp": str(timestamp), "sign": sign(env.secrets.open(str(sealed)),
                                                           timestamp), **body}
    return await post_json(env, str(out.content["url"]), dumps(body).encode(), {})
