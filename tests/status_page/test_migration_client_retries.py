"""The Statuspage client's own retry loop next to the shared outbound policy: the shared
retries are off for it (no multiplied attempts), its retries reach the metrics hook, and
Retry-After is read by the shared parser (HTTP dates included)."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from dutyline.kit.outbound import OutboundPolicy
from dutyline.status_page.migration import client as client_module
from dutyline.status_page.migration.client import StatuspageClient, _retry_after

pytestmark = pytest.mark.anyio


async def test_retries_are_counted_once_and_not_multiplied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "BACKOFF_BASE_S", 0.0)
    answers = [500, 420, 503, 200]
    seen: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(answers[len(seen)])
        return httpx.Response(seen[-1], json={"id": "p"})

    retries: list[str] = []
    policy = OutboundPolicy(allow_private=True, on_retry=retries.append)
    async with StatuspageClient(
        "https://retries.statuspage.example/v1", "key", policy=policy, rate_per_second=0,
        transport=httpx.MockTransport(handler),
    ) as source:
        assert await source.page("p") == {"id": "p"}
        # Had the shared policy been on, it would have resent the 503 below the client's
        # loop, which would have sent fewer requests than the source answered.
        assert source.stats.requests == len(seen) == len(answers)
    assert retries == ["http_500", "http_420", "http_503"]


def test_retry_after_reads_seconds_and_http_dates_and_is_capped() -> None:
    assert _retry_after("7", 1) == 7.0
    assert _retry_after("120", 1) == client_module.RETRY_AFTER_CAP_S
    assert _retry_after("soon", 3) == client_module.BACKOFF_BASE_S * 4
    in_half_a_minute = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= _retry_after(in_half_a_minute, 1) <= 30
