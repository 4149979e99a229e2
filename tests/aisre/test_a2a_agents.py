"""/safari/a2a-agent/*: records, card resolution against real A2A agents, write-only
credentials, enable/disable and the audit log, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select, update

from dutyline.db.tables.aisre import a2a_agent
from dutyline.db.tables.platform import audit_log
from dutyline.kit.secretbox import SecretBox
from tests.aisre.a2a_peers import Peer, a2a_peer, bad_card_server
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, Reply

pytestmark = pytest.mark.anyio

MASK = "******"


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    async with a2a_peer() as p:
        yield p


async def create(api: Api, who: Person, **fields: Any) -> Reply:
    body = {"agent_name": "Echo", "card_url": "", **fields}
    return await api.call("/safari/a2a-agent/create", body, key=who.key)


async def stored(api: Api, agent_id: str) -> Any:
    async with api.runtime.db.connect() as conn:
        return (await conn.execute(
            select(a2a_agent).where(a2a_agent.c.agent_id == agent_id))).first()


async def test_create_from_base_url_resolves_the_card(api: Api, owner: Person, peer: Peer) -> None:
    made = await create(api, owner, card_url=peer.base_url, instructions="Ask it to echo",
                        streaming=True)
    assert made.status == 200, made.body
    rec = made.data
    assert rec["agent_id"].startswith("a2a_")
    assert rec["account_id"] == owner.account_id and rec["team_id"] == 0
    assert rec["agent_name"] == "Echo" and rec["instructions"] == "Ask it to echo"
    assert rec["card_url"] == peer.base_url
    assert rec["agent_card_name"] == "Echo Agent"
    assert [s["id"] for s in rec["agent_card_skills"]] == ["echo", "task"]
    assert rec["agent_card_skills"][0] == {
        "id": "echo", "name": "Echo", "description": "Repeats the input", "tags": ["test"],
        "examples": ["hello"],
    }
    assert rec["agent_card"]["name"] == "Echo Agent"
    assert rec["agent_card"]["supportedInterfaces"][0]["url"].startswith(peer.base_url)
    assert rec["auth_type"] == "none" and rec["auth_config"] == {}
    assert rec["streaming"] is True and rec["status"] == "enabled" and rec["can_edit"] is True
    assert rec["created_by"] == owner.person_id
    # Milliseconds, as for every MCP, A2A and automation record.
    assert rec["created_at"] == rec["updated_at"] > 10**12

    got = await api.call("/safari/a2a-agent/get", {"agent_id": rec["agent_id"]}, key=owner.key)
    assert got.status == 200 and got.data == rec


async def test_full_card_url_and_trailing_slash(api: Api, owner: Person, peer: Peer) -> None:
    full = await create(api, owner, card_url=peer.card_url)
    assert full.status == 200 and full.data["agent_card_name"] == "Echo Agent"
    slash = await create(api, owner, card_url=peer.base_url + "/")
    assert slash.status == 200 and slash.data["agent_card_name"] == "Echo Agent"


async def test_legacy_card_path_is_the_fallback(api: Api, owner: Person) -> None:
    async with a2a_peer(name="Old Agent", legacy=True) as old:
        made = await create(api, owner, card_url=old.base_url)
        assert made.status == 200, made.body
        assert made.data["agent_card_name"] == "Old Agent"
        # The v0.3 card is stored in the current shape, its interface kept with its version.
        iface = made.data["agent_card"]["supportedInterfaces"][0]
        assert iface["protocolBinding"] == "JSONRPC" and iface["protocolVersion"] == "0.3.0"


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/not-json/card.json", "is invalid: the response is not JSON"),
        ("/wrong-type/card.json", "is invalid:"),
        ("/array/card.json", "is invalid:"),
        ("/no-interface/card.json", "offers no JSON-RPC or HTTP+JSON interface"),
        ("/broken", "could not be fetched: HTTP 500"),
        ("/missing", "could not be fetched: HTTP 404"),
    ],
)
async def test_invalid_cards_are_refused_naming_card_url(
    api: Api, owner: Person, path: str, why: str
) -> None:
    async with bad_card_server() as base:
        made = await create(api, owner, card_url=base + path)
    assert made.status == 400 and made.code == "InvalidParameter"
    assert "card_url" in made.message and why in made.message, made.message
    async with api.runtime.db.connect() as conn:
        assert (await conn.execute(select(a2a_agent))).first() is None


async def test_unreachable_agent_is_refused(api: Api, owner: Person) -> None:
    async with a2a_peer() as gone:
        url = gone.base_url
    made = await create(api, owner, card_url=url)
    assert made.status == 400 and made.code == "InvalidParameter"
    assert "card_url" in made.message and "connection refused" in made.message


async def test_guard_refuses_private_addresses_unless_allowed(
    api: Api, owner: Person, peer: Peer
) -> None:
    api.runtime.settings = api.runtime.settings.with_(allow_private_network=False)
    made = await create(api, owner, card_url=peer.base_url)
    assert made.status == 400 and made.code == "InvalidParameter"
    assert "outbound guard" in made.message and "loopback" in made.message
    bad_scheme = await create(api, owner, card_url="file:///etc/passwd")
    assert bad_scheme.status == 400 and "card_url" in bad_scheme.message


async def test_field_validation_names_the_field(api: Api, owner: Person, peer: Peer) -> None:
    cases = [
        ({"agent_name": "x" * 129}, "agent_name"),
        ({"agent_name": "  "}, "agent_name"),
        ({"instructions": "x" * 2001}, "instructions"),
        ({"auth_type": "oauth"}, "auth_type"),
        ({"auth_type": "bearer"}, "auth_config.token"),
        ({"auth_type": "api_key", "auth_config": {"api_key": MASK}}, "auth_config.api_key"),
        ({"auth_type": "api_key", "auth_config": {"api_key": "k", "header_name": "Bad Name"}},
         "auth_config.header_name"),
        ({"team_id": 987654321}, "team_id"),
        ({"streaming": "yes"}, "streaming"),
    ]
    for fields, name in cases:
        reply = await create(api, owner, card_url=peer.base_url, **fields)
        assert reply.status == 400 and reply.code == "InvalidParameter", (fields, reply.body)
        assert name in reply.message, (fields, reply.message)


async def test_bearer_secret_is_write_only_and_sealed(api: Api, owner: Person) -> None:
    async with a2a_peer(bearer="s3cret-token") as guarded:
        no_auth = await create(api, owner, card_url=guarded.base_url)
        assert no_auth.status == 400 and "HTTP 401" in no_auth.message
        made = await create(api, owner, card_url=guarded.base_url, auth_type="bearer",
                            auth_config={"token": "s3cret-token"})
        assert made.status == 200, made.body
        agent_id = made.data["agent_id"]
        assert made.data["auth_config"] == {"token": MASK}
        row = await stored(api, agent_id)
        assert "s3cret-token" not in row.auth_config_encrypted
        assert api.runtime.secrets.open(row.auth_config_encrypted).count("s3cret-token") == 1

        # Sending the mask back keeps the secret; the card is fetched again with it.
        upd = await api.call("/safari/a2a-agent/update", {
            "agent_id": agent_id, "auth_config": {"token": MASK},
            "card_url": guarded.card_url,
        }, key=owner.key)
        assert upd.status == 200, upd.body
        assert upd.data["auth_config"] == {"token": MASK}
        assert upd.data["card_url"] == guarded.card_url
        assert "s3cret-token" in api.runtime.secrets.open(
            (await stored(api, agent_id)).auth_config_encrypted)
        wrong = await api.call("/safari/a2a-agent/update", {
            "agent_id": agent_id, "auth_config": {"token": "wrong"}, "card_url": guarded.base_url,
        }, key=owner.key)
        assert wrong.status == 400 and "HTTP 401" in wrong.message
        # A failed update changes nothing.
        assert (await stored(api, agent_id)).card_url == guarded.card_url

    body_secrets = ["s3cret-token", "wrong"]
    async with api.runtime.db.connect() as conn:
        for row in await conn.execute(select(audit_log)):
            assert not any(s in str(tuple(row)) for s in body_secrets)


async def test_api_key_header_name_is_configurable(api: Api, owner: Person) -> None:
    async with a2a_peer(api_key=("X-Agent-Key", "k-123")) as keyed:
        made = await create(api, owner, card_url=keyed.base_url, auth_type="api_key",
                            auth_config={"header_name": "X-Agent-Key", "api_key": "k-123"})
        assert made.status == 200, made.body
        assert made.data["auth_config"] == {"header_name": "X-Agent-Key", "api_key": MASK}
        default = await create(api, owner, card_url=keyed.base_url, auth_type="api_key",
                               auth_config={"api_key": "k-123"})
        assert default.status == 400 and "HTTP 401" in default.message


async def test_update_fields_and_switch_auth_off(api: Api, owner: Person, peer: Peer) -> None:
    made = await create(api, owner, card_url=peer.base_url, auth_type="bearer",
                        auth_config={"token": "t"})
    agent_id = made.data["agent_id"]
    upd = await api.call("/safari/a2a-agent/update", {
        "agent_id": agent_id, "agent_name": "Renamed", "instructions": "new", "streaming": True,
        "auth_type": "none",
    }, key=owner.key)
    assert upd.status == 200, upd.body
    rec = upd.data
    assert (rec["agent_name"], rec["instructions"], rec["streaming"]) == ("Renamed", "new", True)
    assert rec["auth_type"] == "none" and rec["auth_config"] == {}
    assert rec["updated_at"] >= made.data["updated_at"]
    assert (await stored(api, agent_id)).auth_config_encrypted == ""
    # Turning auth back on needs a real secret, not the mask.
    masked = await api.call("/safari/a2a-agent/update", {
        "agent_id": agent_id, "auth_type": "bearer", "auth_config": {"token": MASK},
    }, key=owner.key)
    assert masked.status == 400 and "auth_config.token" in masked.message


async def test_enable_disable_delete(api: Api, owner: Person) -> None:
    async with a2a_peer() as p:
        agent_id = (await create(api, owner, card_url=p.base_url)).data["agent_id"]
        path = "/safari/a2a-agent/"
        again = await api.call(path + "enable", {"agent_id": agent_id}, key=owner.key)
        assert again.status == 400 and again.code == "InvalidParameter"
        assert "agent_id" in again.message
        off = await api.call(path + "disable", {"agent_id": agent_id}, key=owner.key)
        assert off.status == 200 and off.body["data"] is None
        assert (await stored(api, agent_id)).status == "disabled"
        off_again = await api.call(path + "disable", {"agent_id": agent_id}, key=owner.key)
        assert off_again.status == 400 and off_again.code == "InvalidParameter"
        on = await api.call(path + "enable", {"agent_id": agent_id}, key=owner.key)
        assert on.status == 200 and on.body["data"] is None and "error" not in on.body
        assert (await stored(api, agent_id)).status == "enabled"
        await api.call(path + "disable", {"agent_id": agent_id}, key=owner.key)
    # The agent is gone now: enabling re-resolves its card and refuses.
    dead = await api.call(path + "enable", {"agent_id": agent_id}, key=owner.key)
    assert dead.status == 400 and "card_url" in dead.message
    assert (await stored(api, agent_id)).status == "disabled"
    gone = await api.call(path + "delete", {"agent_id": agent_id}, key=owner.key)
    assert gone.status == 200 and gone.body["data"] is None
    assert await stored(api, agent_id) is None
    missing = await api.call(path + "get", {"agent_id": agent_id}, key=owner.key)
    assert missing.status == 400 and missing.code == "ResourceNotFound"


async def test_enable_is_audited_without_secrets(api: Api, owner: Person) -> None:
    async with a2a_peer(bearer="tok-AUDIT") as p:
        made = await create(api, owner, card_url=p.base_url, auth_type="bearer",
                            auth_config={"token": "tok-AUDIT"})
        agent_id = made.data["agent_id"]
        await api.call("/safari/a2a-agent/disable", {"agent_id": agent_id}, key=owner.key)
        on = await api.call("/safari/a2a-agent/enable",
                            {"agent_id": agent_id, "auth_config": {"token": "tok-AUDIT"}},
                            key=owner.key)
        assert on.status == 200
        twice = await api.call("/safari/a2a-agent/enable", {"agent_id": agent_id},
                               key=owner.key)
        assert twice.status == 400
    async with api.runtime.db.connect() as conn:
        rows = list(await conn.execute(
            select(audit_log).where(audit_log.c.operation == "safari.a2a-agent.enable")
            .order_by(audit_log.c.id)))
        everything = list(await conn.execute(select(audit_log)))
    assert [r.outcome for r in rows] == ["OK", "InvalidParameter"]
    assert rows[0].member_id == owner.person_id and agent_id in str(rows[0].target_ids)
    assert all("tok-AUDIT" not in str(tuple(r)) for r in everything)
    assert len(everything) >= 4  # create, disable, enable, failed enable


async def test_list_pages_query_and_include_account(api: Api, owner: Person, peer: Peer) -> None:
    team = await api.call("/team/upsert", {"team_name": "SRE"}, key=owner.key)
    team_id = team.data["team_id"]
    for i in range(5):
        assert (await create(api, owner, card_url=peer.base_url, agent_name=f"Acct {i}")).status \
            == 200
    for i in range(2):
        made = await create(api, owner, card_url=peer.base_url, agent_name=f"Team_{i}",
                            team_id=team_id)
        assert made.status == 200 and made.data["team_id"] == team_id
    path = "/safari/a2a-agent/list"
    page = await api.call(path, {"p": 1, "limit": 3}, key=owner.key)
    assert page.status == 200 and page.data["total"] == 7 and len(page.data["agents"]) == 3
    last = await api.call(path, {"p": 3, "limit": 3}, key=owner.key)
    assert len(last.data["agents"]) == 1
    seen = {a["agent_id"] for p in (1, 2, 3)
            for a in (await api.call(path, {"p": p, "limit": 3}, key=owner.key)).data["agents"]}
    assert len(seen) == 7
    teams_only = await api.call(path, {"include_account": False}, key=owner.key)
    assert {a["agent_name"] for a in teams_only.data["agents"]} == {"Team_0", "Team_1"}
    query = await api.call(path, {"query": "team_"}, key=owner.key)
    assert query.data["total"] == 2
    literal = await api.call(path, {"query": "%"}, key=owner.key)
    assert literal.data["total"] == 0
    narrowed = await api.call(path, {"team_ids": [team_id], "include_account": False},
                              key=owner.key)
    assert narrowed.data["total"] == 2
    over = await api.call(path, {"p": 101, "limit": 100}, key=owner.key)
    assert over.status == 400 and over.code == "InvalidParameter"
    beyond = await api.call(path, {"p": 9, "limit": 3}, key=owner.key)
    assert beyond.data == {"total": 7, "agents": []}


async def test_other_account_ids_are_not_found_and_untouched(
    api: Api, owner: Person, other_owner: Person, peer: Peer
) -> None:
    agent_id = (await create(api, owner, card_url=peer.base_url)).data["agent_id"]
    for op in ("get", "update", "delete", "enable", "disable"):
        reply = await api.call(f"/safari/a2a-agent/{op}",
                               {"agent_id": agent_id, "agent_name": "Hijacked"},
                               key=other_owner.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", (op, reply.body)
    listed = await api.call("/safari/a2a-agent/list", {}, key=other_owner.key)
    assert listed.data == {"total": 0, "agents": []}
    row = await stored(api, agent_id)
    assert row.agent_name == "Echo" and row.status == "enabled"


async def test_zh_cn_messages(api: Api, owner: Person) -> None:
    async with bad_card_server() as base:
        reply = await api.call("/safari/a2a-agent/create",
                               {"agent_name": "x", "card_url": base + "/broken"},
                               key=owner.key, headers={"Accept-Language": "zh-CN"})
    assert reply.status == 400 and "card_url" in reply.message
    assert "无法获取" in reply.message


async def test_secret_sealed_under_another_key(api: Api, owner: Person, peer: Peer) -> None:
    """After DUTYLINE_SECRET_KEY changes, reads still work, enable asks for the secret again
    and a fresh secret replaces it."""
    made = await create(api, owner, card_url=peer.base_url, auth_type="bearer",
                        auth_config={"token": "t1"})
    agent_id = made.data["agent_id"]
    foreign = SecretBox("another-server-key").seal('{"header_name": "", "secret": "x"}')
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(a2a_agent).where(a2a_agent.c.agent_id == agent_id)
                           .values(auth_config_encrypted=foreign, status="disabled"))
    got = await api.call("/safari/a2a-agent/get", {"agent_id": agent_id}, key=owner.key)
    assert got.status == 200 and got.data["auth_config"] == {"token": MASK}
    listed = await api.call("/safari/a2a-agent/list", {}, key=owner.key)
    assert listed.status == 200 and listed.data["total"] == 1
    on = await api.call("/safari/a2a-agent/enable", {"agent_id": agent_id}, key=owner.key)
    assert on.status == 400 and "auth_config" in on.message
    kept = await api.call("/safari/a2a-agent/update",
                          {"agent_id": agent_id, "auth_config": {"token": MASK}}, key=owner.key)
    assert kept.status == 400 and "auth_config.token" in kept.message
    fresh = await api.call("/safari/a2a-agent/update",
                           {"agent_id": agent_id, "auth_config": {"token": "t2"}}, key=owner.key)
    assert fresh.status == 200
    assert (await api.call("/safari/a2a-agent/enable", {"agent_id": agent_id},
                           key=owner.key)).status == 200
