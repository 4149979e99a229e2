"""Card resolution on its own: deadlines, injected transports and the guard's host rules."""

from __future__ import annotations

import httpx
import pytest

from dutyline.aisre.a2a.card import is_full_card_url, resolve_card
from dutyline.api.errors import InvalidParameter
from dutyline.kit.outbound import OutboundPolicy
from tests.aisre.a2a_peers import a2a_peer, bad_card_server

pytestmark = pytest.mark.anyio

OPEN = OutboundPolicy(allow_private=True)
CARD = {
    "name": "Remote", "description": "d", "version": "1",
    "supportedInterfaces": [{"url": "https://agent.example/rpc", "protocolBinding": "HTTP+JSON",
                             "protocolVersion": "1.0"}],
    "capabilities": {}, "skills": [{"id": "s", "name": "S", "description": "", "tags": []}],
}


def message(exc: InvalidParameter) -> str:
    return exc.message.format(**exc.fields)


def test_full_card_urls_are_recognised() -> None:
    assert is_full_card_url("https://a.example/.well-known/agent-card.json")
    assert is_full_card_url("https://a.example/cards/mine.json")
    assert not is_full_card_url("https://a.example/agents/echo")
    assert not is_full_card_url("https://a.example")


async def test_card_fetch_has_a_deadline() -> None:
    async with bad_card_server() as base:
        with pytest.raises(InvalidParameter) as caught:
            await resolve_card(base + "/hang/card.json", policy=OPEN, fetch_timeout_s=0.3)
    assert "card_url" in message(caught.value)
    assert "timed out after 0.3 s" in message(caught.value)


async def test_base_url_with_a_path_and_headers() -> None:
    async with a2a_peer(api_key=("X-K", "v")) as peer:
        found = await resolve_card(peer.base_url + "/", policy=OPEN, headers={"X-K": "v"})
        assert found.url == peer.card_url and found.name == "Echo Agent"
        assert [s["id"] for s in found.skills] == ["echo", "task"]
        with pytest.raises(InvalidParameter) as caught:
            await resolve_card(peer.base_url, policy=OPEN)
        assert "HTTP 401" in message(caught.value)


async def test_injected_transport_and_allowed_host() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.path == "/agents/x/.well-known/agent-card.json":
            return httpx.Response(404)
        return httpx.Response(200, json=CARD)

    policy = OutboundPolicy(allow_hosts=frozenset({"agent.example:443"}))
    found = await resolve_card("https://agent.example/agents/x", policy=policy,
                               transport=httpx.MockTransport(handler))
    assert seen == ["https://agent.example/agents/x/.well-known/agent-card.json",
                    "https://agent.example/agents/x/.well-known/agent.json"]
    assert found.name == "Remote" and found.url == seen[1]
    assert found.card["supportedInterfaces"][0]["protocolBinding"] == "HTTP+JSON"


async def test_guard_refuses_before_any_request() -> None:
    calls: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: calls.append(r) or httpx.Response(200, json=CARD))
    for url in ("http://127.0.0.1:9/card.json", "http://169.254.169.254/latest",
                "http://localhost/x", "http://10.0.0.1/x"):
        with pytest.raises(InvalidParameter) as caught:
            await resolve_card(url, policy=OutboundPolicy(), transport=transport)
        assert "outbound guard" in message(caught.value), url
    assert calls == []
