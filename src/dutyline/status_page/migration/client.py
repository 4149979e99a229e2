"""A small client for the Atlassian Statuspage REST API v1, as the migration needs it.

Every request goes through the outbound guard (`guarded_client`), is paced by a token bucket
per source key (the API allows 1 request per second and answers 420 or 429 beyond), and is
retried on 420/429 (honouring Retry-After) and on 5xx and network errors with exponential
backoff. The key travels only in the Authorization header; nothing here logs it, and the
errors raised carry the path and status, never the header.

This client keeps its own retry loop instead of the shared one in kit/outbound_retry (whose
retries it switches off, so attempts do not multiply): a migration is a background job that
should wait out the source's rate limit (up to 30 answers, none counted as failures), pace
every retry through the shared token bucket, and retry any 5xx and read errors of its GETs;
the shared policy is for interactive calls with a short deadline. It shares the Retry-After
parsing and reports its retries to the same metrics.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import msgspec
import structlog

from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, guarded_client
from dutyline.kit.outbound_retry import retry_after_seconds

log = structlog.get_logger("dutyline.status_page.migration")

PER_PAGE = 100  # the API's largest page
MAX_ATTEMPTS = 6  # failures (5xx, network) per request
MAX_RATE_LIMITED = 30  # 420/429 answers per request: waiting is expected, not a failure
BACKOFF_BASE_S = 0.25
BACKOFF_CAP_S = 10.0
RETRY_AFTER_CAP_S = 60.0
TIMEOUT_S = 30.0


class SourceError(Exception):
    """The source refused or failed; `permanent` says whether trying later could help."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class TokenBucket:
    """Spaces requests to `rate` per second (burst 1: the source counts per second, so a
    burst would only buy 420s). rate <= 0 lifts the limit (the bench, a raised quota)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._next_at = 0.0
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        async with self._lock:
            now = time.monotonic()
            wait = self._next_at - now
            # Without a rate, only a Retry-After the source gave holds requests back.
            spacing = 1.0 / self.rate if self.rate > 0 else 0.0
            self._next_at = max(now, self._next_at) + spacing
        if wait > 0:
            await asyncio.sleep(wait)

    def hold_off(self, seconds: float) -> None:
        """The source said to wait: no request from this bucket before then."""
        self._next_at = max(self._next_at, time.monotonic() + seconds)


# One bucket per (source, key) in this process, so consecutive chunks of one job (and two
# jobs on the same key) share the source's budget. Keyed by a hash: the key itself is never
# kept in memory longer than a request needs it.
_buckets: dict[tuple[str, str, float], TokenBucket] = {}


def bucket_for(base_url: str, api_key: str, rate: float) -> TokenBucket:
    digest = hashlib.sha256(api_key.encode("utf-8")).hexdigest()
    ident = (base_url, digest, rate)
    bucket = _buckets.get(ident)
    if bucket is None:
        if len(_buckets) > 1024:  # keys of long-finished jobs; the source forgets them too
            _buckets.clear()
        bucket = _buckets[ident] = TokenBucket(rate)
    return bucket


@dataclass
class RequestStats:
    requests: int = 0
    retries: int = 0
    by_status: dict[int, int] = field(default_factory=dict)


class StatuspageClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        policy: OutboundPolicy,
        rate_per_second: float = 1.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._bucket = bucket_for(self.base_url, api_key, rate_per_second)
        self._http = guarded_client(
            policy.without_retries(), timeout=TIMEOUT_S, transport=transport,
            headers={"Authorization": f"OAuth {api_key}", "Accept": "application/json"},
        )
        self.stats = RequestStats()
        self._on_retry = policy.on_retry

    async def __aenter__(self) -> StatuspageClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET one resource and decode its JSON, retrying what can be retried."""
        url = f"{self.base_url}{path}"
        last = ""
        attempt = limited = 0
        while attempt < MAX_ATTEMPTS and limited < MAX_RATE_LIMITED:
            await self._bucket.take()
            self.stats.requests += 1
            try:
                response = await self._http.get(url, params=params)
            except OutboundBlocked as exc:
                raise SourceError(
                    f"the Statuspage API address is refused: {exc.reason}", permanent=True
                ) from None
            except httpx.HTTPError as exc:
                attempt += 1
                last = f"{type(exc).__name__} on GET {path}"
                await self._backoff(attempt, last, "network_error")
                continue
            status = response.status_code
            self.stats.by_status[status] = self.stats.by_status.get(status, 0) + 1
            if status == 200:
                try:
                    return msgspec.json.decode(response.content)
                except msgspec.DecodeError:
                    raise SourceError(
                        f"the Statuspage API answered GET {path} with invalid JSON",
                        permanent=True,
                    ) from None
            if status in (420, 429):
                limited += 1
                wait = _retry_after(response.headers.get("retry-after"), limited)
                self._bucket.hold_off(wait)
                last = f"HTTP {status} (rate limited) on GET {path}"
                self.stats.retries += 1
                self._count_retry(f"http_{status}")
                log.info("statuspage rate limited", path=path, status=status, wait_s=wait)
                continue
            if status >= 500:
                attempt += 1
                last = f"HTTP {status} on GET {path}"
                await self._backoff(attempt, last, f"http_{status}")
                continue
            raise SourceError(_refusal(status, path), permanent=True)
        raise SourceError(
            f"the Statuspage API kept failing after {attempt + limited} retries ({last})",
            permanent=False,
        )

    async def _backoff(self, attempt: int, reason: str, label: str) -> None:
        self.stats.retries += 1
        if attempt >= MAX_ATTEMPTS:
            return
        self._count_retry(label)
        delay = min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_CAP_S)
        log.info("statuspage request failed; retrying", reason=reason, wait_s=delay)
        await asyncio.sleep(delay)

    def _count_retry(self, label: str) -> None:
        if self._on_retry is not None:
            self._on_retry(label)

    # --- the resources the migration reads ------------------------------------------------

    def _page_path(self, page_id: str, suffix: str = "") -> str:
        return f"/pages/{quote(page_id, safe='')}{suffix}"

    async def page(self, page_id: str) -> dict[str, Any]:
        return _object(await self.get(self._page_path(page_id)), "page")

    async def list_page(
        self, page_id: str, resource: str, page: int, extra: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """One page of a list (`page` counts from 1, as the API's lists do)."""
        params = {"page": page, "per_page": PER_PAGE, **(extra or {})}
        return _objects(await self.get(self._page_path(page_id, f"/{resource}"), params))

    async def subscribers_page(self, page_id: str, page: int) -> list[dict[str, Any]]:
        """One page of email subscribers. This list pages from 0 and, for compatibility,
        sizes its pages with `limit` (the API's own exception); `type=email` asks the
        source to filter, and the importer still checks each row's mode."""
        params = {"page": page, "limit": PER_PAGE, "per_page": PER_PAGE, "type": "email"}
        return _objects(await self.get(self._page_path(page_id, "/subscribers"), params))


def _retry_after(raw: str | None, attempt: int) -> float:
    asked = retry_after_seconds(raw)
    if asked is not None:
        return min(asked, RETRY_AFTER_CAP_S)
    return float(min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_CAP_S))


def _refusal(status: int, path: str) -> str:
    if status == 401:
        return "the Statuspage API refused the api_key (HTTP 401): check the key"
    if status == 403:
        return f"the api_key may not read GET {path} (HTTP 403)"
    if status == 404:
        return f"the Statuspage API has no {path} for this key (HTTP 404): check source_page_id"
    return f"the Statuspage API refused GET {path} (HTTP {status})"


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SourceError(f"the Statuspage API answered a {what} that is not an object",
                          permanent=True)
    return value


def _objects(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise SourceError("the Statuspage API answered a list that is not a list of objects",
                          permanent=True)
    return value
