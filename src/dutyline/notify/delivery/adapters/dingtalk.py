"""DingTalk custom robots: `{"msgtype": "text", "text": {"content": ...}}`; with a signing
secret the URL carries `timestamp` (ms) and `sign` = base64(HMAC-SHA256(key = secret,
message = "<timestamp>\\n<secret>")), URL-encoded (the platform's documented scheme)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import quote

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, dumps, post_json

MAX_BYTES = 4_000


def sign(secret: str, timestamp_ms: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode()


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    text = str(out.content["text"]).encode("utf-8")[:MAX_BYTES].decode("utf-8", "ignore")
    url = str(out.content["url"])
    sealed = out.content.get("sign_secret") or out.content.get("secret")
    if sealed:
        timestamp = int(env.clock.now() * 1000)
        signature = quote(sign(env.secrets.open(str(sealed)), timestamp), safe="")
        url += f"{'&' if '?' in url else '?'}timestamp={timestamp}&sign={signature}"
    body = {"msgtype": "text", "text": {"content": text}}
    return await post_json(env, url, dumps(body).encode(), {})
