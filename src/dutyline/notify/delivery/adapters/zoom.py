"""Zoom Team Chat through its Incoming Webhook app: `POST <endpoint>?format=full` with the
connection's verification token in `Authorization` and a message of the full format,
`{"content": {"head": {"text": ...}, "body": [{"type": "message", "text": ...}]}}`.

The layer's target gives the endpoint as `url` and the verification token as `token`
(sealed at rest, write-only)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, dumps, post

MAX_TEXT = 4_000
HEAD_MAX = 200


def full_format_url(url: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "format"]
    query.append(("format", "full"))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


def message(text: str) -> dict[str, object]:
    head, _, rest = text.strip().partition("\n")
    return {"content": {"head": {"text": head[:HEAD_MAX]},
                        "body": [{"type": "message", "text": (rest.strip() or head)[:MAX_TEXT]}]}}


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    headers: dict[str, str] = {}
    sealed = out.content.get("token")
    if sealed:
        headers["Authorization"] = env.secrets.open(str(sealed))
    body = dumps(message(str(out.content.get("text", "")))).encode()
    return await post(env, full_format_url(str(out.content["url"])), body, headers)
