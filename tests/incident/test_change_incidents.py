"""What changed before an incident broke: the changes of its channel shown in /incident/info
(`recent_changes`) and in its i_new feed entry, and only those."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.change_support import (
    change,
    change_integration,
    push_change,
    wire_changes,
)
from tests.incident.conftest import event, push, wire
from tests.incident.test_changes import assert_item_types

pytestmark = pytest.mark.anyio


async def _open(api: Api, who: Person, channel_id: int, title: str = "api down") -> str:
    reply = await api.call("/incident/create", {"incident_severity": "Critical",
                                                "title": title, "channel_id": channel_id},
                           key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["incident_id"])


async def _info(api: Api, who: Person, incident_id: str) -> dict[str, Any]:
    reply = await api.call("/incident/info", {"incident_id": incident_id}, key=who.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


async def _new_entry(api: Api, who: Person, incident_id: str) -> dict[str, Any]:
    reply = await api.call("/incident/feed", {"incident_id": incident_id, "types": ["i_new"]},
                           key=who.key)
    assert reply.status == 200, reply.body
    (entry,) = reply.data["items"]
    return dict(entry["detail"])


async def test_an_incident_shows_the_changes_of_its_channel_just_before_it(
    capi: Api, clock: FakeClock, acme: Person
) -> None:
    deploys = await wire_changes(capi, acme)
    elsewhere = await wire_changes(capi, acme, name="Search")
    t = int(clock.now())
    await push_change(capi, deploys.key, change(key="old", status="Done",
                                                start_time=t - 4 * 3600, end_time=t - 3 * 3600))
    await push_change(capi, deploys.key, change(key="long", status="Processing",
                                                start_time=t - 5 * 3600))
    await push_change(capi, deploys.key, change(key="ended-late", status="Done",
                                                start_time=t - 3 * 3600, end_time=t - 3000))
    await push_change(capi, deploys.key, change(key="week-old", status="Processing",
                                                start_time=t - 7 * 86_400))
    recent = await push_change(capi, deploys.key, change(key="recent", type="deployment",
                                                         labels={"service": "api"}))
    await push_change(capi, elsewhere.key, change(key="other-channel"))
    clock.advance(600)
    incident_id = await _open(capi, acme, deploys.channel_id)
    # A change after the incident opened did not cause it.
    clock.advance(60)
    await push_change(capi, deploys.key, change(key="after"))

    info = await _info(capi, acme, incident_id)
    shown = info["recent_changes"]
    assert [c["change_key"] for c in shown] == ["recent", "ended-late", "long"]
    for item in shown:
        assert_item_types(item)
    assert shown[0]["change_id"] == recent.data["change_id"]
    assert shown[0]["labels"] == {"service": "api"}

    detail = await _new_entry(capi, acme, incident_id)
    assert [c["change_id"] for c in detail["changes"]] == [c["change_id"] for c in shown]
    first = detail["changes"][0]
    assert first == {"change_id": recent.data["change_id"], "title": "Deploy api v42",
                     "type": "deployment", "status": "Processing", "start_time": t,
                     "end_time": 0}
    assert (detail["severity"], detail["title"]) == ("Critical", "api down")


async def test_incidents_without_changes_before_them_show_none(
    capi: Api, clock: FakeClock, acme: Person
) -> None:
    deploys = await wire_changes(capi, acme)
    quiet = await wire_changes(capi, acme, name="Quiet")
    await push_change(capi, deploys.key, change())
    incident_id = await _open(capi, acme, quiet.channel_id)
    info = await _info(capi, acme, incident_id)
    assert info["recent_changes"] == []
    assert "changes" not in await _new_entry(capi, acme, incident_id)
    # No channel: no changes; lists do not carry the field.
    loose = await capi.call("/incident/create", {"incident_severity": "Info", "title": "x"},
                            key=acme.key)
    assert (await _info(capi, acme, loose.data["incident_id"]))["recent_changes"] == []
    listed = await capi.call("/incident/list", {"start_time": int(clock.now()) - 60,
                                                "end_time": int(clock.now()) + 60},
                             key=acme.key)
    assert all("recent_changes" not in i for i in listed.data["items"])


async def test_an_incident_opened_by_an_alert_shows_the_changes_too(
    capi: Api, clock: FakeClock, acme: Person
) -> None:
    alerts = await wire(capi, acme)
    deploys = await wire_changes(capi, acme, name="Deploys of Payments")
    # The change integration of the alerts' own channel.
    same = await change_integration(capi, acme, alerts.channel_id, name="CI")
    await push_change(capi, same.key, change(key="ci-1"))
    await push_change(capi, deploys.key, change(key="not-this-channel"))
    clock.advance(30)
    assert (await push(capi, alerts.key, event())).status == 200
    listed = await capi.call("/incident/list", {"start_time": int(clock.now()) - 60,
                                                "end_time": int(clock.now()) + 60,
                                                "channel_ids": [alerts.channel_id]},
                             key=acme.key)
    (item,) = listed.data["items"]
    info = await _info(capi, acme, item["incident_id"])
    assert [c["change_key"] for c in info["recent_changes"]] == ["ci-1"]
    detail = await _new_entry(capi, acme, item["incident_id"])
    assert [c["title"] for c in detail["changes"]] == ["Deploy api v42"]


async def test_a_member_sees_the_changes_of_incidents_they_see(
    capi: Api, acme: Person
) -> None:
    deploys = await wire_changes(capi, acme)
    await push_change(capi, deploys.key, change())
    incident_id = await _open(capi, acme, deploys.channel_id)
    member = await new_member(capi, acme, name="Reader")
    info = await _info(capi, member, incident_id)
    assert len(info["recent_changes"]) == 1
