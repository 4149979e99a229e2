"""The outbound guard: refusals before any connection, connect-time checks, redirects."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from dutyline.kit import outbound
from dutyline.kit.outbound import (
    OutboundBlocked,
    OutboundPolicy,
    check_url,
    guarded_client,
    guarded_httpx2_client,
    redact_headers,
    redact_url,
)
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.server import free_port

pytestmark = pytest.mark.anyio

STRICT = OutboundPolicy(allow_private=False)
OPEN = OutboundPolicy(allow_private=True)


@pytest.fixture(scope="module")
def peer() -> Iterator[tuple[str, str]]:
    """A loopback web server with a redirect to a second, private-only loopback server."""
    second_port = free_port()

    async def hello(_: Request) -> Response:
        return PlainTextResponse("hello")

    async def bounce(_: Request) -> Response:
        return RedirectResponse(f"http://127.0.0.1:{second_port}/hello", status_code=302)

    async def to_metadata(_: Request) -> Response:
        return RedirectResponse("http://169.254.169.254/latest/meta-data/", status_code=302)

    app = Starlette(routes=[
        Route("/hello", hello), Route("/bounce", bounce), Route("/metadata", to_metadata),
    ])
    with serve_asgi(app) as first, serve_asgi(app, port=second_port) as second:
        yield first, second


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.8.9.10:8080/x",
        "http://localhost:80/",
        "http://LOCALHOST./",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.1.2.3]/",
        "http://10.0.0.5/",
        "http://172.16.3.4/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://100.64.0.1/",
        "http://[64:ff9b::7f00:1]/",
        "http://2130706433/",
    ],
)
async def test_private_addresses_are_refused(url: str) -> None:
    with pytest.raises(OutboundBlocked):
        await check_url(url, STRICT)
    # The client refuses too, before any connection (nothing listens at most of these).
    async with guarded_client(STRICT, timeout=2) as client:
        with pytest.raises(OutboundBlocked):
            await client.get(url)


@pytest.mark.parametrize("url", ["ftp://example.com/", "file:///etc/passwd", "gopher://x/",
                                 "http:///nohost", "http://[::1/"])
async def test_bad_schemes_and_malformed_urls_are_refused_even_when_private_is_allowed(
    url: str,
) -> None:
    with pytest.raises(OutboundBlocked):
        await check_url(url, OPEN)


async def test_public_literal_addresses_pass_the_check() -> None:
    await check_url("https://8.8.8.8/", STRICT)
    await check_url("http://[2606:4700:4700::1111]:8443/x", STRICT)


async def test_refusal_reason_names_the_kind_of_address() -> None:
    with pytest.raises(OutboundBlocked, match="metadata"):
        await check_url("http://169.254.169.254/", STRICT)
    with pytest.raises(OutboundBlocked, match="loopback"):
        await check_url("http://[::ffff:127.0.0.1]/", STRICT)


def _fake_resolver(answers: list[str]) -> Any:
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[Any]:
        calls.append(host)
        ip = answers[min(len(calls), len(answers)) - 1]
        family = socket.AF_INET6 if ":" in ip else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (ip, port))]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


async def test_a_name_resolving_to_loopback_is_refused(
    monkeypatch: pytest.MonkeyPatch, peer: tuple[str, str]
) -> None:
    monkeypatch.setattr(outbound, "_getaddrinfo", _fake_resolver(["127.0.0.1"]))
    port = peer[0].rsplit(":", 1)[1]
    with pytest.raises(OutboundBlocked, match=r"127\.0\.0\.1"):
        await check_url(f"http://internal.example:{port}/hello", STRICT)


async def test_dns_rebinding_is_caught_at_connect_time(
    monkeypatch: pytest.MonkeyPatch, peer: tuple[str, str]
) -> None:
    """The pre-flight check sees a public address; the connection would go to loopback."""
    resolver = _fake_resolver(["93.184.216.34", "127.0.0.1"])
    monkeypatch.setattr(outbound, "_getaddrinfo", resolver)
    port = peer[0].rsplit(":", 1)[1]
    url = f"http://rebind.example:{port}/hello"
    await check_url(url, STRICT)
    async with guarded_client(STRICT, timeout=2) as client:
        with pytest.raises(OutboundBlocked, match=r"127\.0\.0\.1"):
            await client.get(url)
    assert resolver.calls == ["rebind.example", "rebind.example"]


async def test_one_private_address_among_public_ones_refuses_the_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def resolve(host: str, port: int) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", port)),
        ]

    monkeypatch.setattr(outbound, "_getaddrinfo", resolve)
    with pytest.raises(OutboundBlocked, match=r"10\.0\.0\.1"):
        await check_url("http://mixed.example/", STRICT)


async def test_allowed_when_private_network_is_allowed(peer: tuple[str, str]) -> None:
    first, _ = peer
    port = first.rsplit(":", 1)[1]
    await check_url(f"{first}/hello", OPEN)
    async with guarded_client(OPEN, timeout=5) as client:
        assert (await client.get(f"{first}/hello")).text == "hello"
        assert (await client.get(f"http://localhost:{port}/hello")).text == "hello"


async def test_allow_hosts_admits_exactly_one_host_and_port(peer: tuple[str, str]) -> None:
    first, second = peer
    policy = OutboundPolicy(allow_hosts=frozenset({first.removeprefix("http://")}))
    async with guarded_client(policy, timeout=5) as client:
        assert (await client.get(f"{first}/hello")).text == "hello"
        with pytest.raises(OutboundBlocked):
            await client.get(f"{second}/hello")


async def test_redirect_to_a_private_address_is_rechecked(peer: tuple[str, str]) -> None:
    first, second = peer
    policy = OutboundPolicy(allow_hosts=frozenset({first.removeprefix("http://")}))
    async with guarded_client(policy, timeout=5, follow_redirects=True) as client:
        with pytest.raises(OutboundBlocked, match="loopback"):
            await client.get(f"{first}/bounce")
        with pytest.raises(OutboundBlocked, match="metadata"):
            await client.get(f"{first}/metadata")
    # With private networks allowed the same redirect is followed.
    async with guarded_client(OPEN, timeout=5, follow_redirects=True) as client:
        reply = await client.get(f"{first}/bounce")
        assert reply.text == "hello" and str(reply.url) == f"{second}/hello"


async def test_redirects_are_not_followed_unless_asked(peer: tuple[str, str]) -> None:
    first, _ = peer
    async with guarded_client(OPEN, timeout=5) as client:
        assert (await client.get(f"{first}/bounce")).status_code == 302


async def test_injected_transport_still_checks_urls() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, text="mocked")

    transport = httpx.MockTransport(handler)
    async with guarded_client(STRICT, timeout=2, transport=transport) as client:
        assert (await client.get("https://8.8.8.8/x")).text == "mocked"
        with pytest.raises(OutboundBlocked):
            await client.get("http://10.1.1.1/")
        with pytest.raises(OutboundBlocked):
            await client.get("http://localhost/")
    assert seen == ["https://8.8.8.8/x"]


async def test_httpx2_client_is_guarded_the_same_way(peer: tuple[str, str]) -> None:
    first, _ = peer
    async with guarded_httpx2_client(STRICT, timeout=2) as client:
        with pytest.raises(OutboundBlocked):
            await client.get(f"{first}/hello")
        with pytest.raises(OutboundBlocked):
            await client.get("http://169.254.169.254/")
    async with guarded_httpx2_client(OPEN, timeout=5) as client:
        assert (await client.get(f"{first}/hello")).text == "hello"


async def _keep_alive_peer(close_after_reply: bool) -> tuple[asyncio.Server, list[int]]:
    """A raw HTTP/1.1 peer that answers every request with `ok`; with `close_after_reply`
    it closes the connection after the first reply, as a server ending keep-alive does.
    The list counts the connections it accepted."""
    accepted: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            if close_after_reply:
                writer.close()
                return

    return await asyncio.start_server(serve, "127.0.0.1", 0), accepted


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("closes", [False, True])
async def test_the_pool_reuses_an_open_connection_and_drops_a_closed_one(closes: bool) -> None:
    """The guarded stream answers httpcore's "is this idle socket readable" itself: an idle
    connection the server keeps open is reused, one it closed is dropped (a request on it
    would fail with "server disconnected")."""
    server, accepted = await _keep_alive_peer(close_after_reply=closes)
    port = server.sockets[0].getsockname()[1]
    async with server, guarded_client(OPEN, timeout=5) as client:
        for _ in range(3):
            assert (await client.get(f"http://127.0.0.1:{port}/")).text == "ok"
            await asyncio.sleep(0.05)  # the server's FIN arrives
    assert len(accepted) == (3 if closes else 1)


async def test_unix_sockets_are_refused() -> None:
    backend = outbound._GuardedBackend(None, OPEN, TimeoutError)
    with pytest.raises(OutboundBlocked):
        await backend.connect_unix_socket("/var/run/docker.sock")


def test_redaction_masks_secrets() -> None:
    assert redact_url("https://user:pw@host.example/p?token=abc&x=1") == (
        "https://host.example/p?token=******&x=1"
    )
    # Telegram's bot token sits in the path.
    assert redact_url("https://api.telegram.org/bot123456:AA-b_c/sendMessage") == (
        "https://api.telegram.org/bot******/sendMessage"
    )
    masked = redact_headers({"Authorization": "Bearer s3cret", "X-Api-Key": "k", "Accept": "a"})
    assert masked == {"Authorization": "******", "X-Api-Key": "******", "Accept": "a"}
    assert httpx2  # the mcp transports' client flavour is importable
