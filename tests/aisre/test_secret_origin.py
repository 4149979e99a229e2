"""A stored secret never follows a new URL: moving an MCP server's
`url` or an A2A agent's `card_url` to another origin drops the stored headers / auth unless
the same update supplies them anew, and nothing stored is sent to the new origin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.aisre import a2a_agent, mcp_server
from tests.aisre.a2a_peers import a2a_peer
from tests.aisre.mcp_peers import BEARER, RequireBearer, ops_server
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.loopback import serve_asgi

pytestmark = pytest.mark.anyio
MASK = "******"


@pytest.fixture(scope="module")
def two_bearer_servers() -> Iterator[tuple[str, str]]:
    """Two MCP servers on different origins (ports) that both accept the same bearer: if a
    stored header followed the URL, the second would answer; it must answer 401."""
    with (serve_asgi(RequireBearer(ops_server().streamable_http_app(), BEARER)) as first,
          serve_asgi(RequireBearer(ops_server().streamable_http_app(), BEARER)) as second):
        yield f"{first}/mcp", f"{second}/mcp"


async def _mcp_row(api: Api, server_id: str) -> Any:
    async with api.runtime.db.connect() as conn:
        return (await conn.execute(
            select(mcp_server).where(mcp_server.c.server_id == server_id))).one()


async def _update(api: Api, who: Person, path: str, body: dict[str, Any]) -> Any:
    return await api.call(path, body, key=who.key)


async def test_mcp_headers_dropped_when_url_changes_origin(
    api: Api, owner: Person, two_bearer_servers: tuple[str, str]
) -> None:
    first, second = two_bearer_servers
    made = await api.call("/safari/mcp/server/create", {
        "server_name": "ops", "description": "Ops tools", "url": first,
        "headers": {"Authorization": f"Bearer {BEARER}"}}, key=owner.key)
    server_id = made.data["server_id"]
    upd = "/safari/mcp/server/update"
    get = "/safari/mcp/server/get"

    # Same origin, another path: the secret stays.
    same = await _update(api, owner, upd, {"server_id": server_id, "url": first + "?v=2"})
    assert same.data["headers"] == {"Authorization": MASK}

    # A masked value cannot carry the old secret to the new origin.
    masked = await _update(api, owner, upd, {
        "server_id": server_id, "url": second, "headers": {"Authorization": MASK}})
    assert (masked.status, masked.code) == (400, "InvalidParameter")
    assert "headers" in masked.message
    assert (await _mcp_row(api, server_id)).url == first + "?v=2"

    # Only the URL changes: the stored headers are dropped, and `get` sends none there.
    moved = await _update(api, owner, upd, {"server_id": server_id, "url": second})
    assert moved.status == 200, moved.body
    assert moved.data["headers"] == {}
    row = await _mcp_row(api, server_id)
    assert row.headers_encrypted == "" and row.url == second
    got = await api.call(get, {"server_id": server_id}, key=owner.key)
    assert "HTTP 401" in got.data["list_error"]

    # Supplied anew in the same update, they are kept and used.
    anew = await _update(api, owner, upd, {
        "server_id": server_id, "url": first, "headers": {"Authorization": f"Bearer {BEARER}"}})
    assert anew.data["headers"] == {"Authorization": MASK}
    got = await api.call(get, {"server_id": server_id}, key=owner.key)
    assert got.data["list_error"] == "" and got.data["tool_count"] == 5


async def _agent_row(api: Api, agent_id: str) -> Any:
    async with api.runtime.db.connect() as conn:
        return (await conn.execute(
            select(a2a_agent).where(a2a_agent.c.agent_id == agent_id))).one()


async def test_a2a_auth_dropped_when_card_url_changes_origin(api: Api, owner: Person) -> None:
    upd = "/safari/a2a-agent/update"
    async with (a2a_peer(bearer="s3cret-token") as first,
                a2a_peer(bearer="s3cret-token") as second, a2a_peer() as open_peer):
        made = await api.call("/safari/a2a-agent/create", {
            "agent_name": "Echo", "card_url": first.base_url, "auth_type": "bearer",
            "auth_config": {"token": "s3cret-token"}}, key=owner.key)
        assert made.status == 200, made.body
        agent_id = made.data["agent_id"]

        # The update's own card fetch must not carry the stored token to another origin:
        # the second agent wants the same token, so it answers 401 only if none was sent.
        leak = await _update(api, owner, upd, {"agent_id": agent_id,
                                               "card_url": second.base_url})
        assert (leak.status, leak.code) == (400, "InvalidParameter")
        assert "HTTP 401" in leak.message
        masked = await _update(api, owner, upd, {
            "agent_id": agent_id, "card_url": second.base_url, "auth_config": {"token": MASK}})
        assert masked.status == 400 and "auth_config.token" in masked.message
        row = await _agent_row(api, agent_id)
        assert (row.card_url, row.auth_type) == (first.base_url, "bearer")

        # Moving to an open agent drops the stored auth.
        moved = await _update(api, owner, upd, {"agent_id": agent_id,
                                                "card_url": open_peer.base_url})
        assert moved.status == 200, moved.body
        assert (moved.data["auth_type"], moved.data["auth_config"]) == ("none", {})
        row = await _agent_row(api, agent_id)
        assert row.auth_type == "none" and row.auth_config_encrypted == ""

        # Supplied anew with the move, the secret is used and kept.
        anew = await _update(api, owner, upd, {
            "agent_id": agent_id, "card_url": second.base_url, "auth_type": "bearer",
            "auth_config": {"token": "s3cret-token"}})
        assert anew.status == 200, anew.body
        assert anew.data["auth_config"] == {"token": MASK}
        # Same origin, another path: the secret stays and is sent.
        same = await _update(api, owner, upd, {"agent_id": agent_id,
                                               "card_url": second.card_url})
        assert same.status == 200, same.body
        assert same.data["auth_type"] == "bearer"
