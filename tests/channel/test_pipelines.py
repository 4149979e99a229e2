"""/alert/pipeline/upsert|info|list and their effect at ingest."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.db.tables.incident import alert
from tests.api.test_reference_schemas import check
from tests.enrichment.test_mapping import post
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.conftest import event, push, wire
from tests.incident.ingest_support import all_rows

pytestmark = pytest.mark.anyio


def cond(key: str, *vals: str) -> dict[str, Any]:
    return {"key": key, "oper": "IN", "vals": list(vals)}


async def test_pipeline_rewrites_and_drops(api: Api, owner: Person) -> None:
    wired = await wire(api, owner)
    rules = [
        {"kind": "alert_drop", "if": [[cond("labels.env", "test")]]},
        {"kind": "severity_reset", "if": [[cond("labels.env", "staging")]],
         "settings": {"severity": "Info"}},
        {"kind": "title_reset", "settings": {"title": "[{{.labels.env}}] {{.title}}"}},
        {"kind": "description_reset", "if": [[cond("severity", "Critical")]],
         "settings": {"description": "page: {{.description}}"}},
    ]
    reply = await post(api, "/alert/pipeline/upsert",
                       {"integration_id": wired.integration_id, "rules": rules}, owner.key)
    check("/alert/pipeline/upsert", reply)
    for key, env, status in (("t", "test", "Critical"), ("s", "staging", "Critical"),
                             ("p", "prod", "Critical")):
        pushed = await push(api, wired.key, event("disk full", status, key=key,
                                                  description="d", labels={"env": env}))
        assert pushed.status == 200, pushed.body
    stored = {r.alert_key: r for r in await all_rows(
        api, alert, alert.c.integration_id == wired.integration_id)}
    assert set(stored) == {"s", "p"}  # the test alert was dropped
    assert stored["s"].title == "[staging] disk full" and stored["s"].alert_severity == "Info"
    assert stored["s"].description == "d"
    assert stored["p"].title == "[prod] disk full" and stored["p"].alert_severity == "Critical"
    assert stored["p"].description == "page: d"
    # A recovery stays a recovery whatever severity_reset says.
    await push(api, wired.key, event("disk full", "Ok", key="s", labels={"env": "staging"}))
    (row,) = await all_rows(api, alert, alert.c.alert_key == "s")
    assert row.alert_status == "Ok" and row.end_time

    # (Not checked against the reference schema: its `settings` is a oneOf in which the
    # empty ApAlertDrop matches every object, so any non-empty settings fail it.)
    info = (await post(api, "/alert/pipeline/info", {"integration_id": wired.integration_id},
                       owner.key)).json()["data"]
    assert info["rules"] == rules and info["status"] == "enabled"
    listed = (await post(api, "/alert/pipeline/list", {
        "integration_ids": [wired.integration_id, 7]}, owner.key)).json()["data"]
    assert [i["integration_id"] for i in listed["items"]] == [wired.integration_id]


@pytest.mark.parametrize(("rule", "field"), [
    ({"kind": "nope"}, "rules[0].kind"),
    ({"kind": "alert_inhibit", "settings": {"equals": ["host"], "source_filters": []}},
     "rules[0].kind"),
    ({"kind": "severity_reset", "settings": {"severity": "Ok"}}, "rules[0].settings.severity"),
    ({"kind": "title_reset", "settings": {"title": ""}}, "rules[0].settings.title"),
    ({"kind": "title_reset", "settings": {"title": "{{.x"}}, "rules[0].settings.title"),
    ({"kind": "alert_drop", "if": [[{"key": "x", "oper": "BAD", "vals": []}]]}, "rules[0].if"),
    ("x", "rules[0]"),
])
async def test_bad_pipelines_are_refused(api: Api, owner: Person, rule: Any,
                                         field: str) -> None:
    wired = await wire(api, owner)
    reply = await post(api, "/alert/pipeline/upsert",
                       {"integration_id": wired.integration_id, "rules": [rule]}, owner.key)
    assert reply.status_code == 400, reply.text
    assert field in reply.json()["error"]["message"]
    info = (await post(api, "/alert/pipeline/info", {"integration_id": wired.integration_id},
                       owner.key)).json()["data"]
    assert info["rules"] == []


async def test_pipeline_permissions_and_other_accounts(api: Api, owner: Person,
                                                       other_owner: Person) -> None:
    wired = await wire(api, owner)
    member = await new_member(api, owner)
    body = {"integration_id": wired.integration_id, "rules": []}
    assert (await post(api, "/alert/pipeline/upsert", body, member.key)).status_code == 403
    assert (await post(api, "/alert/pipeline/info", {"integration_id": wired.integration_id},
                       member.key)).status_code == 200
    other = await post(api, "/alert/pipeline/upsert", body, other_owner.key)
    assert other.status_code == 400 and other.json()["error"]["code"] == "ResourceNotFound"
    other = await post(api, "/alert/pipeline/info", {"integration_id": wired.integration_id},
                       other_owner.key)
    assert other.status_code == 400
