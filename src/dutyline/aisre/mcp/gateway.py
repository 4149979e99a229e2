"""The one adapter over the official `mcp` client: probe a server's tools and call them.

Used by `/safari/mcp/server/get` (the live probe) and by the agent loop. Every HTTP request
goes through the outbound guard: the `mcp` transports take an httpx2 client (streamable HTTP)
or a factory of them (SSE), and both get `guarded_httpx2_client`, so the address is checked at
connect time and on every redirect the SDK follows.

Failures of the SDK arrive as (nested) exception groups from its anyio task groups; callers get
one `McpError` with a `kind` and a reason a person can act on instead."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import httpx2
import mcp_types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as SdkMcpError
from pydantic import ValidationError

from dutyline import __version__
from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, guarded_httpx2_client

T = TypeVar("T")
ErrorKind = Literal[
    "blocked", "refused", "timeout", "unauthorized", "http", "protocol", "unsupported", "error"
]

DEFAULT_MAX_OUTPUT_CHARS = 20_000
MAX_TOOLS = 1_000
MAX_TOOL_PAGES = 50
# Closing a session (the streamable-HTTP DELETE) after the answer is in gets this long at most.
_CLOSE_GRACE_S = 2.0
_CLIENT_INFO = mcp_types.Implementation(name="dutyline", version=__version__)


class McpError(Exception):
    """One clear failure of an MCP server: `kind` for code, `reason` for people."""

    def __init__(self, kind: ErrorKind, reason: str) -> None:
        self.kind = kind
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class McpTarget:
    """What the gateway needs to reach one server; headers are the opened secrets."""

    server_id: str
    url: str
    transport: str
    headers: Mapping[str, str] = field(default_factory=dict)
    connect_timeout: float = 10.0
    call_timeout: float = 60.0


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer as text for the model; `is_error` when the tool itself failed."""

    text: str
    is_error: bool
    truncated: bool = False
    structured: Any = None


class McpGateway:
    def __init__(
        self,
        policy: OutboundPolicy,
        *,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._policy = policy
        self._max_output = max_output_chars
        # A replacement network for tests of third-party behaviour; URLs are still guarded.
        self._transport = transport

    async def list_tools(self, server: McpTarget) -> list[Tool]:
        """initialize + tools/list, following the cursor through every page."""

        async def work(session: ClientSession) -> list[Tool]:
            tools: list[Tool] = []
            cursor: str | None = None
            seen: set[str] = set()
            for _ in range(MAX_TOOL_PAGES):
                params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools.extend(
                    Tool(name=t.name, description=t.description or "",
                         input_schema=dict(t.input_schema or {}))
                    for t in page.tools
                )
                cursor = page.next_cursor
                # A cursor seen before would loop forever; stop at what we have.
                if not cursor or cursor in seen or len(tools) >= MAX_TOOLS:
                    break
                seen.add(cursor)
            return tools[:MAX_TOOLS]

        return await self._run(server, work, "tools/list")

    async def call_tool(
        self, server: McpTarget, name: str, arguments: Mapping[str, Any] | None = None
    ) -> ToolResult:
        async def work(session: ClientSession) -> ToolResult:
            result = await session.call_tool(
                name, dict(arguments or {}), read_timeout_seconds=server.call_timeout
            )
            if not isinstance(result, mcp_types.CallToolResult):
                raise McpError("protocol", f"tools/call answered {type(result).__name__}")
            return self._render(result)

        return await self._run(server, work, f"tools/call {name}")

    # --- the session --------------------------------------------------------------------

    async def _run(
        self, server: McpTarget, work: Callable[[ClientSession], Awaitable[T]], what: str
    ) -> T:
        if server.transport not in ("streamable-http", "sse"):
            raise McpError(
                "unsupported",
                f"a {server.transport} server runs on the customer's runner and cannot be "
                "reached from here",
            )
        statuses: list[int] = []
        phase = "initialize"
        done = False
        result: Any = None
        # One scope bounds the whole exchange; its deadline moves from the connect budget to
        # the call budget once the handshake is done (task groups inside stay nested in it).
        scope = anyio.CancelScope(deadline=anyio.current_time() + server.connect_timeout)
        try:
            with scope:
                async with self._streams(server, statuses) as (read, write), ClientSession(
                    read, write, read_timeout_seconds=server.call_timeout,
                    client_info=_CLIENT_INFO,
                ) as session:
                    await session.initialize()
                    phase = what
                    scope.deadline = anyio.current_time() + server.call_timeout
                    result = await work(session)
                    done = True
                    scope.deadline = anyio.current_time() + _CLOSE_GRACE_S
        except McpError:
            raise
        except Exception as exc:
            if done:  # the answer is in; only the goodbye failed
                return result  # type: ignore[no-any-return]
            raise self._explain(exc, statuses, server, phase) from None
        if not done:
            budget = server.connect_timeout if phase == "initialize" else server.call_timeout
            raise McpError("timeout", f"timed out: no answer to {phase} within {budget:g} s")
        return result  # type: ignore[no-any-return]

    @asynccontextmanager
    async def _streams(
        self, server: McpTarget, statuses: list[int]
    ) -> AsyncIterator[tuple[Any, Any]]:
        async def note_status(response: httpx2.Response) -> None:
            # The SDK folds HTTP errors into generic JSON-RPC errors; keep the status for the
            # explanation (a 401 should say so).
            if response.status_code >= 400:
                statuses.append(response.status_code)

        # Only the SDK's GETs (the SSE stream) are ever retried, and within connect_timeout,
        # so a probe still gives up when the handshake's budget is spent. Its JSON-RPC POSTs
        # are not: a repeated tools/call would run the tool twice.
        policy = self._policy.retry_within(server.connect_timeout)

        def client(headers: Mapping[str, str] | None = None) -> httpx2.AsyncClient:
            made = guarded_httpx2_client(
                policy,
                timeout=httpx2.Timeout(
                    server.call_timeout, connect=server.connect_timeout,
                    read=server.call_timeout + server.connect_timeout,
                ),
                headers=headers,
                transport=self._transport,
            )
            made.event_hooks = {"request": [], "response": [note_status]}
            return made

        if server.transport == "sse":

            def factory(
                headers: dict[str, str] | None = None,
                timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None,
            ) -> httpx2.AsyncClient:
                return client(headers)

            async with sse_client(
                server.url, headers=dict(server.headers), timeout=server.connect_timeout,
                sse_read_timeout=server.call_timeout + server.connect_timeout,
                httpx_client_factory=factory,
            ) as (read, write):
                yield read, write
        else:
            async with client(server.headers) as http, streamable_http_client(
                server.url, http_client=http
            ) as streams:
                yield streams[0], streams[1]

    # --- results and errors -------------------------------------------------------------

    def _render(self, result: mcp_types.CallToolResult) -> ToolResult:
        parts: list[str] = []
        for block in result.content:
            if isinstance(block, mcp_types.TextContent):
                parts.append(block.text)
            elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
                parts.append(f"[{block.type} {block.mime_type}, {len(block.data)} base64 chars]")
            else:
                parts.append(json.dumps(block.model_dump(mode="json", exclude_none=True)))
        text = "\n".join(parts)
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content)
        truncated = len(text) > self._max_output
        if truncated:
            dropped = len(text) - self._max_output
            text = f"{text[: self._max_output]}\n[truncated: {dropped} more characters]"
        return ToolResult(
            text=text, is_error=bool(result.is_error), truncated=truncated,
            structured=None if truncated else result.structured_content,
        )

    def _explain(
        self, exc: BaseException, statuses: list[int], server: McpTarget, phase: str
    ) -> McpError:
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, OutboundBlocked):
                return McpError("blocked", f"address refused: {leaf.reason}")
        status = next((s for s in statuses if s in (401, 403)), statuses[0] if statuses else 0)
        for leaf in leaves:
            if isinstance(leaf, httpx2.HTTPStatusError):
                status = leaf.response.status_code
        if status in (401, 403):
            return McpError(
                "unauthorized",
                f"HTTP {status}: the server refused the credentials; check the headers",
            )
        if status:
            return McpError("http", f"HTTP {status} from the server during {phase}")
        for leaf in leaves:
            if isinstance(leaf, httpx2.TimeoutException | TimeoutError) or (
                isinstance(leaf, SdkMcpError) and leaf.code == mcp_types.REQUEST_TIMEOUT
            ):
                return McpError("timeout", f"timed out during {phase}")
        for leaf in leaves:
            if isinstance(leaf, httpx2.ConnectError | ConnectionError):
                return McpError(
                    "refused",
                    f"connection refused: cannot connect to {_origin(server.url)}",
                )
        for leaf in leaves:
            if isinstance(leaf, SdkMcpError | ValidationError | ValueError | httpx2.HTTPError):
                return McpError("protocol", f"protocol error during {phase}: {_short(leaf)}")
        return McpError("error", f"{type(leaves[0]).__name__} during {phase}: {_short(leaves[0])}")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _short(exc: BaseException, limit: int = 300) -> str:
    text = exc.error.message if isinstance(exc, SdkMcpError) else str(exc)
    text = " ".join(text.split())
    return text[:limit] or type(exc).__name__


def _origin(url: str) -> str:
    try:
        parsed = httpx2.URL(url)
    except Exception:
        return "the server"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.host}{port}"
