"""Real MCP servers for the tests, built with the `mcp` package and served by uvicorn on
loopback (each in its own thread, see tests/fixtures/loopback.py).

    with mcp_peers() as peers:
        peers.http      # streamable HTTP at /mcp: echo, add, boom (fails), slow, big
        peers.sse       # the same server over SSE at /sse
        peers.bearer    # streamable HTTP that answers 401 without `Authorization: Bearer s3cret`
        peers.paged     # low-level server listing 5 tools over 3 pages
        peers.hang      # accepts connections and never answers (initialize times out)
        peers.html      # a web page, not an MCP server (protocol error)
        peers.closed    # a loopback port nothing listens on (connection refused)
        peers.counted   # like http, counting the requests it gets (peers.counter.count)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.fixtures.loopback import serve_asgi
from tests.fixtures.server import free_port

BEARER = "s3cret"


def ops_server() -> MCPServer:
    server = MCPServer("ops", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def boom() -> str:
        """Always fails."""
        raise ValueError("kaput")

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answers after a while."""
        await anyio.sleep(seconds)
        return "finally"

    @server.tool()
    def big(size: int) -> str:
        """A long answer."""
        return "x" * size

    return server


def paged_server() -> Server[Any]:
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    pages = {None: (0, "p2"), "p2": (2, "p3"), "p3": (4, None)}

    async def list_tools(
        ctx: Any, params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        start, next_cursor = pages[params.cursor if params else None]
        tools = [
            mcp_types.Tool(name=n, description=f"tool {n}",
                           input_schema={"type": "object", "properties": {}})
            for n in names[start:start + 2]
        ]
        return mcp_types.ListToolsResult(tools=tools, next_cursor=next_cursor)

    return Server("paged", on_list_tools=list_tools)


class RequireBearer:
    """401 for any request without the expected bearer token (as an auth proxy would)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != (
            self.expected
        ):
            await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class CountRequests:
    """Counts the HTTP requests that reach the wrapped app (to prove nobody called it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.count += 1
        await self.app(scope, receive, send)


def hanging_app() -> Starlette:
    async def hang(_: Request) -> Response:
        await anyio.sleep(3600)
        return PlainTextResponse("late")

    return Starlette(routes=[Route("/mcp", hang, methods=["GET", "POST", "DELETE"])])


def html_app() -> Starlette:
    async def page(_: Request) -> Response:
        return HTMLResponse("<html><body>not MCP</body></html>")

    return Starlette(routes=[Route("/mcp", page, methods=["GET", "POST", "DELETE"])])


@dataclass(frozen=True)
class Peers:
    http: str
    sse: str
    bearer: str
    paged: str
    hang: str
    html: str
    closed: str
    counted: str
    counter: CountRequests


@contextlib.contextmanager
def mcp_peers() -> Iterator[Peers]:
    with (
        serve_asgi(ops_server().streamable_http_app()) as http,
        serve_asgi(ops_server().sse_app()) as sse,
        serve_asgi(RequireBearer(ops_server().streamable_http_app(), BEARER)) as bearer,
        serve_asgi(paged_server().streamable_http_app()) as paged,
        serve_asgi(hanging_app()) as hang,
        serve_asgi(html_app()) as html,
        serve_asgi(counter := CountRequests(ops_server().streamable_http_app())) as counted,
    ):
        yield Peers(
            http=f"{http}/mcp", sse=f"{sse}/sse", bearer=f"{bearer}/mcp",
            paged=f"{paged}/mcp", hang=f"{hang}/mcp", html=f"{html}/mcp",
            closed=f"http://127.0.0.1:{free_port()}/mcp",
            counted=f"{counted}/mcp", counter=counter,
        )
