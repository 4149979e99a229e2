"""/enrichment/upsert|info|list and their effect at ingest: every event of the integration is
enriched before it is stored, grouped or matched by noise rules."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dutyline.db.tables.incident import alert
from tests.api.test_reference_schemas import check
from tests.enrichment.test_mapping import CMDB, CSV_OK, create, post, upload
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.conftest import event, push, wire
from tests.incident.ingest_support import all_rows

pytestmark = pytest.mark.anyio


async def labels_of(api: Api, integration_id: int, key: str) -> dict[str, str]:
    (row,) = await all_rows(api, alert, alert.c.integration_id == integration_id,
                            alert.c.alert_key == key)
    return msgspec.json.decode(row.labels)  # type: ignore[no-any-return]


def mapping(schema_id: str, *labels: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "mapping", "settings": {"schema_id": schema_id, "mapping_type": "schema",
                                            "result_labels": list(labels), **extra}}


async def test_rules_enrich_every_alert_before_it_is_stored(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    await upload(api, owner, schema_id, CSV_OK)
    wired = await wire(api, owner)
    rules = [
        {"kind": "extraction", "settings": {"source_field": "title", "result_label": "region",
                                            "pattern": "in (?P<result>[a-z]+-[0-9])"}},
        {"kind": "extraction", "settings": {"source_field": "labels.payload",
                                            "result_label": "pod", "g_json": "k8s.pod"}},
        mapping(schema_id, "owner", "team"),
        {"kind": "composition", "if": [{"key": "env", "oper": "IN", "vals": ["prod"]}],
         "settings": {"result_label": "route",
                      "template": "{{.labels.team}}-{{.labels.region}}"}},
        {"kind": "drop", "settings": {"drop_labels": ["payload"]}},
        {"kind": "composition", "settings": {"result_label": "env", "template": "x"}},
    ]
    reply = await post(api, "/enrichment/upsert", {"integration_id": wired.integration_id,
                                                   "rules": rules}, owner.key)
    check("/enrichment/upsert", reply)
    pushed = await push(api, wired.key, event(
        "disk full in eu-1", key="a1",
        labels={"host": "server01", "env": "prod", "payload": '{"k8s": {"pod": "web-7"}}',
                "owner": "kept"}))
    assert pushed.status == 200, pushed.body
    assert await labels_of(api, wired.integration_id, "a1") == {
        "host": "server01", "env": "prod", "owner": "kept", "team": "sre",
        "region": "eu-1", "pod": "web-7", "route": "sre-eu-1"}

    # override replaces; an unknown host adds nothing; the mapping follows data changes.
    rules[2] = mapping(schema_id, "owner", "service", override=True)
    await post(api, "/enrichment/upsert", {"integration_id": wired.integration_id,
                                           "rules": rules[2:3]}, owner.key)
    await push(api, wired.key, event("x", key="a2", labels={"host": "server02", "owner": "z"}))
    assert await labels_of(api, wired.integration_id, "a2") == {
        "host": "server02", "owner": "bob", "service": "gateway"}
    await push(api, wired.key, event("x", key="a3", labels={"host": "unknown"}))
    assert await labels_of(api, wired.integration_id, "a3") == {"host": "unknown"}
    await post(api, "/enrichment/mapping/data/upsert", {"schema_id": schema_id, "docs": [
        {"host": "unknown", "owner": "new", "team": "t", "service": "s"}]}, owner.key)
    await push(api, wired.key, event("x", key="a4", labels={"host": "unknown"}))
    assert await labels_of(api, wired.integration_id, "a4") == {
        "host": "unknown", "owner": "new", "service": "s"}

    info = check("/enrichment/info", await post(
        api, "/enrichment/info", {"integration_id": wired.integration_id}, owner.key))["data"]
    assert info["rules"] == rules[2:3] and info["status"] == "enabled"
    assert info["creator_id"] == owner.person_id
    listed = check("/enrichment/list", await post(
        api, "/enrichment/list", {"integration_ids": [wired.integration_id, 1]},
        owner.key))["data"]
    assert [i["integration_id"] for i in listed["items"]] == [wired.integration_id]

    # A schema in use cannot be deleted.
    refused = await post(api, "/enrichment/mapping/schema/delete", {"schema_id": schema_id},
                         owner.key)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "ReferenceExist"
    await post(api, "/enrichment/upsert", {"integration_id": wired.integration_id,
                                           "rules": []}, owner.key)
    ok = await post(api, "/enrichment/mapping/schema/delete", {"schema_id": schema_id},
                    owner.key)
    assert ok.status_code == 200


async def test_enrichment_feeds_grouping_and_noise_rules(api: Api, owner: Person) -> None:
    """Labels added by a mapping are seen by drop rules (which run after enrichment)."""
    schema_id = await create(api, owner)
    await upload(api, owner, schema_id, CSV_OK)
    wired = await wire(api, owner)
    await post(api, "/enrichment/upsert", {"integration_id": wired.integration_id,
                                           "rules": [mapping(schema_id, "team")]}, owner.key)
    dropped = await post(api, "/channel/unsubscribe/rule/create", {
        "channel_id": wired.channel_id, "rule_name": "no platform",
        "filters": [[{"key": "labels.team", "oper": "IN", "vals": ["platform"]}]]}, owner.key)
    assert dropped.status_code == 200, dropped.text
    await push(api, wired.key, event("x", key="p", labels={"host": "server02"}))
    await push(api, wired.key, event("x", key="s", labels={"host": "server01"}))
    stored = await all_rows(api, alert, alert.c.integration_id == wired.integration_id)
    assert [r.alert_key for r in stored] == ["s"]


@pytest.mark.parametrize(("rule", "field"), [
    ({"kind": "nope", "settings": {}}, "rules[0].kind"),
    ({"kind": "drop"}, "rules[0].settings"),
    ({"kind": "drop", "settings": {"drop_labels": []}}, "rules[0].settings.drop_labels"),
    ({"kind": "extraction", "settings": {"source_field": "body", "result_label": "x",
                                         "pattern": "a"}}, "rules[0].settings.source_field"),
    ({"kind": "extraction", "settings": {"source_field": "title", "result_label": "X",
                                         "pattern": "a"}}, "rules[0].settings.result_label"),
    ({"kind": "extraction", "settings": {"source_field": "title", "result_label": "x",
                                         "pattern": "("}}, "rules[0].settings.pattern"),
    ({"kind": "extraction", "settings": {"source_field": "title", "result_label": "x"}},
     "rules[0].settings.pattern"),
    ({"kind": "composition", "settings": {"result_label": "x", "template": "{{.x"}},
     "rules[0].settings.template"),
    ({"kind": "mapping", "settings": {"schema_id": "a" * 24, "result_labels": ["owner"]}},
     "rules[0].settings.schema_id"),
    ({"kind": "mapping", "settings": {"schema_id": "SCHEMA", "result_labels": ["nope"]}},
     "rules[0].settings.result_labels"),
    ({"kind": "mapping", "settings": {"mapping_type": "api", "api_id": "a" * 24,
                                      "result_labels": ["x"]}},
     "rules[0].settings.api_id"),
    ({"kind": "mapping", "settings": {"mapping_type": "graph", "schema_id": "SCHEMA",
                                      "result_labels": ["owner"]}},
     "rules[0].settings.mapping_type"),
    ({"kind": "drop", "if": [{"key": "env", "oper": "LIKE", "vals": ["x"]}],
      "settings": {"drop_labels": ["a"]}}, "rules[0].if"),
])
async def test_bad_rules_are_refused_and_nothing_is_written(
        api: Api, owner: Person, rule: dict[str, Any], field: str) -> None:
    schema_id = await create(api, owner)
    wired = await wire(api, owner)
    if rule.get("settings", {}).get("schema_id") == "SCHEMA":
        rule = {**rule, "settings": {**rule["settings"], "schema_id": schema_id}}
    reply = await post(api, "/enrichment/upsert", {"integration_id": wired.integration_id,
                                                   "rules": [rule]}, owner.key)
    assert reply.status_code == 400, reply.text
    assert field in reply.json()["error"]["message"], reply.json()
    info = (await post(api, "/enrichment/info", {"integration_id": wired.integration_id},
                       owner.key)).json()["data"]
    assert info["rules"] == [] and info["created_at"] == 0


async def test_permissions_and_other_accounts(api: Api, owner: Person,
                                              other_owner: Person) -> None:
    wired = await wire(api, owner)
    member = await new_member(api, owner)
    body = {"integration_id": wired.integration_id, "rules": []}
    assert (await post(api, "/enrichment/upsert", body, member.key)).status_code == 403
    assert (await post(api, "/enrichment/info", {"integration_id": wired.integration_id},
                       member.key)).status_code == 200
    other = await post(api, "/enrichment/upsert", body, other_owner.key)
    assert other.status_code == 400 and other.json()["error"]["code"] == "ResourceNotFound"
    other_schema = await create(api, other_owner, CMDB)
    reply = await post(api, "/enrichment/upsert", {
        "integration_id": wired.integration_id,
        "rules": [mapping(other_schema, "owner")]}, owner.key)
    assert reply.status_code == 400 and "schema_id" in reply.json()["error"]["message"]
    listed = await post(api, "/enrichment/list", {"integration_ids": [wired.integration_id]},
                        other_owner.key)
    assert listed.json()["data"] == {"items": []}
