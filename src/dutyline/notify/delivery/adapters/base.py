"""The one interface every delivery channel implements.

An adapter gets what to send (`Outgoing`: the address and the content composed when the
notification was made) and the process's means (`SendEnv`), makes ONE attempt, and answers
with an `Attempt`: the outcome and what went over the wire, for the history. Retries, backoff
and bookkeeping are the delivery job's, so a new channel is one small module: a `send`
function registered in adapters/__init__.py."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from dutyline.config import Settings
from dutyline.kit import outbound
from dutyline.kit.clock import Clock
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox

HTTP_TIMEOUT_S = 10.0
RESPONSE_BODY_MAX = 4096


@dataclass(frozen=True)
class SendEnv:
    settings: Settings
    policy: OutboundPolicy
    secrets: SecretBox
    clock: Clock
    # Tests and the bench may hand in a transport; URLs are still checked by the guard.
    transport: httpx.AsyncBaseTransport | None = None
    # The process's kept client (connections reused across deliveries); else one per call.
    client: httpx.AsyncClient | None = None


@dataclass(frozen=True)
class Outgoing:
    delivery_id: str  # also the idempotency key: the same on every attempt
    channel: str
    address: str
    content: dict[str, Any]
    attempt: int


@dataclass
class Attempt:
    ok: bool
    # False when trying again cannot help (bad configuration, a refused address).
    retryable: bool = True
    status_code: int = 0
    error: str = ""
    endpoint: str = ""
    request_headers: dict[str, str] = field(default_factory=dict)
    request_body: str = ""
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: str = ""
    duration_ms: int = 0
    message_id: str = ""


Send = Callable[[SendEnv, Outgoing], Awaitable[Attempt]]


def dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def response_field(attempt: Attempt, *path: str) -> str:
    """A value of the JSON answer (an upstream message id), or "" when it is not there."""
    try:
        value: Any = msgspec.json.decode(attempt.response_body)
        for key in path:
            value = value[key]
    except (msgspec.DecodeError, KeyError, TypeError, IndexError):
        return ""
    return "" if value is None else str(value)


def client_for(env: SendEnv) -> httpx.AsyncClient:
    """A guarded client as every delivery uses it: no retries of its own (the delivery job
    retries with backoff), redirects followed through the guard."""
    # No bound on connections: receivers that hang must not hold every connection while
    # the deliveries to the others wait for one. Nor on those kept for reuse: a burst sends
    # a batch's POSTs to one receiver side by side, and a bound would close and reopen most
    # of them each time. What bounds both is the worker's slots times a delivery batch.
    return outbound.guarded_client(env.policy.without_retries(), timeout=HTTP_TIMEOUT_S,
                                   transport=env.transport, follow_redirects=True,
                                   max_connections=None, max_keepalive=None)


async def post_json(env: SendEnv, url: str, body: bytes,
                    headers: dict[str, str]) -> Attempt:
    """One guarded POST of a JSON body; 2xx is success. Redirects are followed through the
    same guard, so a hop to a private address is refused like a first request would be."""
    return await post(env, url, body, headers)


async def post(env: SendEnv, url: str, body: bytes, headers: dict[str, str], *,
               content_type: str = "application/json", endpoint: str = "") -> Attempt:
    """`post_json` for any body type; `endpoint` names the URL in the history when the URL
    itself carries a secret (a bot token in its path)."""
    return await request(env, "POST", url, body, {"Content-Type": content_type, **headers},
                         endpoint=endpoint)


async def request(env: SendEnv, method: str, url: str, body: bytes, headers: dict[str, str],
                  *, endpoint: str = "") -> Attempt:
    """One guarded request of any method (a chat app's token is fetched by GET on WeCom)."""
    sent_headers = dict(headers)
    attempt = Attempt(ok=False, endpoint=endpoint or outbound.redact_url(url),
                      request_headers=outbound.redact_headers(sent_headers),
                      request_body=body.decode("utf-8", "replace"))
    started = time.monotonic()
    try:
        # The kept client stays open for the next delivery; one made here closes after it.
        async with (nullcontext(env.client) if env.client is not None
                    else client_for(env)) as client:
            response = await client.request(method, url, content=body or None,
                                            headers=sent_headers)
    except outbound.OutboundBlocked as exc:
        attempt.error, attempt.retryable = f"refused by the outbound guard: {exc.reason}", False
    except httpx.HTTPError as exc:
        attempt.error = f"{type(exc).__name__}: {exc}"[:500]
    else:
        attempt.status_code = response.status_code
        attempt.response_headers = dict(response.headers)
        attempt.response_body = response.text[:RESPONSE_BODY_MAX]
        attempt.ok = 200 <= response.status_code < 300
        if not attempt.ok:
            attempt.error = f"HTTP {response.status_code}"
            # A client error other than throttling will not heal by itself.
            attempt.retryable = response.status_code >= 500 or response.status_code in (
                408, 429) or 300 <= response.status_code < 400
    attempt.duration_ms = int((time.monotonic() - started) * 1000)
    return attempt
