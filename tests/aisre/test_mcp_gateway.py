"""McpGateway against real MCP servers on loopback: tools, calls, timeouts, clear errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dutyline.aisre.mcp.gateway import McpError, McpGateway, McpTarget
from dutyline.kit.outbound import OutboundPolicy
from tests.aisre.mcp_peers import BEARER, Peers, mcp_peers

pytestmark = pytest.mark.anyio

OPEN = McpGateway(OutboundPolicy(allow_private=True), max_output_chars=1000)


@pytest.fixture(scope="module")
def peers() -> Iterator[Peers]:
    with mcp_peers() as running:
        yield running


def target(url: str, transport: str = "streamable-http", **kw: object) -> McpTarget:
    return McpTarget(server_id="mcp_test", url=url, transport=transport, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_lists_tools_with_schemas_over_both_transports(
    peers: Peers, transport: str
) -> None:
    url = peers.http if transport == "streamable-http" else peers.sse
    tools = await OPEN.list_tools(target(url, transport))
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"echo", "add", "boom", "slow", "big"}
    assert by_name["echo"].description == "Echo the text back."
    assert by_name["add"].input_schema["required"] == ["a", "b"]
    assert by_name["add"].input_schema["properties"]["a"]["type"] == "integer"


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_calls_a_tool(peers: Peers, transport: str) -> None:
    url = peers.http if transport == "streamable-http" else peers.sse
    result = await OPEN.call_tool(target(url, transport), "add", {"a": 2, "b": 40})
    assert (result.text, result.is_error, result.truncated) == ("42", False, False)


async def test_follows_tools_list_pagination(peers: Peers) -> None:
    tools = await OPEN.list_tools(target(peers.paged))
    assert [t.name for t in tools] == ["alpha", "beta", "gamma", "delta", "epsilon"]


async def test_a_failing_tool_is_a_result_marked_as_error(peers: Peers) -> None:
    result = await OPEN.call_tool(target(peers.http), "boom", {})
    assert result.is_error and "boom" in result.text


async def test_long_output_is_truncated(peers: Peers) -> None:
    result = await OPEN.call_tool(target(peers.http), "big", {"size": 5000})
    assert result.truncated and result.text.startswith("x" * 1000)
    assert result.text.endswith("[truncated: 4000 more characters]")
    assert result.structured is None


async def test_bearer_header_from_the_target(peers: Peers) -> None:
    with pytest.raises(McpError) as denied:
        await OPEN.list_tools(target(peers.bearer))
    assert denied.value.kind == "unauthorized" and "HTTP 401" in denied.value.reason
    tools = await OPEN.list_tools(
        target(peers.bearer, headers={"Authorization": f"Bearer {BEARER}"})
    )
    assert len(tools) == 5
    result = await OPEN.call_tool(
        target(peers.bearer, headers={"Authorization": f"Bearer {BEARER}"}), "echo",
        {"text": "hi"},
    )
    assert result.text == "hi"


async def test_slow_tool_call_times_out_with_one_clear_error(peers: Peers) -> None:
    with pytest.raises(McpError) as timed_out:
        await OPEN.call_tool(target(peers.http, call_timeout=0.5), "slow", {"seconds": 5})
    assert timed_out.value.kind == "timeout"
    assert "tools/call slow" in timed_out.value.reason
    assert not isinstance(timed_out.value.__cause__, BaseExceptionGroup)


async def test_initialize_that_never_answers_times_out_within_connect_timeout(
    peers: Peers,
) -> None:
    for transport in ("streamable-http", "sse"):
        with pytest.raises(McpError) as timed_out:
            await OPEN.list_tools(target(peers.hang, transport, connect_timeout=0.5))
        assert timed_out.value.kind == "timeout"
        assert "initialize" in timed_out.value.reason


async def test_connection_refused(peers: Peers) -> None:
    for transport in ("streamable-http", "sse"):
        with pytest.raises(McpError) as refused:
            await OPEN.list_tools(target(peers.closed, transport, connect_timeout=2))
        assert refused.value.kind == "refused", refused.value.reason
        assert "connection refused" in refused.value.reason


async def test_not_an_mcp_server_is_a_protocol_error(peers: Peers) -> None:
    with pytest.raises(McpError) as wrong:
        await OPEN.list_tools(target(peers.html, connect_timeout=2))
    assert wrong.value.kind == "protocol" and "protocol error" in wrong.value.reason


async def test_guard_refuses_private_addresses_before_connecting(peers: Peers) -> None:
    strict = McpGateway(OutboundPolicy(allow_private=False))
    for transport, url in (("streamable-http", peers.http), ("sse", peers.sse),
                           ("streamable-http", "http://169.254.169.254/mcp")):
        with pytest.raises(McpError) as blocked:
            await strict.list_tools(target(url, transport))
        assert blocked.value.kind == "blocked", blocked.value.reason


async def test_allow_hosts_lets_one_peer_through(peers: Peers) -> None:
    host = peers.http.removeprefix("http://").removesuffix("/mcp")
    one = McpGateway(OutboundPolicy(allow_hosts=frozenset({host})))
    assert len(await one.list_tools(target(peers.http))) == 5
    with pytest.raises(McpError):
        await one.list_tools(target(peers.paged))


async def test_stdio_servers_are_not_reachable_from_here() -> None:
    with pytest.raises(McpError) as unsupported:
        await OPEN.list_tools(target("", "stdio"))
    assert unsupported.value.kind == "unsupported"
