"""/event/push/alert/prometheus, /grafana and /webhook: other tools' payloads through the
ingestion pipeline (payload shapes as Alertmanager 0.25 and Grafana send them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, Reply
from tests.monit.support import alerts, channel, incidents

pytestmark = pytest.mark.anyio


async def integration_key(api: Api, owner: Person) -> str:
    channel_id = await channel(api, owner)
    reply = await api.call("/integration/create", {"channel_id": channel_id,
                                                   "integration_name": "am"}, key=owner.key)
    return str(reply.data["integration_key"])


async def push(api: Api, path: str, key: str, body: Any, **params: str) -> Reply:
    response = await api.client.post(path, params={"integration_key": key, **params},
                                     json=body)
    return Reply(response.status_code, response.json(), response.headers)


def am_payload(status: str, **labels: str) -> dict[str, Any]:
    alert = {
        "status": status,
        "labels": {"alertname": "HighLatency", "severity": "critical", "job": "api", **labels},
        "annotations": {"summary": "Latency high on api", "description": "p99 > 1s",
                        "runbook_url": "https://runbooks.example/latency"},
        "startsAt": "2026-11-23T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph?g0.expr=up", "fingerprint": "c0ffee01",
    }
    return {"version": "4", "groupKey": "{}:{alertname=\"HighLatency\"}", "truncatedAlerts": 0,
            "status": status, "receiver": "dutyline", "groupLabels": {"alertname": "HighLatency"},
            "commonLabels": alert["labels"], "commonAnnotations": alert["annotations"],
            "externalURL": "http://alertmanager:9093", "alerts": [alert]}


async def test_alertmanager_firing_then_resolved(api: Api, owner: Person) -> None:
    key = await integration_key(api, owner)
    fired = await push(api, "/event/push/alert/prometheus", key, am_payload("firing"))
    assert fired.status == 200 and fired.data == {"alert_keys": ["c0ffee01"]}
    (opened,) = await incidents(api, owner.account_id)
    assert opened.title == "Latency high on api" and opened.incident_status == "Critical"
    (alert,) = await alerts(api, owner.account_id)
    labels = json.loads(alert.labels)
    assert labels["job"] == "api" and labels["runbook_url"].startswith("https://")
    assert alert.alert_key == "c0ffee01" and alert.description == "p99 > 1s"
    resolved = await push(api, "/event/push/alert/prometheus", key, am_payload("resolved"))
    assert resolved.status == 200
    (closed,) = await incidents(api, owner.account_id)
    assert closed.incident_status == "Ok"


async def test_alertmanager_bad_payloads(api: Api, owner: Person) -> None:
    key = await integration_key(api, owner)
    for body in ({}, {"alerts": "x"}, {"alerts": [{"labels": []}]}):
        reply = await push(api, "/event/push/alert/prometheus", key, body)
        assert reply.status == 400 and reply.code == "InvalidParameter", body
    unauthorized = await push(api, "/event/push/alert/prometheus", "ik_nope", am_payload("x"))
    assert unauthorized.status == 401


async def test_grafana_unified_and_legacy(api: Api, owner: Person) -> None:
    key = await integration_key(api, owner)
    unified = {**am_payload("firing", severity="warning"), "orgId": 1, "state": "alerting",
               "title": "[FIRING:1] HighLatency", "message": "..."}
    assert (await push(api, "/event/push/alert/grafana", key, unified)).status == 200
    legacy = {"title": "[Alerting] Disk", "ruleId": 7, "ruleName": "Disk full",
              "state": "alerting", "message": "disk at 97%", "tags": {"host": "db-1"},
              "evalMatches": [{"value": 97, "metric": "disk", "tags": None}]}
    assert (await push(api, "/event/push/alert/grafana", key, legacy)).status == 200
    states = sorted((a.title, a.alert_status) for a in await alerts(api, owner.account_id))
    assert states == [("Disk full", "Critical"), ("Latency high on api", "Warning")]
    assert (await push(api, "/event/push/alert/grafana", key,
                       {**legacy, "state": "ok"})).status == 200
    disk = [a for a in await alerts(api, owner.account_id) if a.title == "Disk full"]
    assert disk[0].alert_status == "Ok"
    bad = await push(api, "/event/push/alert/grafana", key, {"state": "weird"})
    assert bad.status == 400


async def test_generic_webhook_with_a_field_mapping(api: Api, owner: Person) -> None:
    key = await integration_key(api, owner)
    body = {"events": [
        {"check": {"name": "ping db"}, "state": "DOWN", "id": "p-1", "meta": {"dc": "fra"}},
        {"check": {"name": "ping web"}, "state": "UP", "id": "p-2", "meta": {}},
    ]}
    mapping = {"items": "events", "title": "check.name", "status": "state", "alert_key": "id",
               "labels": "meta", "status_map": "down:Critical,up:Ok"}
    reply = await push(api, "/event/push/alert/webhook", key, body, **mapping)
    assert reply.status == 200 and reply.data == {"alert_keys": ["p-1", "p-2"]}
    (alert,) = await alerts(api, owner.account_id)  # the UP one recovers nothing
    assert alert.title == "ping db" and json.loads(alert.labels) == {"dc": "fra"}
    missing = await push(api, "/event/push/alert/webhook", key, body,
                         **{**mapping, "title": "nope"})
    assert missing.status == 400 and "title" in missing.message
    bad_map = await push(api, "/event/push/alert/webhook", key, body,
                         **{**mapping, "status_map": "down:Sev1"})
    assert bad_map.status == 400


async def test_another_account_cannot_use_the_key_shape(api: Api) -> None:
    owner = await new_account(api, "Acme")
    await integration_key(api, owner)
    reply = await push(api, "/event/push/alert/webhook", "ik_" + "x" * 40, {"title": "t"})
    assert reply.status == 401
