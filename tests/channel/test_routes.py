"""/route/upsert|info|list and routing at ingest."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.db.tables.incident import alert, incident
from tests.api.test_reference_schemas import check
from tests.enrichment.test_mapping import post
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.conftest import event, push, wire
from tests.incident.ingest_support import all_rows

pytestmark = pytest.mark.anyio


def cond(key: str, *vals: str, oper: str = "IN") -> dict[str, Any]:
    return {"key": key, "oper": oper, "vals": list(vals)}


async def channel(api: Api, who: Person, name: str) -> int:
    reply = await post(api, "/channel/create", {"channel_name": name}, who.key)
    assert reply.status_code == 200, reply.text
    return int(reply.json()["data"]["channel_id"])


async def test_route_sends_alerts_to_channels(api: Api, owner: Person) -> None:
    wired = await wire(api, owner, name="Shared")
    db_team, web_team, fallback = [await channel(api, owner, n) for n in ("DB", "Web", "Rest")]
    body = {"integration_id": wired.integration_id, "cases": [
        {"if": [cond("labels.service", "db*")], "channel_ids": [db_team], "fallthrough": False},
        {"if": [cond("labels.service", "web"), cond("severity", "Critical")],
         "channel_ids": [web_team], "fallthrough": False, "routing_mode": "standard"},
    ], "sections": [{"name": "Storage", "position": 0}], "default": {"channel_ids": [fallback]}}
    check("/route/upsert", await post(api, "/route/upsert", body, owner.key))
    for key, service, status in (("a", "db-main", "Warning"), ("b", "web", "Critical"),
                                 ("c", "web", "Warning"), ("d", "cache", "Info")):
        pushed = await push(api, wired.key, event("x", status, key=key,
                                                  labels={"service": service}))
        assert pushed.status == 200, pushed.body
    stored = {r.alert_key: r.channel_id for r in await all_rows(
        api, alert, alert.c.integration_id == wired.integration_id)}
    assert stored == {"a": db_team, "b": web_team, "c": fallback, "d": fallback}

    info = check("/route/info", await post(api, "/route/info", {
        "integration_id": wired.integration_id}, owner.key))["data"]
    assert info["version"] == 1 and len(info["cases"]) == 2
    assert info["default"] == {"channel_ids": [fallback]}
    assert info["creator_id"] == owner.person_id

    # A disabled target is skipped: the default takes the alert.
    assert (await post(api, "/channel/disable", {"channel_id": db_team},
                       owner.key)).status_code == 200
    await push(api, wired.key, event("x", key="e", labels={"service": "db-main"}))
    (row,) = await all_rows(api, alert, alert.c.alert_key == "e")
    assert row.channel_id == fallback

    # Optimistic concurrency: a stale version is refused, the current one accepted.
    stale = await post(api, "/route/upsert", {**body, "version": 7}, owner.key)
    assert stale.status_code == 400 and "version" in stale.json()["error"]["message"]
    ok = await post(api, "/route/upsert", {"integration_id": wired.integration_id,
                                           "default": {"channel_ids": [web_team]},
                                           "version": 1}, owner.key)
    assert ok.status_code == 200, ok.text
    listed = check("/route/list", await post(api, "/route/list", {
        "integration_ids": [wired.integration_id, 5]}, owner.key))["data"]
    (item,) = listed["items"]
    assert item["version"] == 2 and item["cases"] == []


async def test_no_route_is_null_and_alerts_stay(api: Api, owner: Person) -> None:
    wired = await wire(api, owner)
    reply = await post(api, "/route/info", {"integration_id": wired.integration_id}, owner.key)
    assert reply.status_code == 200 and reply.json()["data"] is None
    await push(api, wired.key, event("x", key="a"))
    (row,) = await all_rows(api, alert, alert.c.alert_key == "a")
    assert row.channel_id == wired.channel_id


@pytest.mark.parametrize(("body", "field"), [
    ({}, "cases"),
    ({"cases": [{"if": [], "channel_ids": [1], "fallthrough": False}]}, "cases[0].if"),
    ({"cases": [{"if": [cond("a", "b")], "channel_ids": [], "fallthrough": False}]},
     "cases[0].channel_ids"),
    ({"cases": [{"if": [cond("a", "b")], "channel_ids": [1], "fallthrough": False,
                 "routing_mode": "name_mapping", "name_mapping_label": "team"}]},
     "cases[0].channel_ids"),
    ({"cases": [{"if": [cond("a", "b")], "channel_ids": None, "fallthrough": False,
                 "routing_mode": "name_mapping"}]}, "cases[0].name_mapping_label"),
    ({"cases": [{"if": [cond("a", "b")], "channel_ids": None, "fallthrough": False,
                 "routing_mode": "name_mapping", "name_mapping_label": "labels.a b"}]},
     "cases[0].name_mapping_label"),
    ({"cases": [{"if": [cond("a", "b")], "channel_ids": [1], "fallthrough": False,
                 "routing_mode": "by_magic"}]}, "cases[0].routing_mode"),
    ({"cases": [{"if": [{"key": "a", "oper": "LIKE", "vals": ["b"]}], "channel_ids": [1],
                 "fallthrough": False}]}, "cases[0].if"),
    ({"default": {"channel_ids": [123456]}}, "channel_ids"),
    ({"default": {"channel_ids": []}, "sections": [{"name": "a", "position": 3}]},
     "sections[0].position"),
])
async def test_bad_routes_are_refused(api: Api, owner: Person, body: dict[str, Any],
                                      field: str) -> None:
    wired = await wire(api, owner)
    reply = await post(api, "/route/upsert", {"integration_id": wired.integration_id, **body},
                       owner.key)
    assert reply.status_code == 400, reply.text
    assert field in reply.json()["error"]["message"]
    info = await post(api, "/route/info", {"integration_id": wired.integration_id}, owner.key)
    assert info.json()["data"] is None


async def test_route_permissions_and_other_accounts(api: Api, owner: Person,
                                                    other_owner: Person) -> None:
    wired = await wire(api, owner)
    member = await new_member(api, owner)
    body = {"integration_id": wired.integration_id, "default": {"channel_ids": []}}
    assert (await post(api, "/route/upsert", body, member.key)).status_code == 403
    assert (await post(api, "/route/info", {"integration_id": wired.integration_id},
                       member.key)).status_code == 200
    other = await post(api, "/route/upsert", body, other_owner.key)
    assert other.status_code == 400 and other.json()["error"]["code"] == "ResourceNotFound"
    theirs = await channel(api, other_owner, "Theirs")
    reply = await post(api, "/route/upsert", {"integration_id": wired.integration_id,
                                              "default": {"channel_ids": [theirs]}}, owner.key)
    assert reply.status_code == 400 and "channel_ids" in reply.json()["error"]["message"]


async def _alerts(api: Api, integration_id: int, key: str) -> dict[int, Any]:
    """The key's alerts by channel."""
    return {r.channel_id: r for r in await all_rows(
        api, alert, alert.c.integration_id == integration_id, alert.c.alert_key == key)}


async def test_name_mapping_routes_by_a_label_value_to_the_channel_of_that_name(
        api: Api, owner: Person, other_owner: Person) -> None:
    wired = await wire(api, owner, name="Shared")
    payments, search, fallback = [await channel(api, owner, n)
                                  for n in ("Payments", "search", "Rest")]
    await channel(api, other_owner, "Billing")  # another account's channel is never found
    body = {"integration_id": wired.integration_id, "cases": [
        {"if": [cond("severity", "Critical", "Warning")], "channel_ids": None,
         "fallthrough": False, "routing_mode": "name_mapping",
         "name_mapping_label": "labels.service"}],
        "default": {"channel_ids": [fallback]}}
    check("/route/upsert", await post(api, "/route/upsert", body, owner.key))
    info = check("/route/info", await post(api, "/route/info", {
        "integration_id": wired.integration_id}, owner.key))["data"]
    assert info["cases"][0]["routing_mode"] == "name_mapping"
    assert info["cases"][0]["name_mapping_label"] == "labels.service"
    assert info["cases"][0]["channel_ids"] == []

    for key, labels, status in (("a", {"service": "payments"}, "Critical"),
                                ("b", {"service": "SEARCH"}, "Warning"),
                                ("c", {"service": "billing"}, "Critical"),
                                ("d", {}, "Critical"),
                                ("e", {"service": "payments"}, "Info"),
                                ("h", {"service": "payments" + "x" * 70}, "Critical")):
        pushed = await push(api, wired.key, event("x", status, key=key, labels=labels))
        assert pushed.status == 200, pushed.body
    stored = {r.alert_key: r.channel_id for r in await all_rows(
        api, alert, alert.c.integration_id == wired.integration_id)}
    # The label names the channel (without case); an unknown name, another account's
    # channel, a missing label or an unmatched case fall to the default.
    assert stored == {"a": payments, "b": search, "c": fallback, "d": fallback,
                      "e": fallback, "h": fallback}

    # A disabled channel of that name is skipped like any dead target.
    assert (await post(api, "/channel/disable", {"channel_id": payments},
                       owner.key)).status_code == 200
    await push(api, wired.key, event("x", key="f", labels={"service": "payments"}))
    assert set(await _alerts(api, wired.integration_id, "f")) == {fallback}

    # A bare label name works as well as labels.<name>.
    body["cases"][0]["name_mapping_label"] = "service"
    check("/route/upsert", await post(api, "/route/upsert", body, owner.key))
    await push(api, wired.key, event("x", key="g", labels={"service": "search"}))
    assert set(await _alerts(api, wired.integration_id, "g")) == {search}


async def test_fallthrough_delivers_one_event_to_several_channels(api: Api,
                                                                  owner: Person) -> None:
    wired = await wire(api, owner, name="Shared")
    prod, db_team, rest, never = [await channel(api, owner, n)
                                  for n in ("Prod", "DB", "Rest", "Never")]
    body = {"integration_id": wired.integration_id, "cases": [
        {"if": [cond("labels.env", "prod")], "channel_ids": [prod], "fallthrough": True},
        {"if": [cond("labels.service", "db")], "channel_ids": [db_team, prod],
         "fallthrough": False},
        {"if": [cond("labels.service", "/.*/")], "channel_ids": [rest], "fallthrough": False},
        {"if": [cond("labels.service", "/.*/")], "channel_ids": [never], "fallthrough": False},
    ], "default": {"channel_ids": [never]}}
    check("/route/upsert", await post(api, "/route/upsert", body, owner.key))

    # prod + db: the first case falls through to the second, which stops the walk; each
    # channel gets its own alert and incident, the same channel only once.
    pushed = await push(api, wired.key, event("db down", key="a",
                                              labels={"env": "prod", "service": "db"}))
    assert pushed.status == 200, pushed.body
    first = await _alerts(api, wired.integration_id, "a")
    assert set(first) == {prod, db_team}
    incidents = {r.channel_id for r in await all_rows(
        api, incident, incident.c.incident_id.in_([a.incident_id for a in first.values()]))}
    assert incidents == {prod, db_team}
    # prod + web: first case, then the third.
    await push(api, wired.key, event("web slow", key="b",
                                     labels={"env": "prod", "service": "web"}))
    assert set(await _alerts(api, wired.integration_id, "b")) == {prod, rest}

    # Another event of the key updates both alerts; the recovery recovers both, wherever
    # its own labels would route it.
    await push(api, wired.key, event("db down", key="a",
                                     labels={"env": "prod", "service": "db"}))
    assert {c: a.event_cnt for c, a in (await _alerts(
        api, wired.integration_id, "a")).items()} == {prod: 2, db_team: 2}
    await push(api, wired.key, event("db down", "Ok", key="a", labels={"service": "zzz"}))
    after = await _alerts(api, wired.integration_id, "a")
    assert {c: (a.end_time > 0, a.alert_status) for c, a in after.items()} == {
        prod: (True, "Ok"), db_team: (True, "Ok")}
    assert never not in after and rest not in after
