"""Outgoing webhooks: the incident webhook payload (event_time in ms, event_type, event_id,
incident), signed with HMAC-SHA256 over the exact body when the webhook has a secret.

Headers: `X-Dutyline-Signature: sha256=<hex>` (the secret is the key, the raw body the
message), `Idempotency-Key` and `X-Dutyline-Event-Id` (the same on every attempt of one
delivery: a receiver drops the repeats)."""

from __future__ import annotations

import hashlib
import hmac

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, post_json

SIGNATURE_HEADER = "X-Dutyline-Signature"


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    body = str(out.content["body"]).encode("utf-8")
    headers = {"Idempotency-Key": out.delivery_id, "X-Dutyline-Event-Id": out.delivery_id,
               "User-Agent": "dutyline-webhook/1"}
    sealed = out.content.get("secret")
    if sealed:
        headers[SIGNATURE_HEADER] = signature(env.secrets.open(str(sealed)), body)
    return await post_json(env, str(out.content["url"]), body, headers)
