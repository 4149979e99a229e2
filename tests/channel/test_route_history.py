"""/route/history/list and /route/preview as the vendor's Terraform provider calls them: its
request bodies (Go structs with `omitempty`), and the fields it decodes."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.db.tables.incident import alert
from tests.channel.test_routes import channel, cond
from tests.enrichment.test_mapping import post
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.conftest import event, push, wire
from tests.incident.ingest_support import all_rows

pytestmark = pytest.mark.anyio


async def _ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await post(api, path, body, who.key)
    assert reply.status_code == 200, reply.text
    assert reply.json().get("error") is None
    return reply.json()["data"]


async def test_each_saved_route_is_a_version_in_the_history(api: Api, owner: Person,
                                                             other_owner: Person) -> None:
    wired = await wire(api, owner, name="Shared")
    db_team, web_team = [await channel(api, owner, n) for n in ("DB", "Web")]
    first_case = {"if": [cond("labels.service", "db")], "channel_ids": [db_team]}
    # UpsertRouteRequest: integration_id and version always, the rest when set.
    await _ok(api, "/route/upsert", {"integration_id": wired.integration_id, "version": 0,
                                     "cases": [first_case],
                                     "default": {"channel_ids": [web_team]}}, owner)
    await _ok(api, "/route/upsert", {
        "integration_id": wired.integration_id, "version": 1,
        "cases": [first_case, {"if": [cond("severity", "Critical")],
                               "channel_ids": [web_team], "fallthrough": True}],
        "sections": [{"name": "Storage", "position": 1}],
        "default": {"channel_ids": [db_team]}}, owner)
    await _ok(api, "/route/upsert", {"integration_id": wired.integration_id, "version": 2,
                                     "default": {"channel_ids": [web_team]}}, owner)

    # ListRouteHistoryRequest with only integration_id: p, limit, asc, orderby omitted.
    data = await _ok(api, "/route/history/list", {"integration_id": wired.integration_id},
                     owner)
    items = data["items"]
    assert [i["version"] for i in items] == [3, 2, 1] and data["total"] == 3
    assert all(i["updated_by"] == owner.person_id and type(i["updated_at"]) is int
               for i in items)
    newest, middle, oldest = items
    assert (newest["cases"], newest["sections"], newest["default"]) == (
        [], [], {"channel_ids": [web_team]})
    assert [c["channel_ids"] for c in middle["cases"]] == [[db_team], [web_team]]
    assert middle["cases"][1]["fallthrough"] is True
    assert middle["cases"][0]["if"] == [cond("labels.service", "db")]
    assert middle["sections"] == [{"name": "Storage", "position": 1}]
    assert oldest["default"] == {"channel_ids": [web_team]}
    # The current route is the newest version.
    info = await _ok(api, "/route/info", {"integration_id": wired.integration_id}, owner)
    assert info["version"] == newest["version"]

    page = await _ok(api, "/route/history/list", {
        "integration_id": wired.integration_id, "p": 2, "limit": 1, "asc": True,
        "orderby": "version"}, owner)
    assert [i["version"] for i in page["items"]] == [2] and page["has_next_page"] is True

    # Readers of integrations may read it; another account's integration is not found.
    member = await new_member(api, owner)
    assert (await post(api, "/route/history/list", {"integration_id": wired.integration_id},
                       member.key)).status_code == 200
    other = await post(api, "/route/history/list", {"integration_id": wired.integration_id},
                       other_owner.key)
    assert other.status_code == 400 and other.json()["error"]["code"] == "ResourceNotFound"
    none_yet = await wire(api, owner, name="Fresh")
    empty = await _ok(api, "/route/history/list", {"integration_id": none_yet.integration_id},
                      owner)
    assert (empty["items"], empty["total"]) == ([], 0)


async def test_preview_routes_stored_alerts_without_storing_anything(
        api: Api, owner: Person, other_owner: Person) -> None:
    wired = await wire(api, owner, name="Shared")
    db_team, web_team, fallback = [await channel(api, owner, n) for n in ("DB", "Web", "Rest")]
    await _ok(api, "/route/upsert", {
        "integration_id": wired.integration_id, "version": 0,
        "cases": [{"if": [cond("labels.service", "db")], "channel_ids": [db_team]}],
        "default": {"channel_ids": [fallback]}}, owner)
    for key, service in (("a", "db"), ("b", "web")):
        pushed = await push(api, wired.key, event(f"{service} down", key=key,
                                                  labels={"service": service}))
        assert pushed.status == 200, pushed.body
    ids = {r.alert_key: r.alert_id for r in await all_rows(
        api, alert, alert.c.integration_id == wired.integration_id)}

    # RoutePreviewRequest: alert_ids and a proposed route (cases, default).
    proposed = {"cases": [
        {"if": [cond("labels.service", "web")], "channel_ids": [web_team],
         "fallthrough": True},
        {"if": [cond("severity", "Critical")], "channel_ids": [db_team]}],
        "default": {"channel_ids": [fallback]}}
    data = await _ok(api, "/route/preview", {"alert_ids": [ids["b"], ids["a"]],
                                             "route": proposed}, owner)
    by_id = {i["alert_id"]: i for i in data["items"]}
    assert [i["alert_id"] for i in data["items"]] == [ids["b"], ids["a"]]
    web, db = by_id[ids["b"]], by_id[ids["a"]]
    assert (web["alert_title"], type(web["start_time"])) == ("web down", int)
    assert (web["matched_cases"], web["channel_ids"]) == (["0", "1"], [web_team, db_team])
    assert (db["matched_cases"], db["channel_ids"]) == (["1"], [db_team])

    # An empty route (the Go struct with both fields omitted): the current configuration.
    current = await _ok(api, "/route/preview", {"alert_ids": [ids["a"], ids["b"]],
                                                "route": {}}, owner)
    assert [(i["matched_cases"], i["channel_ids"]) for i in current["items"]] == [
        (["0"], [db_team]), (["default"], [fallback])]
    # A disabled target: the default takes the alert; without a default, the integration's
    # own channel.
    await _ok(api, "/channel/disable", {"channel_id": web_team}, owner)
    only = {"cases": [{"if": [cond("labels.service", "web")], "channel_ids": [web_team]}]}
    fell = await _ok(api, "/route/preview", {"alert_ids": [ids["b"]], "route": only}, owner)
    assert [(i["matched_cases"], i["channel_ids"]) for i in fell["items"]] == [
        (["0"], [wired.channel_id])]

    # Nothing was stored: the route and its history are as they were.
    info = await _ok(api, "/route/info", {"integration_id": wired.integration_id}, owner)
    assert info["version"] == 1 and len(info["cases"]) == 1
    history = await _ok(api, "/route/history/list", {"integration_id": wired.integration_id},
                        owner)
    assert history["total"] == 1

    # A proposed route is checked as a save checks it; unknown alerts fail the call.
    bad = await post(api, "/route/preview", {"alert_ids": [ids["a"]], "route": {"cases": [
        {"if": [cond("labels.service", "db")], "channel_ids": []}]}}, owner.key)
    assert bad.status_code == 400 and "route.cases[0].channel_ids" in bad.json()["error"][
        "message"]
    theirs = await post(api, "/route/preview", {"alert_ids": [ids["a"]], "route": {}},
                        other_owner.key)
    assert theirs.status_code == 400 and ids["a"] in theirs.json()["error"]["message"]
