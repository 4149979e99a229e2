"""Credentials inside a stored target's URL (`user:pass@`, `?access_token=`, `?key=`...) are
write-only secrets (api/outbound_secrets.py, kit/url_secrets.py): every answer and the audit
log show the URL with them masked; the masked URL sent back keeps them on the same origin
and is refused on another; the calls the target makes still carry them.

Walked for every place a tenant stores such a URL: escalation rules' and notification rules'
webhooks and chat robots, custom actions, MCP servers, A2A agents, mapping APIs, monit data
sources. Created by the Owner, read by a plain Member and from the audit log."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import msgspec
import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.platform import audit_log
from dutyline.kit.outbound import redact_url
from dutyline.kit.url_secrets import mask_url, restore_url
from tests.aisre.a2a_peers import a2a_peer
from tests.dispatch.receiver import Receiver, build
from tests.dispatch.support import (
    create_rule,
    layer,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.loopback import serve_asgi

pytestmark = pytest.mark.anyio
MASK = "******"
_n = itertools.count()


def credentialed(base: str, path: str) -> tuple[str, list[str]]:
    """A URL on `base`'s origin carrying a password and two secret query values (fresh
    ones each call), and those secrets."""
    n = next(_n)
    secrets = [f"pw{n}zq", f"tok{n}zq", f"key{n}zq"]
    parts = urlsplit(base)
    url = urlunsplit((parts.scheme, f"robot:{secrets[0]}@{parts.netloc}", path,
                      f"access_token={secrets[1]}&lang=en&key={secrets[2]}", ""))
    return url, secrets


def elsewhere(url: str, base: str) -> str:
    """`url` (masked) moved to `base`'s origin."""
    parts, to = urlsplit(url), urlsplit(base)
    userinfo = parts.netloc.rpartition("@")[0]
    return urlunsplit((parts.scheme, f"{userinfo}@{to.netloc}" if userinfo else to.netloc,
                       parts.path, parts.query, ""))


def test_masking_round_trips() -> None:
    url, secrets = credentialed("https://oapi.example.com", "/robot/send")
    masked = mask_url(url)
    assert masked == ("https://******@oapi.example.com/robot/send?"
                      "access_token=******&lang=en&key=******")
    assert not any(s in masked for s in secrets)
    assert restore_url(masked, url) == url
    assert mask_url("https://example.com/hook?x=1") == "https://example.com/hook?x=1"
    assert mask_url("https://api.telegram.org/bot12:AAx-y/sendMessage") == \
        "https://api.telegram.org/bot******/sendMessage"
    assert restore_url("https://h/hook?token=******", "https://h/hook?other=1") is None
    # Chat robots addressed by a secret path segment.
    for url, masked in (
            ("https://open.feishu.cn/open-apis/bot/v2/hook/0b2f-ab12",
             "https://open.feishu.cn/open-apis/bot/v2/hook/******"),
            ("https://hooks.slack.com/services/T0001/B0002/XXXXyyyy",
             "https://hooks.slack.com/services/******"),
            ("https://discord.com/api/webhooks/123/abc-DEF",
             "https://discord.com/api/webhooks/******")):
        assert mask_url(url) == masked
        assert restore_url(masked, url) == url
        assert restore_url(masked, "https://example.com/") is None
        assert redact_url(url) == masked  # and so do delivery records and logs


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    """Two webhook receivers, each its own origin."""
    made = (Receiver(), Receiver())
    with serve_asgi(build(made[0])) as a, serve_asgi(build(made[1])) as b:
        made[0].base_url, made[1].base_url = a, b
        yield made


@pytest.fixture
async def api(settings: Settings, receivers: tuple[Receiver, Receiver]) -> AsyncIterator[Api]:
    async with make_api(settings.with_(base_url="http://dutyline.test"),
                        clock=FakeClock(1_700_000_000)) as client:
        yield client


# Every answer of a successful call, creates' included: none may hold a credential.
SEEN: list[Any] = []


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, (path, reply.body)
    SEEN.append(reply.body)
    return reply.data


@dataclass
class Place:
    """One kind of stored target: how to make it with `url`, read it back (the masked URL
    the answer shows, and the whole answer), update it with a URL, and what is stored."""

    name: str
    field: str  # as an update's refusal names it
    create: Callable[[str], Awaitable[Any]]
    read: Callable[[Any, Person], Awaitable[tuple[str, Any]]]
    update: Callable[[Any, str], Awaitable[Any]] | None
    stored: Callable[[Any], Awaitable[str]]
    member_reads: bool = True  # a plain Member may read it


async def _stored(api: Api, query: Any) -> Any:
    async with api.runtime.db.connect() as conn:
        return (await conn.execute(query)).scalar_one()


def _places(api: Api, owner: Person, channel_id: int, a2a_url: str) -> list[Place]:
    from dutyline.db.tables.aisre import a2a_agent, mcp_server
    from dutyline.db.tables.channel import integration_custom_action as custom_action
    from dutyline.db.tables.dispatch import channel_notify_rule as notify_rule
    from dutyline.db.tables.dispatch import escalate_rule
    from dutyline.db.tables.enrichment import mapping_api
    from dutyline.db.tables.monit import monit_datasource

    def hooks(url: str) -> list[dict[str, Any]]:
        return [{"type": "webhook", "settings": {"url": url}}]

    # escalation rules
    async def esc_create(url: str) -> Any:
        return await create_rule(api, owner, rule_body(channel_id, [layer(webhooks=hooks(url))],
                                                       rule_name=f"r{next(_n)}"))

    async def esc_read(rule_id: Any, who: Person) -> tuple[str, Any]:
        items = (await ok(api, "/channel/escalate/rule/list", {"channel_id": channel_id},
                          who))["items"]
        [item] = [i for i in items if i["rule_id"] == rule_id]
        return item["layers"][0]["target"]["webhooks"][0]["settings"]["url"], item

    async def esc_update(rule_id: Any, url: str) -> Any:
        _, item = await esc_read(rule_id, owner)
        return await api.call("/channel/escalate/rule/update", {
            **rule_body(channel_id, [layer(webhooks=hooks(url))], rule_name=item["rule_name"]),
            "rule_id": rule_id}, key=owner.key)

    async def esc_stored(rule_id: Any) -> str:
        raw = await _stored(api, select(escalate_rule.c.layers).where(
            escalate_rule.c.rule_id == rule_id))
        return str(msgspec.json.decode(raw)[0]["target"]["webhooks"][0]["settings"]["url"])

    # notification rules
    def notify_body(url: str) -> dict[str, Any]:
        return {"channel_id": channel_id, "rule_name": f"n{next(_n)}", "events": ["i_new"],
                "target": {"webhooks": hooks(url)}}

    async def nr_create(url: str) -> Any:
        return (await ok(api, "/channel/notify/rule/create", notify_body(url), owner))["rule_id"]

    async def nr_read(rule_id: Any, who: Person) -> tuple[str, Any]:
        items = (await ok(api, "/channel/notify/rule/list", {"channel_id": channel_id},
                          who))["items"]
        [item] = [i for i in items if i["rule_id"] == rule_id]
        return item["target"]["webhooks"][0]["settings"]["url"], item

    async def nr_update(rule_id: Any, url: str) -> Any:
        return await api.call("/channel/notify/rule/update", {**notify_body(url),
                                                              "rule_id": rule_id}, key=owner.key)

    async def nr_stored(rule_id: Any) -> str:
        raw = await _stored(api, select(notify_rule.c.target).where(
            notify_rule.c.rule_id == rule_id))
        return str(msgspec.json.decode(raw)["webhooks"][0]["settings"]["url"])

    # custom actions (set once, at creation)
    async def ca_create(url: str) -> Any:
        return (await ok(api, "/integration/create", {
            "channel_id": channel_id, "integration_name": f"act{next(_n)}",
            "integration_type": "custom_action", "url": url}, owner))["integration_id"]

    async def ca_read(integration_id: Any, who: Person) -> tuple[str, Any]:
        item = await ok(api, "/integration/info", {"integration_id": integration_id}, who)
        return item["url"], item

    async def ca_stored(integration_id: Any) -> str:
        return str(await _stored(api, select(custom_action.c.url).where(
            custom_action.c.integration_id == integration_id)))

    # MCP servers
    async def mcp_create(url: str) -> Any:
        return (await ok(api, "/safari/mcp/server/create", {
            "server_name": f"ops{next(_n)}", "description": "Ops", "url": url},
            owner))["server_id"]

    async def mcp_read(server_id: Any, who: Person) -> tuple[str, Any]:
        items = (await ok(api, "/safari/mcp/server/list", {}, who))["servers"]
        [item] = [i for i in items if i["server_id"] == server_id]
        return item["url"], item

    async def mcp_update(server_id: Any, url: str) -> Any:
        return await api.call("/safari/mcp/server/update", {"server_id": server_id,
                                                            "url": url}, key=owner.key)

    async def mcp_stored(server_id: Any) -> str:
        return str(await _stored(api, select(mcp_server.c.url).where(
            mcp_server.c.server_id == server_id)))

    # A2A agents (the card is fetched: the peer's own URL, credentials added)
    async def a2a_create(url: str) -> Any:
        return (await ok(api, "/safari/a2a-agent/create", {
            "agent_name": f"echo{next(_n)}", "card_url": url}, owner))["agent_id"]

    async def a2a_read(agent_id: Any, who: Person) -> tuple[str, Any]:
        item = await ok(api, "/safari/a2a-agent/get", {"agent_id": agent_id}, who)
        return item["card_url"], item

    async def a2a_update(agent_id: Any, url: str) -> Any:
        return await api.call("/safari/a2a-agent/update", {"agent_id": agent_id,
                                                           "card_url": url}, key=owner.key)

    async def a2a_stored(agent_id: Any) -> str:
        return str(await _stored(api, select(a2a_agent.c.card_url).where(
            a2a_agent.c.agent_id == agent_id)))

    # mapping APIs
    async def map_create(url: str) -> Any:
        return (await ok(api, "/enrichment/mapping/api/create", {
            "api_name": f"cmdb{next(_n)}", "url": url}, owner))["api_id"]

    async def map_read(api_id: Any, who: Person) -> tuple[str, Any]:
        item = await ok(api, "/enrichment/mapping/api/info", {"api_id": api_id}, who)
        return item["url"], item

    async def map_update(api_id: Any, url: str) -> Any:
        return await api.call("/enrichment/mapping/api/update", {"api_id": api_id, "url": url},
                              key=owner.key)

    async def map_stored(api_id: Any) -> str:
        return str(await _stored(api, select(mapping_api.c.url).where(
            mapping_api.c.api_id == api_id)))

    # monit data sources
    ds_names: dict[Any, str] = {}

    def ds_body(url: str, name: str) -> dict[str, Any]:
        return {"type_ident": "prometheus", "name": name, "edge_cluster_name": "default",
                "address": url, "payload": {"prometheus": {}}}

    async def ds_create(url: str) -> Any:
        name = f"prom{next(_n)}"
        made = (await ok(api, "/monit/datasource/create", ds_body(url, name), owner))["id"]
        ds_names[made] = name
        return made

    async def ds_read(ds_id: Any, who: Person) -> tuple[str, Any]:
        item = await ok(api, "/monit/datasource/info", {"id": ds_id}, who)
        return item["address"], item

    async def ds_update(ds_id: Any, url: str) -> Any:
        return await api.call("/monit/datasource/update",
                              {**ds_body(url, ds_names[ds_id]), "id": ds_id}, key=owner.key)

    async def ds_stored(ds_id: Any) -> str:
        return str(await _stored(api, select(monit_datasource.c.address).where(
            monit_datasource.c.id == ds_id)))

    return [
        Place("escalation rule webhook", "layers[0].target.webhooks[0].settings.url",
              esc_create, esc_read, esc_update, esc_stored),
        Place("notification rule webhook", "target.webhooks[0].settings.url",
              nr_create, nr_read, nr_update, nr_stored),
        Place("custom action", "url", ca_create, ca_read, None, ca_stored),
        Place("MCP server", "url", mcp_create, mcp_read, mcp_update, mcp_stored),
        Place("A2A agent", "card_url", a2a_create, a2a_read, a2a_update, a2a_stored),
        Place("mapping API", "url", map_create, map_read, map_update, map_stored),
        # Reading data sources takes the monit permission a plain Member lacks.
        Place("monit data source", "address", ds_create, ds_read, ds_update, ds_stored,
              member_reads=False),
    ]


async def test_credentials_in_stored_urls_are_write_only(
        api: Api, owner: Person, receivers: tuple[Receiver, Receiver]) -> None:
    first, second = receivers
    reader = await new_member(api, owner, name="Reader")
    SEEN.clear()
    channel_id = await make_channel(api, owner)
    planted: list[str] = []
    answers: list[Any] = []
    async with a2a_peer() as peer:
        for place in _places(api, owner, channel_id, peer.base_url):
            base = peer.base_url if place.name == "A2A agent" else first.base_url
            path = urlsplit(peer.card_url).path if place.name == "A2A agent" else "/hook"
            url, secrets = credentialed(base, path)
            planted += secrets
            target = await place.create(url)
            assert await place.stored(target) == url, place.name  # stored as given

            # Read by a plain member (and by the Owner): the URL with its credentials masked.
            for who in (reader, owner) if place.member_reads else (owner,):
                shown, item = await place.read(target, who)
                answers.append(item)
                assert shown == mask_url(url), (place.name, shown)
                assert MASK in shown and not any(s in shown for s in secrets), place.name
            if place.update is None:
                continue

            # Sent back as read, on the same origin: the stored credentials are kept.
            shown, _ = await place.read(target, owner)
            reply = await place.update(target, shown)
            assert reply.status == 200, (place.name, reply.body)
            answers.append(reply.body)
            assert await place.stored(target) == url, place.name

            # The masked URL moved to another origin: refused, naming the field; nothing
            # changes.
            moved = await place.update(target, elsewhere(shown, second.base_url))
            assert (moved.status, moved.code) == (400, "InvalidParameter"), place.name
            assert place.field in moved.message and "another origin" in moved.message, (
                place.name, moved.message)
            assert await place.stored(target) == url, place.name

            # A mask with nothing behind it (a credential the stored URL lacks) is refused.
            extra = await place.update(target, shown + "&secret=" + MASK)
            assert (extra.status, extra.code) == (400, "InvalidParameter"), place.name
            assert place.field in extra.message, (place.name, extra.message)

        # A mask on a new target has nothing to keep.
        for place in _places(api, owner, channel_id, peer.base_url):
            with pytest.raises(AssertionError, match="InvalidParameter") as refused:
                await place.create(mask_url(credentialed(first.base_url, "/hook")[0]))
            assert "there is no stored secret to keep" in str(refused.value), place.name

    answers.append(await ok(api, "/audit/search", {
        "limit": 99, "start_time": 1_699_000_000, "end_time": 1_701_000_000}, owner))
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.account_id == owner.account_id))).all()
    table = "\n".join(repr(tuple(row)) for row in rows)
    assert "access_token=******" in table  # the audit keeps the masked form
    text = msgspec.json.encode([*answers, *SEEN]).decode()
    for secret in planted:
        assert secret not in text, secret
        assert secret not in table, secret


async def test_a_webhook_still_gets_its_credentials(
        api: Api, owner: Person, receivers: tuple[Receiver, Receiver]) -> None:
    """Stored, read back masked and saved again: the page goes out with the real ones."""
    first, _ = receivers
    channel_id = await make_channel(api, owner)
    key = await make_integration(api, owner, channel_id)
    url, (password, token, api_key) = credentialed(first.base_url, "/hook")
    body = rule_body(channel_id, [layer(webhooks=[{"type": "webhook",
                                                   "settings": {"url": url}}])])
    rule_id = await create_rule(api, owner, body)
    [item] = (await ok(api, "/channel/escalate/rule/list", {"channel_id": channel_id},
                       owner))["items"]
    await ok(api, "/channel/escalate/rule/update", {
        **body, "rule_id": rule_id, "layers": item["layers"]}, owner)
    assert (await push(api, key)).status == 200
    await run_jobs(api)
    [sent] = first.take()
    assert sent.path == "/hook"
    assert parse_qs(urlsplit("?" + "&".join(f"{k}={v}" for k, v in sent.query.items()))
                    .query) == {"access_token": [token], "lang": ["en"], "key": [api_key]}
    # httpx sends a URL's userinfo as basic credentials
    assert sent.headers["authorization"].startswith("Basic ")
    assert password not in msgspec.json.encode(
        await ok(api, "/channel/escalate/rule/list", {"channel_id": channel_id}, owner)
    ).decode()
