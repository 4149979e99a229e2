"""The one interface every delivery channel implements.

An adapter gets what to send (`Outgoing`: the address and the content composed when the
notification was made) and the process's means (`SendEnv`), makes ONE attempt, and answers
with an `Attempt`: the outcome and what went over the wire, for the history. Retries, backoff
and bookkeeping are the delivery job's, so a new channel is one small module: a `send`
function, and a line in the means of adapters/__init__.py."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import msgspec

from dutyline.config import Settings
from dutyline.kit import outbound, outbound_aio
from dutyline.kit.clock import Clock
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox

HTTP_TIMEOUT_S = 10.0
# The longest one attempt may take, whatever the channel: an app's token fetch and its
# message (HTTP_TIMEOUT_S each), or an SMTP session. The delivery job cuts an attempt off
# there and holds its job's lease at least that long, so no other worker takes a delivery
# whose send is still waiting for an answer.
ATTEMPT_TIMEOUT_S = 3 * HTTP_TIMEOUT_S
RESPONSE_BODY_MAX = 4096
# Bytes read of an answer: the kept characters, in a multi-byte encoding at worst.
RESPONSE_READ_MAX = 4 * RESPONSE_BODY_MAX


@dataclass(frozen=True)
class SendEnv:
    settings: Settings
    policy: OutboundPolicy
    secrets: SecretBox
    clock: Clock
    # The process's kept session (connections reused across deliveries); else one per call.
    session: aiohttp.ClientSession | None = None


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


def session_for(env: SendEnv) -> aiohttp.ClientSession:
    """A guarded session as every delivery uses it: no retries of its own (the delivery job
    retries with backoff), redirects followed through the guard, no bound on connections
    (receivers that hang must not hold every connection while the deliveries to the others
    wait for one; what bounds them is the worker's slots times a delivery batch)."""
    return outbound_aio.guarded_session(env.policy, timeout_s=HTTP_TIMEOUT_S)


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


async def _head_of_body(response: aiohttp.ClientResponse) -> bytes:
    """The answer's first RESPONSE_READ_MAX bytes: no more than the history keeps, so a
    receiver answering with gigabytes costs nothing (its connection is dropped, not reused)."""
    chunks: list[bytes] = []
    size = 0
    while size < RESPONSE_READ_MAX:
        chunk = await response.content.read(RESPONSE_READ_MAX - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _text(raw: bytes, charset: str | None) -> str:
    try:
        return raw.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return raw.decode("utf-8", "replace")


async def request(env: SendEnv, method: str, url: str, body: bytes, headers: dict[str, str],
                  *, endpoint: str = "") -> Attempt:
    """One guarded request of any method (a chat app's token is fetched by GET on WeCom)."""
    sent_headers = dict(headers)
    attempt = Attempt(ok=False, endpoint=endpoint or outbound.redact_url(url),
                      request_headers=outbound.redact_headers(sent_headers),
                      request_body=body.decode("utf-8", "replace"))
    started = time.monotonic()
    try:
        # The kept session stays open for the next delivery; one made here closes after it.
        async with (nullcontext(env.session) if env.session is not None
                    else session_for(env)) as session, session.request(
                method, url, data=body or None, headers=sent_headers,
                max_redirects=outbound_aio.MAX_REDIRECTS) as response:
            raw = await _head_of_body(response)
    except outbound.OutboundBlocked as exc:
        attempt.error, attempt.retryable = f"refused by the outbound guard: {exc.reason}", False
    except (aiohttp.ClientError, TimeoutError) as exc:
        attempt.error = f"{type(exc).__name__}: {exc}"[:500] if str(exc) else type(exc).__name__
    else:
        attempt.status_code = response.status
        attempt.response_headers = dict(response.headers)
        attempt.response_body = _text(raw, response.charset)[:RESPONSE_BODY_MAX]
        attempt.ok = 200 <= response.status < 300
        if not attempt.ok:
            attempt.error = f"HTTP {response.status}"
            # A client error other than throttling will not heal by itself.
            attempt.retryable = response.status >= 500 or response.status in (
                408, 429) or 300 <= response.status < 400
    attempt.duration_ms = int((time.monotonic() - started) * 1000)
    return attempt
