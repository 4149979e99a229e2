"""The custom action's request: one signed POST through the outbound guard, bounded in time,
never retried (an action, such as restarting a service, must not run twice because an answer
was slow), and the answer kept short.

A receiver verifies a request like this (the key is the integration's signing key, shown once
when the integration was created):

    timestamp = headers["X-Dutyline-Timestamp"]          # Unix seconds
    expected = "sha256=" + hex(HMAC_SHA256(key, timestamp + "." + raw_body))
    constant_time_equal(expected, headers["X-Dutyline-Signature"])
    and abs(now - int(timestamp)) is small (say 5 minutes), so a captured request cannot be
    replayed later; `X-Dutyline-Event-Id` is the same id as the body's `event_id`.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

import anyio
import httpx

from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, guarded_client

SIGNATURE_HEADER = "X-Dutyline-Signature"
TIMESTAMP_HEADER = "X-Dutyline-Timestamp"
EVENT_ID_HEADER = "X-Dutyline-Event-Id"
USER_AGENT = "dutyline-custom-action/1"
# The longest the whole call may take (connect, send, answer): the member who clicked waits.
TIMEOUT_S = 10.0
# What the feed keeps of the answer's body.
EXCERPT_CHARS = 512
_READ_MAX = 4 * EXCERPT_CHARS  # bytes: the kept characters, in a multi-byte encoding at worst


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """`sha256=<hex>` of HMAC-SHA256 keyed by the signing key over `<timestamp>.<body>`."""
    message = str(timestamp).encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Answer:
    """What came of the call: the receiver's status and the start of its body, or why there
    was no answer (`error`); `ok` for a 2xx."""

    status_code: int = 0
    body_excerpt: str = ""
    error: str = ""
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        return not self.error and 200 <= self.status_code < 300

    @property
    def message(self) -> str:
        """The reference's `message`: empty on success, else why the call failed."""
        if self.error:
            return self.error
        if not self.ok:
            return f"the action's endpoint answered HTTP {self.status_code}"
        return ""


async def post(policy: OutboundPolicy, url: str, body: bytes, *, secret: str, event_id: str,
               timestamp: int) -> Answer:
    headers = {
        "Content-Type": "application/json", "User-Agent": USER_AGENT,
        EVENT_ID_HEADER: event_id, TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }
    started = time.monotonic()
    try:
        with anyio.fail_after(TIMEOUT_S):
            async with guarded_client(policy.without_retries(), timeout=TIMEOUT_S,
                                      max_connections=1, max_keepalive=0) as client, \
                    client.stream("POST", url, content=body, headers=headers) as reply:
                head = await _head_of_body(reply)
                status = reply.status_code
    except OutboundBlocked as exc:
        return _failed(f"the address is refused ({exc.reason})", started)
    except (TimeoutError, httpx.TimeoutException):
        return _failed(f"no answer within {TIMEOUT_S:g} s", started)
    except httpx.HTTPError as exc:
        return _failed(f"the request failed ({type(exc).__name__})", started)
    excerpt = head.decode("utf-8", errors="replace")[:EXCERPT_CHARS]
    return Answer(status_code=status, body_excerpt=excerpt, duration_ms=_ms_since(started))


async def _head_of_body(reply: httpx.Response) -> bytes:
    """The answer's first bytes only: a receiver answering with gigabytes costs nothing."""
    kept = bytearray()
    async for chunk in reply.aiter_bytes():
        kept += chunk
        if len(kept) >= _READ_MAX:
            break
    return bytes(kept[:_READ_MAX])


def _failed(error: str, started: float) -> Answer:
    return Answer(error=error, duration_ms=_ms_since(started))


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
