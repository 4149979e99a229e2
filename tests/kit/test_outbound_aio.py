"""The outbound guard's aiohttp flavour (the delivery session), against real loopback peers:
the same refusals as the httpx clients', at connect time and on every redirect hop."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from dutyline.kit import outbound
from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy
from dutyline.kit.outbound_aio import MAX_REDIRECTS, KeptSessions, guarded_session
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.server import free_port

pytestmark = pytest.mark.anyio

STRICT = OutboundPolicy(allow_private=False)
OPEN = OutboundPolicy(allow_private=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiohttp runs on asyncio only


@pytest.fixture(scope="module")
def peers() -> Iterator[tuple[str, str, list[str]]]:
    """Two loopback web servers (the first redirects to the second, to the metadata address
    and to itself) and the paths the first was asked for."""
    second_port = free_port()
    asked: list[str] = []

    async def hello(request: Request) -> Response:
        asked.append(request.url.path)
        return PlainTextResponse("hello")

    async def bounce(_: Request) -> Response:
        return RedirectResponse(f"http://127.0.0.1:{second_port}/hello", status_code=302)

    async def to_metadata(_: Request) -> Response:
        return RedirectResponse("http://169.254.169.254/latest/meta-data/", status_code=302)

    async def loop(request: Request) -> Response:
        asked.append(request.url.path)
        return RedirectResponse("/loop", status_code=302)

    async def set_cookie(_: Request) -> Response:
        reply = PlainTextResponse("set")
        reply.set_cookie("session", "s3cret")
        return reply

    async def cookie(request: Request) -> Response:
        return PlainTextResponse(request.headers.get("cookie", "none"))

    app = Starlette(routes=[
        Route("/hello", hello), Route("/bounce", bounce), Route("/metadata", to_metadata),
        Route("/loop", loop), Route("/set-cookie", set_cookie), Route("/cookie", cookie),
    ])
    with serve_asgi(app) as first, serve_asgi(app, port=second_port) as second:
        yield first, second, asked


@pytest.fixture
async def strict() -> AsyncIterator[aiohttp.ClientSession]:
    async with guarded_session(STRICT, timeout_s=5) as session:
        yield session


@pytest.fixture
async def open_() -> AsyncIterator[aiohttp.ClientSession]:
    async with guarded_session(OPEN, timeout_s=5) as session:
        yield session


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, str, str]:
    async with session.get(url, max_redirects=MAX_REDIRECTS) as reply:
        return reply.status, await reply.text(), str(reply.url)


def _fake_resolver(answers: list[str]) -> Any:
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[Any]:
        calls.append(host)
        return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (ip, port)) for ip in answers]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/", "http://127.8.9.10:8080/x", "http://localhost:80/",
    "http://LOCALHOST./", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://10.0.0.5/",
    "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/",
    "http://0.0.0.0/", "http://100.64.0.1/", "http://[64:ff9b::7f00:1]/",
])
async def test_private_addresses_are_refused_before_connecting(
        strict: aiohttp.ClientSession, url: str) -> None:
    with pytest.raises(OutboundBlocked):
        await _get(strict, url)


async def test_a_name_resolving_to_loopback_is_refused_at_connect_time(
        monkeypatch: pytest.MonkeyPatch, strict: aiohttp.ClientSession,
        peers: tuple[str, str, list[str]]) -> None:
    """The resolver is the only lookup of the name: what it refuses is never connected to."""
    resolver = _fake_resolver(["127.0.0.1"])
    monkeypatch.setattr(outbound, "_getaddrinfo", resolver)
    port = peers[0].rsplit(":", 1)[1]
    asked = len(peers[2])
    with pytest.raises(OutboundBlocked, match=r"127\.0\.0\.1"):
        await _get(strict, f"http://internal.example:{port}/hello")
    assert resolver.calls == ["internal.example"]
    assert len(peers[2]) == asked  # the peer was never asked


async def test_one_private_address_among_public_ones_refuses_the_name(
        monkeypatch: pytest.MonkeyPatch, strict: aiohttp.ClientSession) -> None:
    monkeypatch.setattr(outbound, "_getaddrinfo", _fake_resolver(["93.184.216.34", "10.0.0.1"]))
    with pytest.raises(OutboundBlocked, match=r"10\.0\.0\.1"):
        await _get(strict, "http://mixed.example/")


async def test_allowed_when_private_network_is_allowed(
        open_: aiohttp.ClientSession, peers: tuple[str, str, list[str]]) -> None:
    first = peers[0]
    port = first.rsplit(":", 1)[1]
    assert (await _get(open_, f"{first}/hello"))[:2] == (200, "hello")
    assert (await _get(open_, f"http://localhost:{port}/hello"))[:2] == (200, "hello")


async def test_allow_hosts_admits_exactly_one_host_and_port(
        peers: tuple[str, str, list[str]]) -> None:
    first, second, _ = peers
    policy = OutboundPolicy(allow_hosts=frozenset({first.removeprefix("http://")}))
    async with guarded_session(policy, timeout_s=5) as session:
        assert (await _get(session, f"{first}/hello"))[:2] == (200, "hello")
        with pytest.raises(OutboundBlocked):
            await _get(session, f"{second}/hello")


async def test_every_redirect_hop_is_checked_again(
        open_: aiohttp.ClientSession,
        peers: tuple[str, str, list[str]]) -> None:
    first, second, _ = peers
    policy = OutboundPolicy(allow_hosts=frozenset({first.removeprefix("http://")}))
    async with guarded_session(policy, timeout_s=5) as session:
        with pytest.raises(OutboundBlocked, match="loopback"):
            await _get(session, f"{first}/bounce")
        with pytest.raises(OutboundBlocked, match="metadata"):
            await _get(session, f"{first}/metadata")
    # With private networks allowed the same redirect is followed.
    assert await _get(open_, f"{first}/bounce") == (200, "hello", f"{second}/hello")


async def test_redirects_stop_after_the_bound(
        open_: aiohttp.ClientSession, peers: tuple[str, str, list[str]]) -> None:
    first, _, asked = peers
    before = asked.count("/loop")
    with pytest.raises(aiohttp.TooManyRedirects):
        await _get(open_, f"{first}/loop")
    assert asked.count("/loop") - before == MAX_REDIRECTS


async def test_no_cookie_rides_along_to_the_next_request(
        open_: aiohttp.ClientSession, peers: tuple[str, str, list[str]]) -> None:
    # By name: a cookie jar keeps no cookies of bare IP addresses anyway.
    first = peers[0].replace("127.0.0.1", "localhost")
    assert (await _get(open_, f"{first}/set-cookie"))[1] == "set"
    assert (await _get(open_, f"{first}/cookie"))[1] == "none"


async def test_proxy_variables_are_ignored(
        monkeypatch: pytest.MonkeyPatch, peers: tuple[str, str, list[str]]) -> None:
    """A proxy would connect for us, past the resolver; the session goes direct."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://10.255.255.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with guarded_session(OPEN, timeout_s=5) as session:
        assert (await _get(session, f"{peers[0]}/hello"))[:2] == (200, "hello")


async def test_kept_sessions_are_one_per_purpose_until_closed() -> None:
    kept = KeptSessions()
    made: list[aiohttp.ClientSession] = []

    def make() -> aiohttp.ClientSession:
        made.append(guarded_session(OPEN, timeout_s=5))
        return made[-1]

    first = kept.get("delivery", make)
    assert kept.get("delivery", make) is first and len(made) == 1
    await first.close()
    second = kept.get("delivery", make)
    assert second is not first and len(made) == 2
    await kept.aclose()
    assert second.closed
