"""Who may read insights, and what they count: the incident read permissions, the caller's
account only, and no private channel the caller cannot see. Requests are validated with 400s
naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import insert

from dutyline.db.tables.incident import alert
from dutyline.kit.ids import hex_id
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.insight.conftest import START, ok

pytestmark = pytest.mark.anyio

END = START + 86_400
JSON = {"Accept": "application/json"}  # exports answer the envelope then
PATHS = ["/insight/account", "/insight/channel", "/insight/team", "/insight/responder",
         "/insight/incident/list", "/insight/alert/topk-by-label", "/insight/incident/export",
         "/insight/channel/export", "/insight/team/export", "/insight/responder/export"]


def _window(**extra: Any) -> dict[str, Any]:
    return {"start_time": START, "end_time": END, "label": "check", **extra}


async def _role_member(api: Api, owner: Person, name: str, permissions: list[str]) -> Person:
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    ids = [p["id"] for p in perms if p["permission_name"] in permissions]
    role = await ok(api, "/role/upsert", {"role_name": f"Role {name}", "permission_ids": ids},
                    owner)
    return await new_member(api, owner, name=name, builtin=None,
                            role_ids=[role.data["role_id"]])


async def _incident(api: Api, who: Person, title: str, channel_id: int = 0) -> str:
    reply = await ok(api, "/incident/create", {"incident_severity": "Warning", "title": title,
                                                "channel_id": channel_id}, who)
    return str(reply.data["incident_id"])


@pytest.mark.parametrize("path", PATHS)
async def test_permissions(capi: Api, acme: Person, path: str) -> None:
    nothing = await _role_member(capi, acme, "Nobody", ["template_view"])
    denied = await capi.call(path, _window(), key=nothing.key)
    assert (denied.status, denied.code) == (403, "AccessDenied")
    for who in (await new_member(capi, acme, name="Mem"),  # built-in Member: channel_view
                await _role_member(capi, acme, "Resp", ["incident_manage"]), acme):
        reply = await capi.call(path, _window(), key=who.key, headers=JSON)
        assert reply.status == 200, (path, reply.body)
    unauthorized = await capi.raw("POST", path, json=_window())
    assert unauthorized.status_code == 401
    check(path, unauthorized)


async def test_private_channels_and_other_accounts_are_left_out(
    capi: Api, acme: Person
) -> None:
    insider = await _role_member(capi, acme, "Ines", ["channel_view"])
    outsider = await _role_member(capi, acme, "Otto", ["channel_view"])
    team = (await ok(capi, "/team/upsert", {"team_name": "Payments team",
                                            "person_ids": [insider.person_id]}, acme)).data
    secret = (await ok(capi, "/channel/create", {"channel_name": "Secret", "is_private": True,
                                                 "team_id": team["team_id"]}, acme)).data
    public = (await ok(capi, "/channel/create", {"channel_name": "Open"}, acme)).data
    await _incident(capi, acme, "secret down", secret["channel_id"])
    await _incident(capi, acme, "open down", public["channel_id"])
    await _incident(capi, acme, "no channel")
    globex = await new_account(capi, "Globex")
    await _incident(capi, globex, "elsewhere")

    async def count(who: Person, **extra: Any) -> int:
        reply = await ok(capi, "/insight/account", _window(**extra), who)
        return int(reply.data["items"][0]["total_incident_cnt"])

    assert await count(acme) == 3
    assert await count(insider) == 3
    assert await count(outsider) == 2
    assert await count(outsider, channel_ids=[secret["channel_id"]]) == 0
    assert await count(globex) == 1
    channels = await ok(capi, "/insight/channel", _window(), outsider)
    assert {i["channel_id"] for i in channels.data["items"]} == {0, public["channel_id"]}
    listed = await ok(capi, "/insight/incident/list", _window(), outsider)
    assert sorted(i["title"] for i in listed.data["items"]) == ["no channel", "open down"]
    assert listed.data["total"] == 2
    exported = await capi.raw("POST", "/insight/incident/export",
                              params={"app_key": outsider.key}, json=_window())
    assert "secret down" not in exported.text and "open down" in exported.text
    teams = await ok(capi, "/insight/team", _window(), outsider)
    assert {i["team_id"]: i["total_incident_cnt"] for i in teams.data["items"]} == {0: 2}

    # Alerts of the private channel are as hidden as its incidents.
    t = START + 60
    async with capi.runtime.db.transaction() as conn:
        for channel_id, check_name in ((secret["channel_id"], "secret-check"),
                                       (public["channel_id"], "open-check")):
            await conn.execute(insert(alert).values(
                alert_id=hex_id(), account_id=acme.account_id, channel_id=channel_id,
                integration_id=0, alert_key=hex_id(), title="x", alert_severity="Critical",
                alert_status="Critical", start_time=t, last_time=t, created_at=t, updated_at=t,
                labels=f'{{"check":"{check_name}"}}'))
    for who, seen in ((outsider, ["open-check"]), (insider, ["open-check", "secret-check"])):
        top = await ok(capi, "/insight/alert/topk-by-label", _window(), who)
        assert sorted(i["label"] for i in top.data["items"]) == seen


@pytest.mark.parametrize(("body", "field"), [
    ({"end_time": START}, "end_time"),
    ({"end_time": START + 367 * 86_400}, "end_time"),
    ({"end_time": START + 3600, "aggregate_unit": "day"}, "end_time"),
    ({"end_time": START + 32 * 86_400, "aggregate_unit": "day"}, "end_time"),
    ({"time_zone": "Mars/Olympus"}, "time_zone"),
    ({"aggregate_unit": "hour"}, "aggregate_unit"),
    ({"severities": ["Critical", "Warning", "Info", "Ok"]}, "severities"),
    ({"channel_ids": list(range(1, 102))}, "channel_ids"),
    ({"seconds_to_ack_from": 10, "seconds_to_ack_to": 5}, "seconds_to_ack_to"),
    ({"fields": {"team": 3}}, "fields"),
    ({"incident_ids": ["nothex"]}, "incident_ids[0]"),
])
async def test_validation(capi: Api, acme: Person, body: dict[str, Any], field: str) -> None:
    reply = await capi.raw("POST", "/insight/account", params={"app_key": acme.key},
                           json=_window(**body))
    assert reply.status_code == 400
    data = check("/insight/account", reply)
    assert data["error"]["code"] == "InvalidParameter"
    assert field in data["error"]["message"]


async def test_more_validation(capi: Api, acme: Person) -> None:
    cursor = await capi.call("/insight/incident/list", _window(search_after_ctx="x"),
                             key=acme.key)
    assert (cursor.status, cursor.code) == (400, "InvalidParameter")
    assert "search_after_ctx" in cursor.message
    window = await capi.call("/insight/incident/list", _window(p=200, limit=100), key=acme.key)
    assert window.status == 400
    label = await capi.call("/insight/alert/topk-by-label", _window(label="host"), key=acme.key)
    assert label.status == 400 and "label" in label.message
    missing = await capi.call("/insight/account", {"start_time": START}, key=acme.key)
    assert missing.status == 400 and "end_time" in missing.message
    unknown = await capi.call("/insight/channel/export", _window(export_fields=["nope"]),
                              key=acme.key, headers=JSON)
    assert unknown.status == 400 and "export_fields" in unknown.message


async def test_is_my_team_without_a_team_counts_nothing(capi: Api, acme: Person) -> None:
    await _incident(capi, acme, "db down")
    reply = await ok(capi, "/insight/account", _window(is_my_team=True), acme)
    assert reply.data["items"][0]["total_incident_cnt"] == 0
    listed = await ok(capi, "/insight/incident/list", _window(is_my_team=True), acme)
    assert listed.data == {"total": 0, "has_next_page": False, "items": []}
