"""/safari/mcp/server/* through the HTTP API, probing real MCP servers on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.aisre import mcp_server
from dutyline.db.tables.platform import audit_log
from tests.aisre.mcp_peers import BEARER, Peers, mcp_peers
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api

pytestmark = pytest.mark.anyio

RECORD_FIELDS = {
    "server_id", "account_id", "team_id", "can_edit", "server_name", "description",
    "transport", "url", "environment_kind", "environment_id", "status", "connect_timeout",
    "call_timeout", "tool_count", "tools", "headers", "auth_mode", "list_error", "probed_at",
    "created_by", "created_at", "updated_at",
}


@pytest.fixture(scope="module")
def peers() -> Iterator[Peers]:
    with mcp_peers() as running:
        yield running


async def create(api: Api, who: Person, **fields: Any) -> Any:
    body = {"server_name": "ops", "description": "Ops tools", "url": "https://8.8.8.8/mcp",
            **fields}
    return await api.call("/safari/mcp/server/create", body, key=who.key)


async def test_create_and_get_record_fields_probing_live(
    api: Api, owner: Person, peers: Peers
) -> None:
    made = await create(api, owner, url=peers.http, connect_timeout=0, call_timeout=0)
    assert made.status == 200, made.body
    record = made.data
    assert set(record) == RECORD_FIELDS
    assert record["server_id"].startswith("mcp_")
    assert (record["account_id"], record["team_id"], record["can_edit"]) == (
        owner.account_id, 0, True)
    assert (record["transport"], record["status"], record["auth_mode"]) == (
        "streamable-http", "enabled", "shared")
    assert (record["connect_timeout"], record["call_timeout"]) == (10, 60)
    assert record["created_by"] == owner.person_id
    assert record["created_at"] > 1_600_000_000_000  # milliseconds
    assert (record["tools"], record["tool_count"], record["probed_at"]) == ([], 0, 0)

    got = await api.call("/safari/mcp/server/get", {"server_id": record["server_id"]},
                         key=owner.key)
    assert got.status == 200
    probed = got.data
    assert probed["tool_count"] == 5 and probed["list_error"] == ""
    echo = next(t for t in probed["tools"] if t["name"] == "echo")
    assert echo["description"] == "Echo the text back."
    assert echo["input_schema"]["required"] == ["text"]
    assert probed["probed_at"] >= record["created_at"]
    # The probe is stored: list shows the summary without contacting the server.
    listed = await api.call("/safari/mcp/server/list", {}, key=owner.key)
    assert listed.data["servers"][0]["tool_count"] == 5


async def test_get_over_sse_and_through_pages(api: Api, owner: Person, peers: Peers) -> None:
    sse = (await create(api, owner, server_name="sse-ops", transport="sse", url=peers.sse)).data
    paged = (await create(api, owner, server_name="paged", url=peers.paged)).data
    got = await api.call("/safari/mcp/server/get", {"server_id": sse["server_id"]}, key=owner.key)
    assert got.data["tool_count"] == 5 and got.data["transport"] == "sse"
    got = await api.call("/safari/mcp/server/get", {"server_id": paged["server_id"]},
                         key=owner.key)
    assert [t["name"] for t in got.data["tools"]] == ["alpha", "beta", "gamma", "delta",
                                                       "epsilon"]


async def test_get_reports_list_error_and_still_answers(
    api: Api, owner: Person, peers: Peers
) -> None:
    cases = {
        "refused": (peers.closed, "connection refused"),
        "unauth": (peers.bearer, "HTTP 401"),
        "hang": (peers.hang, "timed out"),
        "html": (peers.html, "protocol error"),
    }
    for name, (url, reason) in cases.items():
        made = await create(api, owner, server_name=name, url=url, connect_timeout=1)
        got = await api.call("/safari/mcp/server/get", {"server_id": made.data["server_id"]},
                             key=owner.key)
        assert got.status == 200, got.body
        assert reason in got.data["list_error"], (name, got.data["list_error"])
        assert got.data["tool_count"] == 0 and got.data["probed_at"] > 0


async def test_bearer_header_is_sealed_masked_and_used(
    api: Api, owner: Person, peers: Peers
) -> None:
    made = await create(api, owner, url=peers.bearer,
                        headers={"Authorization": f"Bearer {BEARER}", "X-Team": "sre"})
    record = made.data
    assert record["headers"] == {"Authorization": "******", "X-Team": "******"}
    async with api.runtime.db.connect() as conn:
        stored = (await conn.execute(select(mcp_server).where(
            mcp_server.c.server_id == record["server_id"]))).one()
    assert BEARER not in stored.headers_encrypted and "sre" not in stored.headers_encrypted
    assert api.runtime.secrets.open(stored.headers_encrypted).count(BEARER) == 1

    got = await api.call("/safari/mcp/server/get", {"server_id": record["server_id"]},
                         key=owner.key)
    assert got.data["list_error"] == "" and got.data["tool_count"] == 5
    assert BEARER not in str(got.body)

    # Sending the masked value back keeps the secret; leaving a header out removes it.
    updated = await api.call("/safari/mcp/server/update", {
        "server_id": record["server_id"], "headers": {"Authorization": "******"},
        "description": "still works"}, key=owner.key)
    assert updated.data["headers"] == {"Authorization": "******"}
    got = await api.call("/safari/mcp/server/get", {"server_id": record["server_id"]},
                         key=owner.key)
    assert got.data["list_error"] == ""
    wrong = await api.call("/safari/mcp/server/update", {
        "server_id": record["server_id"], "headers": {"Authorization": "Bearer nope"}},
        key=owner.key)
    assert wrong.status == 200
    got = await api.call("/safari/mcp/server/get", {"server_id": record["server_id"]},
                         key=owner.key)
    assert "HTTP 401" in got.data["list_error"]
    masked_new = await api.call("/safari/mcp/server/update", {
        "server_id": record["server_id"], "headers": {"X-Other": "******"}}, key=owner.key)
    assert masked_new.status == 400 and "headers" in masked_new.message


async def test_enable_disable_contract_and_audit_without_secrets(
    api: Api, owner: Person
) -> None:
    made = await create(api, owner, headers={"Authorization": "Bearer top-secret-value"})
    server_id = made.data["server_id"]
    again = await api.call("/safari/mcp/server/enable", {"server_id": server_id}, key=owner.key)
    assert again.status == 400 and again.code == "InvalidParameter"
    off = await api.call("/safari/mcp/server/disable", {"server_id": server_id}, key=owner.key)
    assert off.status == 200 and off.body["data"] is None
    off_again = await api.call("/safari/mcp/server/disable", {"server_id": server_id},
                               key=owner.key)
    assert off_again.status == 400 and off_again.code == "InvalidParameter"
    on = await api.call("/safari/mcp/server/enable", {"server_id": server_id}, key=owner.key)
    assert on.status == 200 and "data" in on.body and on.body["data"] is None
    for header in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
        assert header in on.headers
    await api.call("/safari/mcp/server/update", {
        "server_id": server_id, "headers": {"Authorization": "Bearer another-secret"}},
        key=owner.key)
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.account_id == owner.account_id))).all()
    operations = [r.operation for r in rows]
    assert operations.count("safari.mcp.server.enable") == 2  # the refused one too
    assert "safari.mcp.server.disable" in operations
    dump = " ".join(str(tuple(r)) for r in rows)
    assert "top-secret-value" not in dump and "another-secret" not in dump
    enabled = [r for r in rows if r.operation == "safari.mcp.server.enable"]
    assert any(server_id in str(tuple(r)) for r in enabled)


async def test_description_may_be_empty(api: Api, owner: Person) -> None:
    # The vendor's command-line client sends `"description": ""` when given none.
    made = await create(api, owner, server_name="blank", description="")
    assert made.status == 200, made.body
    assert made.data["description"] == ""
    spaces = await create(api, owner, server_name="spaces", description="   ")
    assert spaces.status == 200 and spaces.data["description"] == ""
    body = {"server_name": "left-out", "url": "https://8.8.8.8/mcp"}
    left_out = await api.call("/safari/mcp/server/create", body, key=owner.key)
    assert left_out.status == 200 and left_out.data["description"] == ""
    described = await create(api, owner, server_name="described", description=" Ops ")
    assert described.data["description"] == "Ops"
    server_id = described.data["server_id"]
    cleared = await api.call("/safari/mcp/server/update", {
        "server_id": server_id, "description": ""}, key=owner.key)
    assert cleared.status == 200, cleared.body
    got = await api.call("/safari/mcp/server/get", {"server_id": server_id}, key=owner.key)
    assert got.data["description"] == ""


async def test_validation_names_the_field(api: Api, owner: Person) -> None:
    cases = [
        ({"server_name": "1ops"}, "server_name"),
        ({"server_name": "ops tools"}, "server_name"),
        ({"server_name": "x" * 65}, "server_name"),
        ({"description": "d" * 1025}, "description"),
        ({"transport": "websocket"}, "transport"),
        ({"transport": "stdio"}, "transport"),
        ({"url": ""}, "url"),
        ({"url": "ftp://example.com/mcp"}, "url"),
        ({"connect_timeout": -1}, "connect_timeout"),
        ({"connect_timeout": 121}, "connect_timeout"),
        ({"call_timeout": 601}, "call_timeout"),
        ({"auth_mode": "per_user"}, "auth_mode"),
        ({"headers": {"Host": "evil"}}, "headers"),
        ({"headers": {"bad name": "v"}}, "headers"),
        ({"headers": {"X-A": "v\r\nX-B: w"}}, "headers"),
        ({"headers": {"X-A": "******"}}, "headers"),
        ({"team_id": -1}, "team_id"),
        ({"environment_kind": "mars"}, "environment_kind"),
    ]
    for fields, field in cases:
        reply = await create(api, owner, **fields)
        assert reply.status == 400, fields
        assert reply.code == "InvalidParameter", (fields, reply.body)
        assert field in reply.message, (fields, reply.message)
    node = await api.call("/safari/worknode/create", {"name": "runner-1"}, key=owner.key)
    stdio = await create(api, owner, server_name="local", transport="stdio",
                         environment_kind="byoc", environment_id=node.data["worknode_id"],
                         url="")
    assert stdio.status == 200 and stdio.data["environment_kind"] == "byoc"
    got = await api.call("/safari/mcp/server/get", {"server_id": stdio.data["server_id"]},
                         key=owner.key)
    assert "customer's runner" in got.data["list_error"]


async def test_names_unique_per_account_case_insensitively(
    api: Api, owner: Person, other_owner: Person
) -> None:
    assert (await create(api, owner, server_name="Grafana")).status == 200
    dup = await create(api, owner, server_name="grafana")
    assert dup.status == 400 and "server_name" in dup.message
    assert (await create(api, other_owner, server_name="grafana")).status == 200
    second = (await create(api, owner, server_name="Loki")).data
    renamed = await api.call("/safari/mcp/server/update", {
        "server_id": second["server_id"], "server_name": "GRAFANA"}, key=owner.key)
    assert renamed.status == 400 and "server_name" in renamed.message
    same = await api.call("/safari/mcp/server/update", {
        "server_id": second["server_id"], "server_name": "loki"}, key=owner.key)
    assert same.status == 200 and same.data["server_name"] == "loki"


async def test_private_urls_refused_when_private_network_is_off(
    api: Api, owner: Person, settings: Any, peers: Peers
) -> None:
    async with make_api(settings.with_(allow_private_network=False)) as strict:
        from tests.fixtures.accounts import new_account

        someone = await new_account(strict, "Strict")
        for url in (peers.http, "http://localhost:8080/mcp", "http://10.0.0.8/mcp",
                    "http://169.254.169.254/latest", "http://[::1]:9/mcp"):
            reply = await create(strict, someone, url=url)
            assert reply.status == 400 and "url" in reply.message, (url, reply.body)
            assert "refused" in reply.message
        zh = await strict.call("/safari/mcp/server/create", {
            "server_name": "x", "description": "d", "url": "http://10.0.0.8/mcp"},
            key=someone.key, headers={"Accept-Language": "zh-CN"})
        assert "url" in zh.message and "拒绝" in zh.message
        made = await create(strict, someone, url="https://8.8.8.8/mcp")
        update = await strict.call("/safari/mcp/server/update", {
            "server_id": made.data["server_id"], "url": "http://127.0.0.1:1/mcp"},
            key=someone.key)
        assert update.status == 400 and "url" in update.message


async def test_list_paging_query_scope_and_include_account(
    api: Api, owner: Person
) -> None:
    team = (await api.call("/team/upsert", {"team_name": "SRE",
                                            "person_ids": [owner.person_id]},
                           key=owner.key)).data["team_id"]
    for i in range(5):
        await create(api, owner, server_name=f"acct-{i}")
    for i in range(3):
        await create(api, owner, server_name=f"team-{i}", team_id=team,
                     description="Kubernetes helpers")
    everything = await api.call("/safari/mcp/server/list", {}, key=owner.key)
    assert everything.data["total"] == 8
    page = await api.call("/safari/mcp/server/list", {"p": 2, "limit": 3}, key=owner.key)
    assert page.data["total"] == 8 and len(page.data["servers"]) == 3
    names = [s["server_name"] for s in everything.data["servers"]]
    assert names[:3] == ["team-2", "team-1", "team-0"]  # newest first
    no_account = await api.call("/safari/mcp/server/list", {"include_account": False},
                                key=owner.key)
    assert {s["team_id"] for s in no_account.data["servers"]} == {team}
    account_only = await api.call("/safari/mcp/server/list", {"scope": "account"},
                                  key=owner.key)
    assert account_only.data["total"] == 5
    by_team = await api.call("/safari/mcp/server/list", {"scope": "team", "team_ids": [team]},
                             key=owner.key)
    assert by_team.data["total"] == 3
    found = await api.call("/safari/mcp/server/list", {"query": "KUBERNETES"}, key=owner.key)
    assert found.data["total"] == 3
    found = await api.call("/safari/mcp/server/list", {"query": "acct-3"}, key=owner.key)
    assert [s["server_name"] for s in found.data["servers"]] == ["acct-3"]
    literal = await api.call("/safari/mcp/server/list", {"query": "%"}, key=owner.key)
    assert literal.data["total"] == 0
    past = await api.call("/safari/mcp/server/list", {"p": 50}, key=owner.key)
    assert past.data == {"total": 8, "servers": []}
    for body, field in [({"p": 0}, "p"), ({"limit": 101}, "limit"), ({"p": 200, "limit": 100},
                        "p"), ({"scope": "galaxy"}, "scope"), ({"include_account": "no"},
                                                               "include_account")]:
        bad = await api.call("/safari/mcp/server/list", body, key=owner.key)
        assert bad.status == 400 and field in bad.message, body


async def test_delete_and_cross_account_ids_behave_as_not_found(
    api: Api, owner: Person, other_owner: Person
) -> None:
    mine = (await create(api, owner)).data["server_id"]
    for path in ("get", "update", "delete", "enable", "disable"):
        reply = await api.call(f"/safari/mcp/server/{path}", {"server_id": mine,
                                                             "description": "x"},
                               key=other_owner.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", path
    theirs = await api.call("/safari/mcp/server/list", {}, key=other_owner.key)
    assert theirs.data["total"] == 0
    gone = await api.call("/safari/mcp/server/delete", {"server_id": mine}, key=owner.key)
    assert gone.status == 200 and gone.body["data"] is None
    again = await api.call("/safari/mcp/server/get", {"server_id": mine}, key=owner.key)
    assert again.code == "ResourceNotFound"


async def test_list_is_rate_limited_per_app_key(settings: Any) -> None:
    limited = settings.with_(rate_limit_per_second=3, rate_limit_per_minute=1000)
    async with make_api(limited) as api:
        from tests.fixtures.accounts import new_account, new_member

        boss = await new_account(api, "Limits")
        colleague = await new_member(api, boss, name="Col")
        codes = [(await api.call("/safari/mcp/server/list", {}, key=boss.key)).status
                 for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        # Another key of the same account has its own window.
        assert (await api.call("/safari/mcp/server/list", {}, key=colleague.key)).status == 200


async def test_list_never_contacts_a_server(api: Api, owner: Person, peers: Peers) -> None:
    made = await create(api, owner, server_name="counted", url=peers.counted)
    await create(api, owner, server_name="dead", url=peers.closed)
    before = peers.counter.count
    for body in ({}, {"query": "counted"}, {"limit": 100}):
        listed = await api.call("/safari/mcp/server/list", body, key=owner.key)
        assert listed.status == 200 and listed.data["total"] >= 1
    assert peers.counter.count == before
    got = await api.call("/safari/mcp/server/get", {"server_id": made.data["server_id"]},
                         key=owner.key)
    assert got.data["tool_count"] == 5
    assert peers.counter.count > before  # the probe does reach it
