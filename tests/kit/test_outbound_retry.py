"""Retries of the guarded clients against a real loopback server, on a fake timer: which
requests are sent again, how many times, how long the waits are, and what is never retried."""

from __future__ import annotations

import email.utils
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from dutyline.api.observe import Metrics
from dutyline.kit import outbound, outbound_retry
from dutyline.kit.outbound import (
    IDEMPOTENT,
    OutboundBlocked,
    OutboundPolicy,
    guarded_client,
    guarded_httpx2_client,
)
from dutyline.kit.outbound_retry import RetryPolicy, retry_after_seconds
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.retry_timer import EPOCH, FakeTimer
from tests.fixtures.server import free_port

pytestmark = pytest.mark.anyio


class FixedBackoff(RetryPolicy):
    """No jitter, for counting how many waits fit in a deadline."""

    def backoff(self, retry: int) -> float:
        return 1.0


@dataclass
class Script:
    """What the peer answers next: (status, headers) per request, then 200s."""

    replies: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    always: tuple[int, dict[str, str]] | None = None
    seen: list[str] = field(default_factory=list)

    def reset(self, *replies: tuple[int, dict[str, str]],
              always: tuple[int, dict[str, str]] | None = None) -> None:
        self.replies, self.always, self.seen = list(replies), always, []


@pytest.fixture(scope="module")
def peer() -> Iterator[tuple[str, Script]]:
    script = Script()

    async def answer(request: Request) -> Response:
        script.seen.append(request.method)
        status, headers = (
            script.replies.pop(0) if script.replies else script.always or (200, {})
        )
        return PlainTextResponse("ok" if status == 200 else "busy", status, headers=headers)

    app = Starlette(routes=[Route("/x", answer, methods=["GET", "HEAD", "POST", "PUT"])])
    with serve_asgi(app) as base:
        yield base, script


@dataclass
class Setup:
    policy: OutboundPolicy
    timer: FakeTimer
    reasons: list[str]


def setup(**retry: Any) -> Setup:
    timer, reasons = FakeTimer(), []
    kind = retry.pop("kind", RetryPolicy)
    policy = OutboundPolicy(
        allow_private=True, retry=kind(timer=timer, **retry), on_retry=reasons.append
    )
    return Setup(policy, timer, reasons)


UNAVAILABLE = (503, {})


@pytest.mark.parametrize("status", [429, 502, 503, 504])
@pytest.mark.parametrize("failures", [1, 2])
async def test_a_get_succeeds_after_n_failures_with_n_plus_one_requests(
    peer: tuple[str, Script], status: int, failures: int
) -> None:
    base, script = peer
    script.reset(*[(status, {})] * failures)
    s = setup(attempts=failures + 1)
    async with guarded_client(s.policy, timeout=5) as client:
        reply = await client.get(f"{base}/x")
    assert (reply.status_code, reply.text) == (200, "ok")
    assert script.seen == ["GET"] * (failures + 1)
    assert s.reasons == [f"http_{status}"] * failures
    # Full jitter: each wait is somewhere between 0 and base * 2^(n-1).
    assert len(s.timer.sleeps) == failures
    for n, wait in enumerate(s.timer.sleeps, start=1):
        assert 0 <= wait <= 0.2 * 2 ** (n - 1)


async def test_retry_after_in_seconds_is_honoured(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset((429, {"Retry-After": "2"}), (503, {"Retry-After": "0"}))
    s = setup()
    async with guarded_client(s.policy, timeout=5) as client:
        assert (await client.get(f"{base}/x")).status_code == 200
    assert script.seen == ["GET"] * 3
    assert s.timer.sleeps == [2.0, 0.0]


async def test_retry_after_as_an_http_date_is_honoured(peer: tuple[str, Script]) -> None:
    base, script = peer
    when = email.utils.formatdate(EPOCH + 3, usegmt=True)
    script.reset((503, {"Retry-After": when}))
    s = setup()
    async with guarded_client(s.policy, timeout=5) as client:
        assert (await client.get(f"{base}/x")).status_code == 200
    assert script.seen == ["GET", "GET"]
    assert s.timer.sleeps == [3.0]


async def test_a_retry_after_beyond_the_cap_is_answered_at_once_not_retried_early(
    peer: tuple[str, Script],
) -> None:
    base, script = peer
    script.reset((503, {"Retry-After": "120"}))
    s = setup(retry_after_cap_s=5)
    async with guarded_client(s.policy, timeout=5) as client:
        reply = await client.get(f"{base}/x")
    assert reply.status_code == 503 and reply.headers["retry-after"] == "120"
    assert script.seen == ["GET"] and s.timer.sleeps == []


async def test_a_post_is_sent_once(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset(always=UNAVAILABLE)
    s = setup(attempts=5)
    async with guarded_client(s.policy, timeout=5) as client:
        assert (await client.post(f"{base}/x", json={"send": "once"})).status_code == 503
        assert (await client.put(f"{base}/x", content=b"x")).status_code == 503
    assert script.seen == ["POST", "PUT"]
    assert s.reasons == []


async def test_a_request_marked_idempotent_is_retried(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset(UNAVAILABLE)
    s = setup()
    async with guarded_client(s.policy, timeout=5) as client:
        reply = await client.put(f"{base}/x", content=b"same", extensions={IDEMPOTENT: True})
    assert reply.status_code == 200 and script.seen == ["PUT", "PUT"]


async def test_a_streamed_body_is_not_sent_twice_even_when_marked() -> None:
    calls: list[bytes] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(await request.aread())
        return httpx.Response(503)

    async def body() -> AsyncIterator[bytes]:
        yield b"chunk"

    s = setup()
    async with guarded_client(s.policy, timeout=5, transport=httpx.MockTransport(handler)) as c:
        reply = await c.put("http://agent.example/x", content=body(),
                            extensions={IDEMPOTENT: True})
    assert reply.status_code == 503 and calls == [b"chunk"]


async def test_attempts_are_bounded(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset(always=UNAVAILABLE)
    s = setup(attempts=4, deadline_s=1000)
    async with guarded_client(s.policy, timeout=5) as client:
        assert (await client.get(f"{base}/x")).status_code == 503
    assert script.seen == ["GET"] * 4 and len(s.reasons) == 3


async def test_the_total_deadline_is_bounded(peer: tuple[str, Script]) -> None:
    """Waits of 1 s in a 3.5 s deadline: sends at 0, 1, 2 and 3 s; a wait to 4 s would not
    fit, so the fourth 503 is the answer whatever the attempt limit says."""
    base, script = peer
    script.reset(always=(503, {"Retry-After": "1"}))
    s = setup(attempts=100, deadline_s=3.5)
    async with guarded_client(s.policy, timeout=5) as client:
        assert (await client.get(f"{base}/x")).status_code == 503
    assert script.seen == ["GET"] * 4
    assert s.timer.elapsed == 3.0


async def test_a_connect_refused_on_a_closed_port_is_retried_up_to_the_limit() -> None:
    s = setup(attempts=4)
    async with guarded_client(s.policy, timeout=5) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{free_port()}/x")
    assert s.reasons == ["connect_error"] * 3


async def test_connect_retries_stop_at_the_deadline() -> None:
    s = setup(kind=FixedBackoff, attempts=100, deadline_s=2.5)
    async with guarded_client(s.policy, timeout=5) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{free_port()}/x")
    assert s.reasons == ["connect_error"] * 2 and s.timer.elapsed == 2.0


async def test_a_retry_connects_within_what_is_left_of_the_deadline() -> None:
    connect_timeouts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        connect_timeouts.append(request.extensions["timeout"]["connect"])
        return httpx.Response(503 if len(connect_timeouts) < 3 else 200)

    s = setup(kind=FixedBackoff, deadline_s=2.5)
    async with guarded_client(s.policy, timeout=httpx.Timeout(30, connect=2),
                              transport=httpx.MockTransport(handler)) as client:
        assert (await client.get("http://agent.example/x")).status_code == 200
    assert connect_timeouts == [2, 1.5, 0.5]


async def test_a_guard_refusal_is_not_retried(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset(always=UNAVAILABLE)
    timer, reasons = FakeTimer(), []
    strict = OutboundPolicy(retry=RetryPolicy(timer=timer), on_retry=reasons.append)
    async with guarded_client(strict, timeout=5) as client:
        with pytest.raises(OutboundBlocked):
            await client.get(f"{base}/x")
    assert script.seen == [] and reasons == [] and timer.sleeps == []


async def test_a_refusal_at_connect_time_is_not_retried(
    monkeypatch: pytest.MonkeyPatch, peer: tuple[str, Script]
) -> None:
    base, _ = peer
    port = int(base.rsplit(":", 1)[1])
    looked_up: list[str] = []

    async def resolve(host: str, port: int) -> list[Any]:
        looked_up.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(outbound, "_getaddrinfo", resolve)
    reasons: list[str] = []
    strict = OutboundPolicy(retry=RetryPolicy(timer=FakeTimer()), on_retry=reasons.append)
    async with guarded_client(strict, timeout=5) as client:
        with pytest.raises(OutboundBlocked, match=r"127\.0\.0\.1"):
            await client.get(f"http://rebind.example:{port}/x")
    assert looked_up == ["rebind.example"] and reasons == []


async def test_a_tls_failure_is_not_retried() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        try:
            raise ssl.SSLCertVerificationError("certificate verify failed")
        except ssl.SSLError as exc:
            raise httpx.ConnectError("TLS handshake failed") from exc

    s = setup(attempts=5)
    async with guarded_client(s.policy, timeout=5, transport=httpx.MockTransport(handler)) as c:
        with pytest.raises(httpx.ConnectError):
            await c.get("https://agent.example/x")
    assert len(calls) == 1 and s.reasons == []


async def test_no_retries_when_the_policy_has_none(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset(UNAVAILABLE)
    async with guarded_client(
        OutboundPolicy(allow_private=True).without_retries(), timeout=5
    ) as client:
        assert (await client.get(f"{base}/x")).status_code == 503
    assert script.seen == ["GET"]


async def test_the_httpx2_client_retries_the_same_way(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset(UNAVAILABLE, (429, {"Retry-After": "1"}))
    s = setup()
    async with guarded_httpx2_client(s.policy, timeout=5) as client:
        assert (await client.get(f"{base}/x")).status_code == 200
        script.reset(UNAVAILABLE)
        assert (await client.post(f"{base}/x", json={})).status_code == 503
    assert script.seen == ["POST"]
    assert s.reasons == ["http_503", "http_429"] and s.timer.sleeps[1] == 1.0
    assert httpx2  # the mcp transports' flavour


class RecordingLog:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append({"event": event, **fields})


async def test_retries_are_logged_without_path_or_query(
    monkeypatch: pytest.MonkeyPatch, peer: tuple[str, Script]
) -> None:
    # A recorder rather than structlog's capture_logs: the app's logging setup caches loggers
    # on first use, which capture_logs cannot see through in a shared test process.
    base, script = peer
    script.reset(UNAVAILABLE)
    recorded = RecordingLog()
    monkeypatch.setattr(outbound_retry, "log", recorded)
    s = setup()
    async with guarded_client(s.policy, timeout=5) as client:
        await client.get(f"{base}/x?token=s3cret", headers={"Authorization": "Bearer s3"})
    assert recorded.lines == [{
        "event": "outbound_retry", "method": "GET", "origin": base, "attempt": 1,
        "reason": "http_503", "wait_s": recorded.lines[0]["wait_s"],
    }]
    assert "s3" not in repr(recorded.lines)


async def test_retries_are_counted_in_the_metrics(peer: tuple[str, Script]) -> None:
    base, script = peer
    script.reset(UNAVAILABLE, UNAVAILABLE)
    metrics = Metrics()
    policy = OutboundPolicy(allow_private=True, retry=RetryPolicy(timer=FakeTimer()),
                            on_retry=metrics.count_outbound_retry)
    async with guarded_client(policy, timeout=5) as client:
        assert (await client.get(f"{base}/x")).status_code == 200
    count = metrics.registry.get_sample_value(
        "dutyline_outbound_retries_total", {"reason": "http_503"}
    )
    assert count == 2


@pytest.mark.parametrize(
    ("header", "seconds"),
    [(None, None), ("", None), ("7", 7.0), (" 1.5 ", 1.5), ("-1", None), ("soon", None),
     ("inf", None), (email.utils.formatdate(EPOCH + 30, usegmt=True), 30.0),
     (email.utils.formatdate(EPOCH - 30, usegmt=True), 0.0)],
)
def test_retry_after_parsing(header: str | None, seconds: float | None) -> None:
    assert retry_after_seconds(header, EPOCH) == seconds
