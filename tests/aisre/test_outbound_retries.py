"""Retries as the MCP and A2A adapters see them: their GETs (an MCP SSE stream, an agent card)
are sent again after a 503; their POSTs (JSON-RPC requests, message sends) never are."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from dutyline.aisre.a2a.auth import AgentAuth
from dutyline.aisre.a2a.card import resolve_card
from dutyline.aisre.a2a.gateway import A2aError, A2aGateway
from dutyline.aisre.a2a.service import A2aTarget
from dutyline.aisre.mcp.gateway import McpError, McpGateway, McpTarget
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.outbound_retry import RetryPolicy
from tests.aisre.mcp_peers import ops_server
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.retry_timer import FakeTimer

pytestmark = pytest.mark.anyio

CARD = {
    "name": "Remote", "description": "d", "version": "1",
    "supportedInterfaces": [{"url": "https://agent.example/rpc", "protocolBinding": "JSONRPC",
                             "protocolVersion": "1.0"}],
    "capabilities": {}, "skills": [{"id": "s", "name": "S", "description": "", "tags": []}],
}


def retrying(retries: list[str]) -> OutboundPolicy:
    return OutboundPolicy(
        allow_private=True, retry=RetryPolicy(timer=FakeTimer()), on_retry=retries.append
    )


class FailFirst:
    """Answers 503 to the first `times` requests of `method`, counting every request."""

    def __init__(self, app: ASGIApp, method: str, times: int) -> None:
        self.app, self.method, self.left = app, method, times
        self.seen: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(scope["method"])
            if scope["method"] == self.method and self.left > 0:
                self.left -= 1
                await PlainTextResponse("busy", 503)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@pytest.fixture
def flaky_sse() -> Iterator[tuple[str, FailFirst]]:
    app = FailFirst(ops_server().sse_app(), "GET", 1)
    with serve_asgi(app) as base:
        yield f"{base}/sse", app


@pytest.fixture
def flaky_http() -> Iterator[tuple[str, FailFirst]]:
    app = FailFirst(ops_server().streamable_http_app(), "POST", 1)
    with serve_asgi(app) as base:
        yield f"{base}/mcp", app


async def test_mcp_sse_stream_is_opened_again_after_a_503(
    flaky_sse: tuple[str, FailFirst],
) -> None:
    url, app = flaky_sse
    retries: list[str] = []
    gateway = McpGateway(retrying(retries))
    tools = await gateway.list_tools(McpTarget("mcp_x", url, "sse", connect_timeout=5))
    assert "echo" in {t.name for t in tools}
    assert app.seen[:2] == ["GET", "GET"] and retries == ["http_503"]


async def test_mcp_json_rpc_post_is_not_sent_again(flaky_http: tuple[str, FailFirst]) -> None:
    url, app = flaky_http
    retries: list[str] = []
    gateway = McpGateway(retrying(retries))
    with pytest.raises(McpError) as failed:
        await gateway.list_tools(McpTarget("mcp_x", url, "streamable-http", connect_timeout=5))
    assert failed.value.kind == "http" and "503" in failed.value.reason
    assert app.seen.count("POST") == 1 and retries == []


async def test_agent_card_fetch_is_retried_after_a_503() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        return httpx.Response(503) if len(calls) == 1 else httpx.Response(200, json=CARD)

    retries: list[str] = []
    found = await resolve_card("https://agent.example/card.json", policy=retrying(retries),
                               transport=httpx.MockTransport(handler))
    assert found.name == "Remote" and calls == ["GET", "GET"] and retries == ["http_503"]


async def test_a2a_message_send_is_not_sent_again() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        return httpx.Response(503, text="busy")

    agent = A2aTarget(agent_id="a2a_x", agent_name="Remote", instructions="", card=CARD,
                      skills=[], auth=AgentAuth("none"), streaming=False)
    retries: list[str] = []
    gateway = A2aGateway(retrying(retries), timeout=5, transport=httpx.MockTransport(handler))
    with pytest.raises(A2aError):
        await gateway.send(agent, "do it once")
    assert calls == ["POST"] and retries == []
