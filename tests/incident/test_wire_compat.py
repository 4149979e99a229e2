"""Wire compatibility of incident reads with clients of the live service: feed
items in milliseconds with reference-shaped details, alert previews with the names clients
read, the reference's optional incident fields, and `query` by id or num. Every response is
held against the reference schemas."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import update

from dutyline.db.tables.channel import integration
from dutyline.db.tables.incident import alert, alert_event
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push

pytestmark = pytest.mark.anyio
Make = Callable[..., Awaitable[Wired]]
T0 = 1_700_000_000


async def _post(api: Api, path: str, body: dict[str, Any], who: Person) -> dict[str, Any]:
    response = await api.raw("POST", path, params={"app_key": who.key}, json=body)
    assert response.status_code == 200, response.text
    return check(path, response)


def window(clock: FakeClock, **extra: Any) -> dict[str, Any]:
    now = int(clock.now())
    return {"start_time": now - 3600, "end_time": now + 3600, **extra}


async def _incident_of(api: Api, clock: FakeClock, who: Person) -> dict[str, Any]:
    listed = await _post(api, "/incident/list", window(clock), who)
    (item,) = listed["data"]["items"]
    return dict(item)


async def test_recovered_incident_feed_and_alert_previews(
    capi: Api, clock: FakeClock, acme: Person, channel_with_integration: Make
) -> None:
    wired = await channel_with_integration()
    assert (await push(capi, wired.key, event(key="k1"))).status == 200
    clock.advance(60)
    assert (await push(capi, wired.key, event(key="k1", status="Ok"))).status == 200
    incident = await _incident_of(capi, clock, acme)
    assert incident["progress"] == "Closed"
    assert incident["integration_type"] == "standard"
    assert "creator" not in incident and "reporter_email" not in incident  # by the system

    feed = await _post(capi, "/incident/feed", {"incident_id": incident["incident_id"],
                                                "asc": True}, acme)
    items = feed["data"]["items"]
    assert [i["type"] for i in items] == ["i_new", "i_rslv"]
    assert items[0]["created_at"] == T0 * 1000
    assert items[1]["created_at"] == (T0 + 60) * 1000
    assert items[1]["detail"]["from"] == "event"

    alerts = await _post(capi, "/incident/alert/list",
                         {"incident_id": incident["incident_id"]}, acme)
    (preview,) = alerts["data"]["items"]
    assert "events" not in preview
    assert (preview["severity"], preview["status"], preview["trigger_time"]) == (
        preview["alert_severity"], preview["alert_status"], preview["start_time"])
    assert (preview["severity"], preview["status"], preview["trigger_time"]) == (
        "Critical", "Ok", T0)
    with_events = await _post(capi, "/incident/alert/list", {
        "incident_id": incident["incident_id"], "include_events": True}, acme)
    assert len(with_events["data"]["items"][0]["events"]) == 2

    # Alerts embedded in the incident when asked for, with the same preview names.
    info = await _post(capi, "/incident/info", {"incident_id": incident["incident_id"],
                                                "include_alerts": True}, acme)
    (embedded,) = info["data"]["alerts"]
    assert embedded["alert_id"] == preview["alert_id"]
    assert embedded["trigger_time"] == T0 and "events" not in embedded
    plain = await _post(capi, "/incident/info", {"incident_id": incident["incident_id"]}, acme)
    assert "alerts" not in plain["data"]
    by_ids = await _post(capi, "/incident/list-by-ids", {
        "incident_ids": [incident["incident_id"]], "include_alerts": True}, acme)
    assert len(by_ids["data"]["items"][0]["alerts"]) == 1


async def test_manual_incident_people_and_assignment_feed(
    capi: Api, clock: FakeClock, acme: Person
) -> None:
    mate = await new_member(capi, acme, name="Mate", builtin="admin", email="mate@acme.example")
    created = await _post(capi, "/incident/create", {
        "incident_severity": "Warning", "title": "db slow",
        "assigned_to": {"person_ids": [mate.person_id]}}, acme)
    incident_id = created["data"]["incident_id"]
    clock.advance(5)
    await _post(capi, "/incident/resolve", {"incident_ids": [incident_id]}, mate)
    clock.advance(5)
    await _post(capi, "/incident/reset", {"incident_id": incident_id,
                                           "description": "now explained"}, acme)

    info = (await _post(capi, "/incident/info", {"incident_id": incident_id}, acme))["data"]
    assert info["creator"] == {"person_id": acme.person_id, "person_name": "Acme Owner",
                               "email": "owner@acme.example"}
    assert info["reporter_email"] == "owner@acme.example"
    assert info["closer"]["person_id"] == mate.person_id
    assert info["closer"]["email"] == "mate@acme.example"
    assert info["links"] == []

    feed = await _post(capi, "/incident/feed", {"incident_id": incident_id, "asc": True},
                       acme)
    by_type = {i["type"]: i["detail"] for i in feed["data"]["items"]}
    assign = by_type["i_assign"]
    assert "assigned_to" not in assign
    assert assign["person_ids"] == [mate.person_id] and assign["to"] == [mate.person_id]
    assert assign["type"] == "assign"
    assert by_type["i_rslv"]["from"] == "console"
    assert by_type["i_r_desc"] == {}


async def test_query_finds_an_incident_by_id_or_num(
    capi: Api, clock: FakeClock, acme: Person, other_owner_capi: Person
) -> None:
    ids = []
    for title in ("alpha outage", "beta outage"):
        ids.append((await _post(capi, "/incident/create", {
            "incident_severity": "Info", "title": title}, acme))["data"]["incident_id"])
    target = (await _post(capi, "/incident/info", {"incident_id": ids[1]}, acme))["data"]

    async def found(query: str, who: Person = acme) -> list[str]:
        listed = await _post(capi, "/incident/list", window(clock, query=query), who)
        return [i["incident_id"] for i in listed["data"]["items"]]

    assert await found(ids[1]) == [ids[1]]
    assert await found(ids[1].upper()) == [ids[1]]
    assert await found(target["num"]) == [ids[1]]
    assert await found(target["num"].lower()) == [ids[1]]
    assert sorted(await found("outage")) == sorted(ids)
    # Another account cannot find it by id or num.
    assert await found(ids[1], other_owner_capi) == []
    assert await found(target["num"], other_owner_capi) == []


@pytest.fixture
async def other_owner_capi(capi: Api) -> Person:
    from tests.fixtures.accounts import new_account

    return await new_account(capi, "Globex")


async def test_alert_records_name_the_integrations_own_type_in_every_read(
    capi: Api, clock: FakeClock, acme: Person, channel_with_integration: Make
) -> None:
    """/alert/* and the incident's alert reads map an alert through one mapper: the same
    integration type (the integration's own, none when it cannot be found, never a made-up
    "standard"), and events carrying every reference AlertEventItem field."""
    wired = await channel_with_integration()
    assert (await push(capi, wired.key, event(key="k1"))).status == 200
    async with capi.runtime.db.transaction() as conn:
        await conn.execute(update(integration).where(
            integration.c.integration_id == wired.integration_id).values(
            integration_type="prometheus"))
    incident = await _incident_of(capi, clock, acme)

    async def types() -> list[tuple[str, str]]:
        by_incident = await _post(capi, "/incident/alert/list", {
            "incident_id": incident["incident_id"], "include_events": True}, acme)
        (info,) = by_incident["data"]["items"]
        listed = await _post(capi, "/alert/list", window(clock), acme)
        (item,) = listed["data"]["items"]
        one = await _post(capi, "/alert/info", {"alert_id": item["alert_id"]}, acme)
        events = await _post(capi, "/alert/event/list", {"alert_id": item["alert_id"]}, acme)
        (from_incident,) = info["events"]
        (from_alert,) = events["data"]["items"]
        assert from_incident == from_alert
        return [(r["integration_type"], r["data_source_type"])
                for r in (info, item, one["data"])] + [
            (e["integration_type"], e["integration_type"]) for e in (from_incident,)]

    assert await types() == [("prometheus", "prometheus")] * 4
    async with capi.runtime.db.transaction() as conn:
        await conn.execute(update(alert).values(integration_id=987_654))
        await conn.execute(update(alert_event).values(integration_id=987_654))
    assert await types() == [("", "")] * 4


async def test_frequency_counts_the_channels_same_title_in_the_week_before(
    capi: Api, clock: FakeClock, acme: Person, channel_with_integration: Make
) -> None:
    """`frequency` (reference: "frequent" or "rare"): frequent once the channel opened
    RECURRENCE_FREQUENT (3) other incidents with the same title in the 7 days before."""
    wired = await channel_with_integration()
    other = await channel_with_integration(name="Other")

    async def create(title: str, channel_id: int = wired.channel_id) -> str:
        clock.advance(60)
        made = await _post(capi, "/incident/create", {
            "incident_severity": "Info", "title": title, "channel_id": channel_id}, acme)
        return str(made["data"]["incident_id"])

    old = await create("disk full")
    clock.advance(8 * 86_400)  # out of the window of what follows
    recent = [await create("disk full") for _ in range(3)]
    unrelated = await create("cpu high")
    elsewhere = await create("disk full", other.channel_id)
    fourth = await create("disk full")

    now = int(clock.now())
    listed = await _post(capi, "/incident/list", {
        "start_time": now - 10 * 86_400, "end_time": now + 60, "limit": 100}, acme)
    frequency = {i["incident_id"]: i["frequency"] for i in listed["data"]["items"]}
    assert frequency == {old: "rare", recent[0]: "rare", recent[1]: "rare",
                         recent[2]: "rare", unrelated: "rare", elsewhere: "rare",
                         fourth: "frequent"}
    info = await _post(capi, "/incident/info", {"incident_id": fourth}, acme)
    assert info["data"]["frequency"] == "frequent"
    by_ids = await _post(capi, "/incident/list-by-ids", {"incident_ids": [fourth, old]}, acme)
    assert {i["incident_id"]: i["frequency"] for i in by_ids["data"]["items"]} == {
        fourth: "frequent", old: "rare"}


async def test_owner_object_after_a_merge_names_the_owner(
    capi: Api, clock: FakeClock, acme: Person
) -> None:
    mate = await new_member(capi, acme, name="Mate", builtin="admin", email="mate@acme.example")
    ids = [(await _post(capi, "/incident/create", {
        "incident_severity": "Info", "title": t}, acme))["data"]["incident_id"]
        for t in ("one", "two")]
    plain = (await _post(capi, "/incident/info", {"incident_id": ids[1]}, acme))["data"]
    assert "owner" not in plain and plain["owner_id"] == 0
    await _post(capi, "/incident/merge", {"source_incident_ids": [ids[0]],
                                          "target_incident_id": ids[1],
                                          "owner_id": mate.person_id}, acme)
    info = (await _post(capi, "/incident/info", {"incident_id": ids[1]}, acme))["data"]
    assert info["owner_id"] == mate.person_id
    assert info["owner"] == {"person_id": mate.person_id, "person_name": "Mate",
                             "email": "mate@acme.example"}
