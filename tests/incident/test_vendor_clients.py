"""What the vendor's MCP server sends and reads, as it sends it: an incident created with an
empty assignment, a list of the last hour that includes the incident opened this second,
change events with their status and channel name and filtered by type, channels with their
team's and creator's names, and escalation rules with their channel's name. Answers are also
held against the reference's schemas where it describes the operation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from dutyline.notify.template.defaults import PRESET_TEMPLATE_ID
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.change_support import change, change_integration, push_change

pytestmark = pytest.mark.anyio


async def _post(api: Api, path: str, body: dict[str, Any], who: Person) -> httpx.Response:
    return await api.raw("POST", path, params={"app_key": who.key}, json=body)


async def _ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await _post(api, path, body, who)
    assert reply.status_code == 200, reply.text
    assert reply.json().get("error") is None
    return reply.json()["data"]


async def _channel(api: Api, who: Person, name: str, **extra: Any) -> int:
    data = await _ok(api, "/channel/create", {"channel_name": name, **extra}, who)
    return int(data["channel_id"])


async def test_an_empty_assignment_is_no_assignment_and_the_last_hour_includes_now(
        capi: Api, acme: Person, clock: FakeClock) -> None:
    channel_id = await _channel(capi, acme, "Payments")
    # The MCP server's create_incident without assignees.
    created = check("/incident/create", await _post(capi, "/incident/create", {
        "title": "checkout latency", "incident_severity": "Warning", "channel_id": channel_id,
        "description": "p99 over 2s", "assigned_to": {"notify": {}}}, acme))["data"]
    incident_id = created["incident_id"]
    info = await _ok(capi, "/incident/info", {"incident_id": incident_id}, acme)
    assert info["assigned_to"] == {}
    assert info["responders"] in ([], None)
    # /incident/assign still needs someone.
    refused = await _post(capi, "/incident/assign", {
        "incident_ids": [incident_id], "assigned_to": {"notify": {}}}, acme)
    assert refused.status_code == 400 and "assigned_to" in refused.json()["error"]["message"]

    # query_incidents with start_time "1h" and end_time "now", in the same second.
    now = int(clock.now())
    listed = check("/incident/list", await _post(capi, "/incident/list", {
        "p": 1, "limit": 20, "start_time": now - 3600, "end_time": now,
        "channel_ids": [channel_id]}, acme))["data"]
    assert [i["incident_id"] for i in listed["items"]] == [incident_id]
    assert listed["total"] == 1
    # The start is included too; a window ending the second before leaves it out.
    at_start = await _ok(capi, "/incident/list", {"start_time": now, "end_time": now + 60},
                         acme)
    assert at_start["total"] == 1
    before = await _ok(capi, "/incident/list", {"start_time": now - 60, "end_time": now - 1},
                       acme)
    assert before["total"] == 0
    # The insights' windows in seconds include their end as well.
    account = await _ok(capi, "/insight/incident/list",
                        {"start_time": now - 3600, "end_time": now}, acme)
    assert [i["incident_id"] for i in account["items"]] == [incident_id]


async def test_change_list_items_carry_change_status_and_channel_name(
        capi: Api, acme: Person, clock: FakeClock) -> None:
    channel_id = await _channel(capi, acme, "Payments")
    wired = await change_integration(capi, acme, channel_id)
    for key, kind in (("deploy-1", "deployment"), ("flag-1", "feature_flag")):
        pushed = await push_change(capi, wired.key, change(key, type=kind, title=key))
        assert pushed.status == 200, pushed.body
    now = int(clock.now())
    # query_changes: p, limit, start_time "1h", end_time "now", type.
    data = await _ok(capi, "/change/list", {"p": 1, "limit": 20, "start_time": now - 3600,
                                            "end_time": now, "type": "deployment"}, acme)
    (item,) = data["items"]
    assert data["total"] == 1
    assert (item["title"], item["type"], item["status"], item["change_status"],
            item["channel_id"], item["channel_name"]) == (
        "deploy-1", "deployment", "Processing", "Processing", channel_id, "Payments")
    assert type(item["change_id"]) is str and type(item["start_time"]) is int
    everything = await _ok(capi, "/change/list", {"p": 1, "limit": 20,
                                                  "start_time": now - 3600, "end_time": now},
                           acme)
    assert everything["total"] == 2


async def test_channel_list_names_team_and_creator_and_rules_name_their_channel(
        capi: Api, acme: Person) -> None:
    team = await _ok(capi, "/team/upsert", {"team_name": "SRE",
                                            "person_ids": [acme.person_id]}, acme)
    channel_id = await _channel(capi, acme, "Payments", team_id=int(team["team_id"]))
    loose = await _channel(capi, acme, "Loose")
    # list_channels: an empty body.
    listed = check("/channel/list", await _post(capi, "/channel/list", {}, acme))["data"]
    by_id = {i["channel_id"]: i for i in listed["items"]}
    assert (by_id[channel_id]["team_name"], by_id[channel_id]["creator_name"]) == (
        "SRE", "Acme Owner")
    assert by_id[channel_id]["team_id"] == int(team["team_id"])
    assert by_id[channel_id]["creator_id"] == acme.person_id
    assert (by_id[loose]["team_name"], by_id[loose]["creator_name"]) == ("", "Acme Owner")

    await _ok(capi, "/channel/escalate/rule/create", {
        "channel_id": channel_id, "template_id": PRESET_TEMPLATE_ID, "rule_name": "Page",
        "layers": [{"target": {"person_ids": [acme.person_id],
                               "by": {"follow_preference": True}}}]}, acme)
    rules = check("/channel/escalate/rule/list", await _post(
        capi, "/channel/escalate/rule/list", {"channel_id": channel_id}, acme))["data"]
    assert [(r["rule_name"], r["channel_id"], r["channel_name"]) for r in rules["items"]] == [
        ("Page", channel_id, "Payments")]
