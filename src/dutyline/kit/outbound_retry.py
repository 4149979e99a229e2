"""Retries with backoff for outbound HTTP (every outbound call gets them), as a transport layer.

The guarded clients of `kit/outbound` put `RetryingTransport` above the guard, so every request
a client makes, ours or an SDK's (a2a-sdk, mcp), and every redirect hop gets the same policy.

What is retried: only a request that is safe to send twice, that is a GET or HEAD, or one the
caller marks with the `IDEMPOTENT` extension (`client.put(url, ..., extensions={IDEMPOTENT:
True})`), whose body can be sent again; and only on a failure that trying again can cure:

- the connection could not be made (refused, reset or timed out while connecting);
- the answer is 429, 502, 503 or 504.

Never retried:
- a POST (an A2A message send, an MCP JSON-RPC request): the peer may already have acted on it,
  so a second send would start the agent's task or run the tool twice, and neither protocol
  carries an idempotency key that would let the peer drop the copy;
- a URL the guard refuses (`OutboundBlocked` is not an HTTP error and passes straight through);
- TLS failures (a certificate does not get better in a second);
- read errors and read timeouts: the request went out and the caller's time is spent.

How long: at most `attempts` sends, and a total deadline counted from the start of the first.
A wait that would end past the deadline is not taken, and a retry's connect (and pool) timeout
is cut to what is left of it, so retrying adds nothing to an operation's worst case beyond the
read timeout the caller already allowed. The wait before a retry is the server's Retry-After
(delay-seconds or an HTTP date) when it sends one, honoured exactly: one longer than
`retry_after_cap_s` or than the deadline leaves means the caller gets the 429/503 now, not a
retry that would come too early and earn another. Otherwise exponential backoff with full
jitter (a random wait up to base * 2^n, capped), so clients that failed together do not come
back together.

Each retry is logged (method and origin only: paths and query strings can carry tokens) and
reported to `on_retry`, which the app points at its metrics.
"""

from __future__ import annotations

import email.utils
import random
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import anyio
import structlog

log = structlog.get_logger("dutyline.outbound")

# The request extension that marks a request safe to send twice (PUT, DELETE, a POST the
# protocol makes idempotent). Extensions never go on the wire.
IDEMPOTENT = "dutyline.idempotent"
_SAFE_METHODS = frozenset({"GET", "HEAD"})
# A retry that would get less than this to connect is not worth starting.
_MIN_ATTEMPT_S = 0.05
_DELAY_SECONDS = re.compile(r"\s*(\d+(?:\.\d+)?)\s*")


class RetryTimer(Protocol):
    """Where the retry loop reads time and waits; tests pass a fake that only pretends."""

    def monotonic(self) -> float: ...

    def now(self) -> float:
        """Seconds since the Unix epoch (for Retry-After given as an HTTP date)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemTimer:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long; see the module docstring for what is retried."""

    attempts: int = 3  # sends in all, the first included
    deadline_s: float = 10.0
    backoff_base_s: float = 0.2
    backoff_cap_s: float = 2.0
    retry_after_cap_s: float = 5.0
    statuses: frozenset[int] = frozenset({429, 502, 503, 504})
    timer: RetryTimer = field(default_factory=SystemTimer, compare=False, repr=False)

    def within(self, seconds: float) -> RetryPolicy:
        """The same policy with its deadline cut to an operation's own budget."""
        return replace(self, deadline_s=min(self.deadline_s, seconds))

    def backoff(self, retry: int) -> float:
        """Full jitter: a random wait up to base * 2^(retry - 1), capped."""
        ceiling = min(self.backoff_cap_s, self.backoff_base_s * 2 ** (retry - 1))
        return random.uniform(0.0, ceiling)  # jitter, not a secret: `random` is right here


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header as seconds from `now` (epoch seconds; the system clock when not
    given), or None when absent or unreadable. A date in the past means "now" (0)."""
    if not value:
        return None
    match = _DELAY_SECONDS.fullmatch(value)
    if match:
        return float(match.group(1))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; an obsolete form may come without zone
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True)
class Flavour:
    """The httpx or httpx2 classes the loop needs (the two forks share no base classes)."""

    connect_errors: tuple[type[Exception], ...]
    connect_timeout: type[Exception]
    byte_stream: type[Any]


def _tls_failure(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _origin(url: Any) -> str:
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"


class RetryingTransport:
    """Sends a request again per `policy`; `inner` is the guarded transport below."""

    def __init__(
        self,
        inner: Any,
        policy: RetryPolicy,
        flavour: Flavour,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self._inner = inner
        self._policy = policy
        self._flavour = flavour
        self._on_retry = on_retry

    def _replayable(self, request: Any) -> bool:
        safe = request.method in _SAFE_METHODS or request.extensions.get(IDEMPOTENT) is True
        # A streamed body cannot be sent a second time; a bytes body (GET's empty one) can.
        return safe and isinstance(request.stream, self._flavour.byte_stream)

    async def handle_async_request(self, request: Any) -> Any:
        policy = self._policy
        if policy.attempts <= 1 or not self._replayable(request):
            return await self._inner.handle_async_request(request)
        timer = policy.timer
        started = timer.monotonic()
        attempt = 1
        while True:
            try:
                response = await self._inner.handle_async_request(request)
            except self._flavour.connect_errors as exc:
                if attempt >= policy.attempts or _tls_failure(exc):
                    raise
                wait = policy.backoff(attempt)
                if not self._fits(started, wait):
                    raise
                timed_out = isinstance(exc, self._flavour.connect_timeout)
                reason = "connect_timeout" if timed_out else "connect_error"
            else:
                status = response.status_code
                if status not in policy.statuses or attempt >= policy.attempts:
                    return response
                asked = retry_after_seconds(response.headers.get("retry-after"), timer.now())
                wait = policy.backoff(attempt) if asked is None else asked
                too_long = asked is not None and asked > policy.retry_after_cap_s
                if too_long or not self._fits(started, wait):
                    return response
                await response.aclose()
                reason = f"http_{status}"
            log.info(
                "outbound_retry", method=request.method, origin=_origin(request.url),
                attempt=attempt, reason=reason, wait_s=round(wait, 3),
            )
            if self._on_retry is not None:
                self._on_retry(reason)
            await timer.sleep(wait)
            attempt += 1
            self._cut_timeouts(request, started)

    def _fits(self, started: float, wait: float) -> bool:
        elapsed = self._policy.timer.monotonic() - started
        return elapsed + wait + _MIN_ATTEMPT_S <= self._policy.deadline_s

    def _cut_timeouts(self, request: Any, started: float) -> None:
        """A retry may take only what is left of the deadline to connect. Read and write
        timeouts stay the caller's: a stream (SSE) reads on them for as long as it lives."""
        left = self._policy.deadline_s - (self._policy.timer.monotonic() - started)
        timeouts = dict(request.extensions.get("timeout") or {})
        for kind in ("connect", "pool"):
            current = timeouts.get(kind)
            timeouts[kind] = left if current is None else min(current, left)
        request.extensions = {**request.extensions, "timeout": timeouts}

    async def aclose(self) -> None:
        await self._inner.aclose()
