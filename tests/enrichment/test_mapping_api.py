"""/enrichment/mapping/api/* and `mapping_type: api` at ingest, against a real HTTP peer on
loopback (tests/fixtures/fake_mapping_api.py): the exact request it receives, the answer's
labels on the stored alert, the per-process cache, and failures (500, a body that is not
JSON or not an object, a timeout, a refused address) that leave the alert unenriched and
never fail the push."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.enrichment import mapping_api
from dutyline.db.tables.incident import alert
from dutyline.enrichment.api import lookup
from tests.api.test_reference_schemas import check
from tests.enrichment.test_mapping import post
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.fake_mapping_api import MappingApiPeer, mapping_api_peer
from tests.incident.conftest import event, push, wire
from tests.incident.ingest_support import all_rows

pytestmark = pytest.mark.anyio

CMDB = {"web1": {"owner": "alice", "team": "sre", "extra": "not asked for"}}


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    lookup.CACHE.clear()
    yield
    lookup.CACHE.clear()


@pytest.fixture
def peer() -> Iterator[MappingApiPeer]:
    with mapping_api_peer(CMDB) as running:
        yield running


async def create_api(api: Api, who: Person, url: str, **extra: Any) -> str:
    reply = await post(api, "/enrichment/mapping/api/create",
                       {"api_name": "CMDB API", "url": url, **extra}, who.key)
    assert reply.status_code == 200, reply.text
    return str(check("/enrichment/mapping/api/create", reply)["data"]["api_id"])


async def enrich_with(api: Api, who: Person, integration_id: int, api_id: str,
                      *labels: str) -> None:
    rules = [{"kind": "mapping", "settings": {"mapping_type": "api", "api_id": api_id,
                                              "result_labels": list(labels)}}]
    reply = await post(api, "/enrichment/upsert", {"integration_id": integration_id,
                                                   "rules": rules}, who.key)
    assert reply.status_code == 200, reply.text


async def labels_of(api: Api, integration_id: int, key: str) -> dict[str, str]:
    (row,) = await all_rows(api, alert, alert.c.integration_id == integration_id,
                            alert.c.alert_key == key)
    return msgspec.json.decode(row.labels)  # type: ignore[no-any-return]


async def test_api_lifecycle_in_reference_shapes(api: Api, owner: Person,
                                                 peer: MappingApiPeer) -> None:
    api_id = await create_api(api, owner, peer.url, description="CMDB lookups",
                              headers={"X-Token": "s3cret"}, timeout=1, retry_count=1)
    info = check("/enrichment/mapping/api/info", await post(
        api, "/enrichment/mapping/api/info", {"api_id": api_id}, owner.key))["data"]
    assert info["api_name"] == "CMDB API" and info["url"] == peer.url
    assert info["headers"] == {"X-Token": "***"}  # never shown again
    assert (info["timeout"], info["retry_count"], info["status"]) == (1, 1, "enabled")
    assert info["creator_id"] == owner.person_id
    async with api.runtime.db.connect() as conn:
        sealed = (await conn.execute(select(mapping_api.c.headers_sealed))).scalar_one()
    assert "s3cret" not in sealed

    update = await post(api, "/enrichment/mapping/api/update", {
        "api_id": api_id, "api_name": "CMDB v2", "timeout": 3}, owner.key)
    check("/enrichment/mapping/api/update", update)
    listed = check("/enrichment/mapping/api/list", await post(
        api, "/enrichment/mapping/api/list", {}, owner.key))["data"]
    assert listed["total"] == 1
    assert (listed["items"][0]["api_name"], listed["items"][0]["timeout"]) == ("CMDB v2", 3)
    assert listed["items"][0]["headers"] == {"X-Token": "***"}

    # Used by an enrichment rule: deletion refused, naming the integration.
    wired = await wire(api, owner)
    await enrich_with(api, owner, wired.integration_id, api_id, "owner")
    refused = await post(api, "/enrichment/mapping/api/delete", {"api_id": api_id}, owner.key)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "ReferenceExist"
    assert str(wired.integration_id) in refused.json()["error"]["message"]
    await post(api, "/enrichment/upsert", {"integration_id": wired.integration_id,
                                           "rules": []}, owner.key)
    check("/enrichment/mapping/api/delete", await post(
        api, "/enrichment/mapping/api/delete", {"api_id": api_id}, owner.key))
    gone = await post(api, "/enrichment/mapping/api/info", {"api_id": api_id}, owner.key)
    assert gone.status_code == 400 and gone.json()["error"]["code"] == "ResourceNotFound"


@pytest.mark.parametrize(("body", "field"), [
    ({"url": "ftp://cmdb.example/lookup"}, "url"),
    ({"url": "http://127.0.0.1:9/x", "timeout": 4}, "timeout"),
    ({"url": "http://127.0.0.1:9/x", "retry_count": 2}, "retry_count"),
    ({"url": "http://127.0.0.1:9/x", "insecure_skip_verify": True}, "insecure_skip_verify"),
    ({"url": "http://127.0.0.1:9/x", "api_name": "  "}, "api_name"),
    ({"url": "http://127.0.0.1:9/x", "headers": {"bad header": "x"}}, "headers"),
    ({"url": "http://127.0.0.1:9/x", "team_id": 12345}, "team_id"),
])
async def test_bad_apis_are_refused_and_nothing_is_written(api: Api, owner: Person,
                                                           body: dict[str, Any],
                                                           field: str) -> None:
    reply = await post(api, "/enrichment/mapping/api/create",
                       {"api_name": "CMDB API", **body}, owner.key)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["code"] == "InvalidParameter"
    assert field in reply.json()["error"]["message"]
    listed = await post(api, "/enrichment/mapping/api/list", {}, owner.key)
    assert listed.json()["data"] == {"total": 0, "items": []}


async def test_duplicate_names_permissions_and_other_accounts(
        api: Api, owner: Person, other_owner: Person, peer: MappingApiPeer) -> None:
    api_id = await create_api(api, owner, peer.url)
    again = await post(api, "/enrichment/mapping/api/create",
                       {"api_name": "CMDB API", "url": peer.url}, owner.key)
    assert again.status_code == 400 and "api_name" in again.json()["error"]["message"]

    member = await new_member(api, owner)  # mapping data view, not manage
    assert (await post(api, "/enrichment/mapping/api/create", {
        "api_name": "Mine", "url": peer.url}, member.key)).status_code == 403
    assert (await post(api, "/enrichment/mapping/api/update", {
        "api_id": api_id, "timeout": 1}, member.key)).status_code == 403
    assert (await post(api, "/enrichment/mapping/api/delete", {
        "api_id": api_id}, member.key)).status_code == 403
    assert (await post(api, "/enrichment/mapping/api/list", {},
                       member.key)).json()["data"]["total"] == 1

    # Another account sees nothing and can change nothing; nor can its rules use the API.
    theirs = await post(api, "/enrichment/mapping/api/info", {"api_id": api_id},
                        other_owner.key)
    assert theirs.status_code == 400 and theirs.json()["error"]["code"] == "ResourceNotFound"
    assert (await post(api, "/enrichment/mapping/api/list", {},
                       other_owner.key)).json()["data"]["total"] == 0
    for path, body in (("/enrichment/mapping/api/update", {"api_id": api_id, "timeout": 1}),
                       ("/enrichment/mapping/api/delete", {"api_id": api_id})):
        reply = await post(api, path, body, other_owner.key)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "ResourceNotFound"
    wired = await wire(api, other_owner)
    reply = await post(api, "/enrichment/upsert", {"integration_id": wired.integration_id,
                                                   "rules": [{"kind": "mapping", "settings": {
                                                       "mapping_type": "api", "api_id": api_id,
                                                       "result_labels": ["owner"]}}]},
                       other_owner.key)
    assert reply.status_code == 400 and "rules[0].settings.api_id" in reply.text
    info = check("/enrichment/mapping/api/info", await post(
        api, "/enrichment/mapping/api/info", {"api_id": api_id}, owner.key))["data"]
    assert info["timeout"] == 2


async def test_api_mapping_enriches_alerts_at_ingest(api: Api, owner: Person,
                                                     peer: MappingApiPeer) -> None:
    api_id = await create_api(api, owner, peer.url, headers={"X-Token": "s3cret"})
    wired = await wire(api, owner)
    await enrich_with(api, owner, wired.integration_id, api_id, "owner", "team")
    pushed = await push(api, wired.key, event(key="a", labels={"host": "web1", "env": "prod"}))
    assert pushed.status == 200, pushed.body
    assert await labels_of(api, wired.integration_id, "a") == {
        "host": "web1", "env": "prod", "owner": "alice", "team": "sre"}
    (call,) = peer.received
    assert (call["method"], call["path"]) == ("POST", "/lookup")
    assert call["body"] == {"labels": {"host": "web1", "env": "prod"}}
    assert call["headers"]["x-token"] == "s3cret"
    assert call["headers"]["content-type"] == "application/json"

    # The same labels again: answered from the process's cache, no second call.
    await push(api, wired.key, event(key="b", labels={"host": "web1", "env": "prod"}))
    assert (await labels_of(api, wired.integration_id, "b"))["owner"] == "alice"
    assert len(peer.received) == 1
    # Unknown host: the API answers {}, the alert is stored as sent.
    await push(api, wired.key, event(key="c", labels={"host": "db9"}))
    assert await labels_of(api, wired.integration_id, "c") == {"host": "db9"}
    assert len(peer.received) == 2
    metrics = (await api.client.get("/metrics")).text
    assert 'dutyline_enrichment_api_lookups_total{outcome="ok"} 2.0' in metrics

    # An edit to the API (here its address) takes effect on the next push: a new call.
    await post(api, "/enrichment/mapping/api/update", {"api_id": api_id,
                                                       "url": peer.url + "?v=2"}, owner.key)
    await push(api, wired.key, event(key="d", labels={"host": "web1", "env": "prod"}))
    assert len(peer.received) == 3 and (await labels_of(
        api, wired.integration_id, "d"))["owner"] == "alice"


@pytest.mark.parametrize(("mode", "calls"), [("status500", 2), ("not_json", 1),
                                             ("not_object", 1), ("slow", 1)])
async def test_failing_api_leaves_the_alert_unenriched(api: Api, owner: Person,
                                                       peer: MappingApiPeer, mode: str,
                                                       calls: int) -> None:
    # retry_count 1: a 500 is tried twice; a bad answer is not retried; timeout 1 s.
    api_id = await create_api(api, owner, peer.url, timeout=1, retry_count=1 if mode in (
        "status500", "not_json", "not_object") else 0)
    wired = await wire(api, owner)
    await enrich_with(api, owner, wired.integration_id, api_id, "owner")
    peer.mode = mode
    pushed = await push(api, wired.key, event(key="a", labels={"host": "web1"}))
    assert pushed.status == 200, pushed.body
    assert await labels_of(api, wired.integration_id, "a") == {"host": "web1"}
    assert len(peer.received) == calls
    metrics = (await api.client.get("/metrics")).text
    assert 'dutyline_enrichment_api_lookups_total{outcome="failed"} 1.0' in metrics
    # The failure is remembered briefly: the next push does not wait on the API again.
    await push(api, wired.key, event(key="b", labels={"host": "web1"}))
    assert len(peer.received) == calls


@pytest.fixture
async def strict_api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings.with_(allow_private_network=False)) as client:
        yield client


async def test_private_addresses_are_refused_unless_allowed(strict_api: Api) -> None:
    owner = await new_account(strict_api, "Strict")
    reply = await post(strict_api, "/enrichment/mapping/api/create",
                       {"api_name": "Inside", "url": "http://127.0.0.1:8080/lookup"},
                       owner.key)
    assert reply.status_code == 400
    assert "url" in reply.json()["error"]["message"]


async def test_concurrent_pushes_each_call_out_once_and_commit_together(
        api: Api, owner: Person, peer: MappingApiPeer) -> None:
    """Pushes arriving together share a transaction on SQLite (group commit); those that
    need an answer roll back alone, call, and come back, while a plain push commits."""
    import anyio

    peer.table.update({f"h{i}": {"owner": f"o{i}"} for i in range(6)})
    api_id = await create_api(api, owner, peer.url)
    wired = await wire(api, owner)
    plain = await wire(api, owner, name="Plain")
    await enrich_with(api, owner, wired.integration_id, api_id, "owner")
    replies: dict[str, int] = {}

    async def one(key: str, integration_key: str, host: str) -> None:
        reply = await push(api, integration_key, event(key=key, labels={"host": host}))
        replies[key] = reply.status

    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(one, f"k{i}", wired.key, f"h{i}")
        tg.start_soon(one, "plain", plain.key, "h0")
    assert set(replies.values()) == {200}
    for i in range(6):
        assert (await labels_of(api, wired.integration_id, f"k{i}"))["owner"] == f"o{i}"
    assert await labels_of(api, plain.integration_id, "plain") == {"host": "h0"}
    assert sorted(c["body"]["labels"]["host"] for c in peer.received) == [
        f"h{i}" for i in range(6)]
