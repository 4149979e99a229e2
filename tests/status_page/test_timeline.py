"""/status-page/change/timeline/create|update|delete; delete exactly as the contract:
`{page_id, change_id, update_id}` -> `data: {}`, status page event management, unknown or
other-account ids -> 400, statuses recomputed from what remains, the last entry kept."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dutyline.config import Settings
from dutyline.status_page import cache
from dutyline.status_page.notify import NOTIFY_JOB
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.status_page.admin_helpers import (
    Page,
    change_info,
    check_reference_schema,
    component_statuses,
    jobs_of,
    make_incident,
    make_page,
    member_with,
    ok,
)

pytestmark = pytest.mark.anyio
NOW = 1_700_000_000
DELETE = "/status-page/change/timeline/delete"


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(NOW)) as client:
        yield client


async def add(api: Api, who: Person, page: Page, change_id: int, status: str, at: int,
              **changes: str) -> str:
    body: dict[str, Any] = {
        "page_id": page.page_id, "change_id": change_id, "status": status, "at_seconds": at,
        "description": f"now {status}",
        "component_changes": [{"component_id": c, "status": s} for c, s in changes.items()]}
    reply = await ok(api, "/status-page/change/timeline/create", body, who.key)
    check_reference_schema("StatusPageChangeTimelineCreateResponse", reply)
    return str(reply["update_id"])


async def three_step_incident(api: Api, who: Person, page: Page) -> tuple[int, list[str]]:
    """investigating (c0 degraded) -> identified (c0 partial_outage) -> resolved."""
    c0 = page.components[0]
    change_id = await make_incident(api, who, page, start_at_seconds=NOW - 300, updates=[
        {"at_seconds": NOW - 300, "status": "investigating",
         "component_changes": [{"component_id": c0, "status": "degraded"}]}])
    first = (await change_info(api, who, page.page_id, change_id))["updates"][0]["update_id"]
    second = await add(api, who, page, change_id, "identified", NOW - 200,
                       **{c0: "partial_outage"})
    third = await add(api, who, page, change_id, "resolved", NOW - 100, **{c0: "operational"})
    return change_id, [first, second, third]


async def test_delete_recomputes_the_event_and_its_components(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    c0, c1 = page.components
    change_id, (first, second, third) = await three_step_incident(api, owner, page)
    info = await change_info(api, owner, page.page_id, change_id)
    assert (info["status"], info["close_at_seconds"]) == ("resolved", NOW - 100)
    assert await component_statuses(api, owner, page.page_id) == {c0: "operational",
                                                                  c1: "operational"}

    version = cache.version(page.page_id)
    response = await api.raw("POST", DELETE, params={"app_key": owner.key}, json={
        "page_id": page.page_id, "change_id": change_id, "update_id": third})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"request_id", "data"} and body["data"] == {}
    assert response.headers["Service-Request-Id"] == body["request_id"]
    assert cache.version(page.page_id) > version

    info = await change_info(api, owner, page.page_id, change_id)
    assert [u["update_id"] for u in info["updates"]] == [first, second]
    assert (info["status"], info["close_at_seconds"]) == ("identified", 0)
    assert info["affected_components"][0]["status"] == "partial_outage"
    assert await component_statuses(api, owner, page.page_id) == {c0: "partial_outage",
                                                                  c1: "operational"}

    await ok(api, DELETE, {"page_id": page.page_id, "change_id": change_id,
                           "update_id": second}, owner.key)
    info = await change_info(api, owner, page.page_id, change_id)
    assert info["status"] == "investigating"
    assert (await component_statuses(api, owner, page.page_id))[c0] == "degraded"

    # Deleting a middle entry: the latest still decides.
    change_id, (first, second, third) = await three_step_incident(api, owner, page)
    await ok(api, DELETE, {"page_id": page.page_id, "change_id": change_id,
                           "update_id": second}, owner.key)
    info = await change_info(api, owner, page.page_id, change_id)
    assert (info["status"], info["close_at_seconds"]) == ("resolved", NOW - 100)


async def test_the_last_entry_is_kept(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    change_id = await make_incident(api, owner, page)
    [only] = (await change_info(api, owner, page.page_id, change_id))["updates"]
    reply = await api.call(DELETE, {"page_id": page.page_id, "change_id": change_id,
                                    "update_id": only["update_id"]}, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert "update_id" in reply.message and "at least one" in reply.message
    zh = await api.call(DELETE, {"page_id": page.page_id, "change_id": change_id,
                                 "update_id": only["update_id"]}, key=owner.key,
                        headers={"Accept-Language": "zh-CN"})
    assert zh.code == "InvalidParameter" and "update_id" in zh.message
    assert zh.message != reply.message
    info = await change_info(api, owner, page.page_id, change_id)
    assert info["updates"] == [only] and info["status"] == "investigating"
    assert (await component_statuses(api, owner, page.page_id))[page.components[0]] == (
        "degraded")


async def test_unknown_and_other_accounts_ids_are_400_and_change_nothing(
        api: Api, owner: Person, other_owner: Person) -> None:
    page = await make_page(api, owner)
    change_id, updates = await three_step_incident(api, owner, page)
    other_change, other_updates = await three_step_incident(api, owner, page)
    theirs = await make_page(api, other_owner)
    their_change, their_updates = await three_step_incident(api, other_owner, theirs)
    before = await change_info(api, owner, page.page_id, change_id)
    their_before = await change_info(api, other_owner, theirs.page_id, their_change)
    statuses = await component_statuses(api, owner, page.page_id)

    mine = {"page_id": page.page_id, "change_id": change_id, "update_id": updates[2]}
    for who, body in [
        (owner, {**mine, "update_id": "0" * 24}),
        (owner, {**mine, "update_id": other_updates[2]}),  # another event's entry
        (owner, {**mine, "change_id": 999_999}),
        (owner, {**mine, "page_id": 999_999}),
        (owner, {**mine, "page_id": theirs.page_id}),
        (owner, {"page_id": theirs.page_id, "change_id": their_change,
                 "update_id": their_updates[2]}),
        (owner, {**mine, "update_id": their_updates[2]}),
        (other_owner, mine),
        (other_owner, {**mine, "page_id": theirs.page_id}),
        (other_owner, {"page_id": theirs.page_id, "change_id": their_change,
                       "update_id": updates[2]}),
    ]:
        reply = await api.call(DELETE, body, key=who.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), (body, reply.body)
    assert await change_info(api, owner, page.page_id, change_id) == before
    assert await change_info(api, other_owner, theirs.page_id, their_change) == their_before
    assert await component_statuses(api, owner, page.page_id) == statuses
    assert len((await change_info(api, owner, page.page_id, other_change))["updates"]) == 3


async def test_delete_request_validation(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    change_id, updates = await three_step_incident(api, owner, page)
    full = {"page_id": page.page_id, "change_id": change_id, "update_id": updates[1]}
    for body, field in [
        ({k: v for k, v in full.items() if k != "page_id"}, "page_id"),
        ({k: v for k, v in full.items() if k != "change_id"}, "change_id"),
        ({k: v for k, v in full.items() if k != "update_id"}, "update_id"),
        ({**full, "page_id": "abc"}, "page_id"),
        ({**full, "change_id": -1}, "change_id"),
        ({**full, "update_id": 12}, "update_id"),
        ({**full, "update_id": ""}, "update_id"),
    ]:
        reply = await api.call(DELETE, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), body
        assert field in reply.message, (body, reply.message)
    no_key = await api.call(DELETE, full, key=None)
    assert (no_key.status, no_key.code) == (401, "Unauthorized")
    assert len((await change_info(api, owner, page.page_id, change_id))["updates"]) == 3


async def test_delete_needs_status_page_event_management(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    change_id, updates = await three_step_incident(api, owner, page)
    plain = await new_member(api, owner, name="Plain")
    manager = await member_with(api, owner, 201, "Manager")
    events = await member_with(api, owner, 202, "Events")
    body = {"page_id": page.page_id, "change_id": change_id, "update_id": updates[2]}
    for who in (plain, manager):
        reply = await api.call(DELETE, body, key=who.key)
        assert (reply.status, reply.code) == (403, "AccessDenied")
    assert len((await change_info(api, owner, page.page_id, change_id))["updates"]) == 3
    reply = await api.call(DELETE, body, key=events.key)
    assert reply.status == 200 and reply.data == {}
    for path, extra in [("/status-page/change/timeline/create", {"status": "monitoring"}),
                        ("/status-page/change/timeline/update",
                         {"update_id": updates[1], "description": "x"})]:
        denied = await api.call(path, {"page_id": page.page_id, "change_id": change_id,
                                       **extra}, key=manager.key)
        assert denied.code == "AccessDenied", path
        await ok(api, path, {"page_id": page.page_id, "change_id": change_id, **extra},
                 events.key)


async def test_component_status_follows_the_latest_open_mention(api: Api,
                                                                owner: Person) -> None:
    page = await make_page(api, owner)
    c0, c1 = page.components
    first = await make_incident(api, owner, page, start_at_seconds=NOW - 500, updates=[
        {"at_seconds": NOW - 500, "component_changes": [{"component_id": c0,
                                                         "status": "degraded"}]}])
    second = await make_incident(api, owner, page, start_at_seconds=NOW - 400, updates=[
        {"at_seconds": NOW - 400, "component_changes": [{"component_id": c0,
                                                         "status": "full_outage"},
                                                        {"component_id": c1,
                                                         "status": "degraded"}]}])
    assert await component_statuses(api, owner, page.page_id) == {c0: "full_outage",
                                                                  c1: "degraded"}
    # An entry back in time does not win over a later one.
    late = await add(api, owner, page, first, "identified", NOW - 450,
                     **{c0: "partial_outage"})
    assert (await component_statuses(api, owner, page.page_id))[c0] == "full_outage"
    # Moved later by an edit, it does.
    await ok(api, "/status-page/change/timeline/update", {
        "page_id": page.page_id, "change_id": first, "update_id": late,
        "at_seconds": NOW - 100}, owner.key)
    assert (await component_statuses(api, owner, page.page_id))[c0] == "partial_outage"
    # Resolving the second event leaves the first one's word on c0; c1 is free again.
    resolved = await add(api, owner, page, second, "resolved", NOW - 50)
    assert await component_statuses(api, owner, page.page_id) == {c0: "partial_outage",
                                                                  c1: "operational"}
    # Deleting the resolution reopens the second event: its mentions count again.
    await ok(api, DELETE, {"page_id": page.page_id, "change_id": second,
                           "update_id": resolved}, owner.key)
    info = await change_info(api, owner, page.page_id, second)
    assert (info["status"], info["close_at_seconds"]) == ("investigating", 0)
    assert await component_statuses(api, owner, page.page_id) == {c0: "partial_outage",
                                                                  c1: "degraded"}
    await ok(api, DELETE, {"page_id": page.page_id, "change_id": first, "update_id": late},
             owner.key)
    assert (await component_statuses(api, owner, page.page_id))[c0] == "full_outage"


async def test_maintenance_timeline(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    c1 = page.components[1]
    change_id = (await ok(api, "/status-page/change/create", {
        "page_id": page.page_id, "type": "maintenance", "title": "Upgrade",
        "status": "scheduled", "start_at_seconds": NOW + 100, "updates": [{}]},
        owner.key))["change_id"]
    await add(api, owner, page, change_id, "ongoing", NOW + 100, **{c1: "under_maintenance"})
    assert (await component_statuses(api, owner, page.page_id))[c1] == "under_maintenance"
    done = await add(api, owner, page, change_id, "completed", NOW + 200,
                     **{c1: "operational"})
    info = await change_info(api, owner, page.page_id, change_id)
    assert (info["status"], info["close_at_seconds"]) == ("completed", NOW + 200)
    assert (await component_statuses(api, owner, page.page_id))[c1] == "operational"
    await ok(api, DELETE, {"page_id": page.page_id, "change_id": change_id,
                           "update_id": done}, owner.key)
    info = await change_info(api, owner, page.page_id, change_id)
    assert (info["status"], info["close_at_seconds"]) == ("ongoing", 0)
    assert (await component_statuses(api, owner, page.page_id))[c1] == "under_maintenance"


async def test_timeline_create_and_update_validation(api: Api, owner: Person,
                                                     other_owner: Person) -> None:
    page = await make_page(api, owner)
    theirs = await make_page(api, other_owner, components=1)
    change_id, updates = await three_step_incident(api, owner, page)
    c0 = page.components[0]
    base = {"page_id": page.page_id, "change_id": change_id}
    create = "/status-page/change/timeline/create"
    update = "/status-page/change/timeline/update"
    for path, body, field in [
        (create, {**base}, "status"),
        (create, {**base, "status": "ongoing"}, "status"),
        (create, {**base, "status": "monitoring", "at_seconds": -1}, "at_seconds"),
        (create, {**base, "status": "monitoring", "component_changes": [
            {"component_id": theirs.components[0], "status": "degraded"}]},
         "component_changes"),
        (create, {**base, "status": "monitoring", "component_changes": [
            {"component_id": c0, "status": "degraded"},
            {"component_id": c0, "status": "degraded"}]}, "component_changes"),
        (create, {**base, "status": "resolved", "component_changes": [
            {"component_id": c0, "status": "degraded"}]}, "component_changes"),
        (update, {**base, "update_id": updates[0], "status": "completed"}, "status"),
        (update, {**base, "update_id": updates[0], "status": "resolved"}, "status"),
        (update, {**base, "update_id": updates[0], "component_changes": [
            {"component_id": c0, "status": "under_maintenance"}]}, "component_changes"),
    ]:
        reply = await api.call(path, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), (path, body)
        assert field in reply.message, (path, body, reply.message)
    for path, body in [
        (update, {**base, "update_id": "f" * 24, "description": "x"}),
        (create, {**base, "change_id": 5, "status": "monitoring"}),
        (update, {"page_id": theirs.page_id, "change_id": change_id,
                  "update_id": updates[0], "description": "x"}),
    ]:
        reply = await api.call(path, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), (path, body)
    stranger = await api.call(update, {**base, "update_id": updates[0], "description": "x"},
                              key=other_owner.key)
    assert stranger.code == "ResourceNotFound"
    info = await change_info(api, owner, page.page_id, change_id)
    assert len(info["updates"]) == 3 and info["status"] == "resolved"
    assert [u["description"] for u in info["updates"]] == ["", "now identified", "now resolved"]


async def test_timeline_update_edits_and_recomputes(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    c0 = page.components[0]
    change_id, (first, second, third) = await three_step_incident(api, owner, page)
    reply = await api.call("/status-page/change/timeline/update", {
        "page_id": page.page_id, "change_id": change_id, "update_id": third,
        "at_seconds": NOW - 250, "description": "resolved early"}, key=owner.key)
    assert reply.status == 200 and reply.data == {}
    info = await change_info(api, owner, page.page_id, change_id)
    assert [u["update_id"] for u in info["updates"]] == [first, third, second]
    assert info["updates"][1]["description"] == "resolved early"
    assert (info["status"], info["close_at_seconds"]) == ("identified", 0)
    assert (await component_statuses(api, owner, page.page_id))[c0] == "partial_outage"
    await ok(api, "/status-page/change/timeline/update", {
        "page_id": page.page_id, "change_id": change_id, "update_id": second,
        "status": "monitoring", "component_changes": [{"component_id": c0,
                                                       "status": "degraded"}]}, owner.key)
    info = await change_info(api, owner, page.page_id, change_id)
    assert info["status"] == "monitoring"
    assert info["updates"][2]["component_changes"] == [
        {"component_id": c0, "component_name": "Service 0", "status": "degraded"}]
    assert (await component_statuses(api, owner, page.page_id))[c0] == "degraded"


async def test_timeline_notifications_follow_the_flags(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    quiet = await make_incident(api, owner, page)
    loud = await make_incident(api, owner, page, notify_subscribers=True)
    assert len(await jobs_of(api, NOTIFY_JOB)) == 1
    await add(api, owner, page, quiet, "identified", NOW)
    assert len(await jobs_of(api, NOTIFY_JOB)) == 1
    update_id = await add(api, owner, page, loud, "identified", NOW)
    jobs = await jobs_of(api, NOTIFY_JOB)
    assert len(jobs) == 2 and jobs[-1]["update_id"] == update_id
    assert jobs[-1]["event"] == "updated"
    await ok(api, "/status-page/change/timeline/create", {
        "page_id": page.page_id, "change_id": quiet, "status": "monitoring",
        "notify_subscribers": True}, owner.key)
    await ok(api, "/status-page/change/timeline/update", {
        "page_id": page.page_id, "change_id": loud, "update_id": update_id,
        "description": "typo"}, owner.key)
    assert len(await jobs_of(api, NOTIFY_JOB)) == 3
    await ok(api, "/status-page/change/timeline/update", {
        "page_id": page.page_id, "change_id": loud, "update_id": update_id,
        "description": "real news", "notify_subscribers": True}, owner.key)
    assert len(await jobs_of(api, NOTIFY_JOB)) == 4
    await ok(api, DELETE, {"page_id": page.page_id, "change_id": loud,
                           "update_id": update_id}, owner.key)
    assert len(await jobs_of(api, NOTIFY_JOB)) == 4
