"""/status-page/change/create|update|delete|list|info."""

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


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(NOW)) as client:
        yield client


def incident_body(page: Page, **extra: Any) -> dict[str, Any]:
    return {
        "page_id": page.page_id, "type": "incident", "title": "Web Console Degraded",
        "description": "We are investigating.", "status": "investigating",
        "updates": [{"status": "investigating", "description": "Looking into it",
                     "component_changes": [{"component_id": page.components[0],
                                            "status": "degraded"}]}],
        **extra,
    }


async def test_create_incident_and_read_it_back(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    earlier = str(await make_incident(api, owner, page))
    created = await api.call("/status-page/change/create", incident_body(
        page, responders=[owner.person_id], linked_changes=[earlier],
        notify_subscribers=True), key=owner.key)
    assert created.status == 200
    change_id = created.data["change_id"]
    assert created.data == {"change_id": change_id, "change_name": "Web Console Degraded"}
    check_reference_schema("StatusPageChangeCreateResponse", created.data)

    info = await change_info(api, owner, page.page_id, change_id)
    check_reference_schema("StatusPageChangeItem", info)
    assert info["page_id"] == page.page_id
    assert (info["type"], info["title"], info["status"]) == (
        "incident", "Web Console Degraded", "investigating")
    assert info["description"] == "We are investigating."
    assert (info["start_at_seconds"], info["close_at_seconds"]) == (NOW, 0)
    assert (info["responder_ids"], info["linked_change_ids"]) == ([owner.person_id], [earlier])
    assert info["notify_subscribers"] is True and info["is_retrospective"] is False
    [entry] = info["updates"]
    assert entry["at_seconds"] == NOW and entry["status"] == "investigating"
    assert entry["description"] == "Looking into it"
    assert entry["component_changes"] == [{"component_id": page.components[0],
                                           "component_name": "Service 0",
                                           "status": "degraded"}]
    [affected] = info["affected_components"]
    assert affected["component_id"] == page.components[0]
    assert (affected["name"], affected["section_id"], affected["status"]) == (
        "Service 0", page.section_id, "degraded")
    assert await component_statuses(api, owner, page.page_id) == {
        page.components[0]: "degraded", page.components[1]: "operational"}

    got = await api.raw("GET", "/status-page/change/info", params={
        "app_key": owner.key, "page_id": str(page.page_id), "change_id": str(change_id)})
    assert got.status_code == 200 and got.json()["data"] == info


async def test_entries_without_status_carry_the_previous_one(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    change_id = await make_incident(api, owner, page, updates=[
        {"at_seconds": NOW - 100, "description": "first"},
        {"at_seconds": NOW - 50, "status": "identified", "description": "second"},
        {"at_seconds": NOW - 10, "description": "third"},
    ])
    info = await change_info(api, owner, page.page_id, change_id)
    assert [u["status"] for u in info["updates"]] == ["investigating", "identified",
                                                      "identified"]
    assert info["status"] == "identified"


async def test_retrospective_and_maintenance(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    c0, c1 = page.components
    retro = await make_incident(api, owner, page, is_retrospective=True,
                                start_at_seconds=NOW - 3600, updates=[
        {"at_seconds": NOW - 3600, "status": "investigating",
         "component_changes": [{"component_id": c0, "status": "full_outage"}]},
        {"at_seconds": NOW - 600, "status": "resolved",
         "component_changes": [{"component_id": c0, "status": "operational"}]},
    ])
    info = await change_info(api, owner, page.page_id, retro)
    assert (info["status"], info["close_at_seconds"], info["is_retrospective"]) == (
        "resolved", NOW - 600, True)
    assert info["affected_components"][0]["status"] == "operational"
    assert await component_statuses(api, owner, page.page_id) == {c0: "operational",
                                                                  c1: "operational"}

    maintenance = (await ok(api, "/status-page/change/create", {
        "page_id": page.page_id, "type": "maintenance", "title": "DB upgrade",
        "status": "ongoing", "start_at_seconds": NOW, "close_at_seconds": NOW + 7200,
        "auto_update_by_schedule": True,
        "updates": [{"component_changes": [{"component_id": c1,
                                            "status": "under_maintenance"}]}],
    }, owner.key))["change_id"]
    info = await change_info(api, owner, page.page_id, maintenance)
    check_reference_schema("StatusPageChangeItem", info)
    assert (info["type"], info["status"], info["close_at_seconds"]) == (
        "maintenance", "ongoing", NOW + 7200)
    assert info["auto_update_by_schedule"] is True
    assert (await component_statuses(api, owner, page.page_id))[c1] == "under_maintenance"


async def test_create_validation_names_the_field(api: Api, owner: Person,
                                                 other_owner: Person) -> None:
    page = await make_page(api, owner)
    theirs = await make_page(api, other_owner, components=1)
    stranger = await new_member(api, other_owner, name="Stranger")
    c0 = page.components[0]

    def entry(status: str | None = None, **change: str) -> dict[str, Any]:
        body: dict[str, Any] = {"component_changes": [
            {"component_id": cid, "status": s} for cid, s in change.items()]}
        if status:
            body["status"] = status
        return body

    cases: list[tuple[dict[str, Any], str]] = [
        ({"status": "scheduled"}, "status"),
        ({"status": "bogus"}, "status"),
        ({"type": "outage"}, "type"),
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "t" * 256}, "title"),
        ({"updates": []}, "updates"),
        ({"is_retrospective": True}, "updates"),
        ({"updates": [entry("completed")]}, "updates[0].status"),
        ({"updates": [{"component_changes": [{"component_id": theirs.components[0],
                                              "status": "degraded"}]}]},
         "updates[0].component_changes"),
        ({"updates": [{"component_changes": [{"component_id": c0, "status": "degraded"},
                                             {"component_id": c0, "status": "full_outage"}]}]},
         "updates[0].component_changes"),
        ({"updates": [{"component_changes": [{"component_id": c0,
                                              "status": "under_maintenance"}]}]},
         "updates[0].component_changes"),
        ({"updates": [{"component_changes": [{"component_id": c0, "status": "on_fire"}]}]},
         "updates[0].component_changes[0].status"),
        ({"updates": [{"status": "resolved",
                       "component_changes": [{"component_id": c0, "status": "degraded"}]}]},
         "updates[0].component_changes"),
        ({"start_at_seconds": NOW, "close_at_seconds": NOW}, "close_at_seconds"),
        ({"responders": [stranger.person_id]}, "responders"),
        ({"responders": [0]}, "responders"),
        ({"page_id": "1"}, "page_id"),
    ]
    for patch, field in cases:
        reply = await api.call("/status-page/change/create", {**incident_body(page), **patch},
                               key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), (patch, reply.body)
        assert field in reply.message, (patch, reply.message)
    maintenance = {**incident_body(page), "type": "maintenance", "status": "scheduled",
                   "updates": [entry(None, **{c0: "degraded"})]}
    reply = await api.call("/status-page/change/create", maintenance, key=owner.key)
    assert reply.code == "InvalidParameter" and "updates[0].component_changes" in reply.message
    missing = await api.call("/status-page/change/create", {"page_id": page.page_id},
                             key=owner.key)
    assert missing.code == "InvalidParameter"
    listed = await ok(api, "/status-page/change/list", {"page_id": page.page_id,
                                                         "type": "incident"}, owner.key)
    assert listed["items"] == []
    assert set((await component_statuses(api, owner, page.page_id)).values()) == {"operational"}


async def test_list_filters_and_paging(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    ids = []
    for i in range(3):
        ids.append(await make_incident(api, owner, page, start_at_seconds=NOW + i * 100,
                                       title=f"I{i}"))
    await ok(api, "/status-page/change/timeline/create", {
        "page_id": page.page_id, "change_id": ids[0], "status": "resolved"}, owner.key)
    await ok(api, "/status-page/change/create", {
        "page_id": page.page_id, "type": "maintenance", "title": "M", "status": "scheduled",
        "updates": [{}]}, owner.key)

    everything = await ok(api, "/status-page/change/list",
                          {"page_id": page.page_id, "type": "incident"}, owner.key)
    check_reference_schema("StatusPageChangeListResponse", everything)
    assert [c["change_id"] for c in everything["items"]] == ids[::-1]
    assert everything["total"] == 3 and everything["has_next_page"] is False
    resolved = await ok(api, "/status-page/change/list", {
        "page_id": page.page_id, "type": "incident", "status": "resolved"}, owner.key)
    assert [c["change_id"] for c in resolved["items"]] == [ids[0]]
    window = await ok(api, "/status-page/change/list", {
        "page_id": page.page_id, "type": "incident", "start_at_seconds": NOW + 50,
        "end_at_seconds": NOW + 100}, owner.key)
    assert [c["change_id"] for c in window["items"]] == [ids[1]]
    paged = await ok(api, "/status-page/change/list", {
        "page_id": page.page_id, "type": "incident", "p": 2, "limit": 2}, owner.key)
    assert [c["change_id"] for c in paged["items"]] == [ids[0]]
    maintenances = await ok(api, "/status-page/change/list", {
        "page_id": page.page_id, "type": "maintenance", "status": "scheduled"}, owner.key)
    assert [c["title"] for c in maintenances["items"]] == ["M"]

    got = await api.raw("GET", "/status-page/change/list", params={
        "app_key": owner.key, "page_id": str(page.page_id), "type": "incident",
        "status": "investigating"})
    assert got.status_code == 200
    assert [c["change_id"] for c in got.json()["data"]["items"]] == [ids[2], ids[1]]

    for body, field in [({"page_id": page.page_id}, "type"),
                        ({"page_id": page.page_id, "type": "incident", "status": "ongoing"},
                         "status"),
                        ({"type": "incident"}, "page_id"),
                        ({"page_id": page.page_id, "type": "incident", "limit": 0}, "limit")]:
        reply = await api.call("/status-page/change/list", body, key=owner.key)
        assert reply.code == "InvalidParameter" and field in reply.message, body


async def test_update_and_delete(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    change_id = await make_incident(api, owner, page)
    # Linked events may live on another of the account's pages.
    elsewhere = await make_page(api, owner)
    a = str(await make_incident(api, owner, elsewhere))
    b = str(await make_incident(api, owner, elsewhere))
    mate = await new_member(api, owner, name="Mate")
    api.runtime.clock.advance(10)
    version = cache.version(page.page_id)
    updated = await api.call("/status-page/change/update", {
        "page_id": page.page_id, "change_id": change_id, "title": "Renamed",
        "responders": [mate.person_id], "linked_changes": [a, b]}, key=owner.key)
    assert updated.status == 200 and updated.data == {}
    assert cache.version(page.page_id) > version
    info = await change_info(api, owner, page.page_id, change_id)
    assert (info["title"], info["responder_ids"], info["linked_change_ids"]) == (
        "Renamed", [mate.person_id], [a, b])
    assert info["status"] == "investigating" and len(info["updates"]) == 1
    for patch, field in [({"title": " "}, "title"), ({"close_at_seconds": NOW - 5},
                                                     "close_at_seconds"),
                         ({"responders": [123]}, "responders")]:
        reply = await api.call("/status-page/change/update", {
            "page_id": page.page_id, "change_id": change_id, **patch}, key=owner.key)
        assert reply.code == "InvalidParameter" and field in reply.message, patch
    assert (await change_info(api, owner, page.page_id, change_id))["title"] == "Renamed"

    assert (await component_statuses(api, owner, page.page_id))[page.components[0]] == (
        "degraded")
    deleted = await api.call("/status-page/change/delete", {
        "page_id": page.page_id, "change_id": change_id}, key=owner.key)
    assert deleted.status == 200 and deleted.data == {}
    gone = await api.call("/status-page/change/info", {"page_id": page.page_id,
                                                       "change_id": change_id}, key=owner.key)
    assert (gone.status, gone.code) == (400, "ResourceNotFound")
    # The event no longer holds the component down.
    assert (await component_statuses(api, owner, page.page_id))[page.components[0]] == (
        "operational")


async def test_other_accounts_changes_are_invisible(api: Api, owner: Person,
                                                    other_owner: Person) -> None:
    page = await make_page(api, owner)
    change_id = await make_incident(api, owner, page)
    before = await change_info(api, owner, page.page_id, change_id)
    theirs = await make_page(api, other_owner)
    stranger = other_owner.key
    attempts = [
        ("/status-page/change/info", {"page_id": page.page_id, "change_id": change_id}),
        ("/status-page/change/info", {"page_id": theirs.page_id, "change_id": change_id}),
        ("/status-page/change/list", {"page_id": page.page_id, "type": "incident"}),
        ("/status-page/change/update", {"page_id": page.page_id, "change_id": change_id,
                                        "title": "x"}),
        ("/status-page/change/update", {"page_id": theirs.page_id, "change_id": change_id,
                                        "title": "x"}),
        ("/status-page/change/delete", {"page_id": page.page_id, "change_id": change_id}),
        ("/status-page/change/delete", {"page_id": theirs.page_id, "change_id": change_id}),
        ("/status-page/change/create", {**incident_body(page)}),
    ]
    for path, body in attempts:
        reply = await api.call(path, body, key=stranger)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), (path, body)
    # Their page cannot reference the owner's components.
    reply = await api.call("/status-page/change/create", {
        **incident_body(page), "page_id": theirs.page_id}, key=stranger)
    assert reply.code == "InvalidParameter"
    assert await change_info(api, owner, page.page_id, change_id) == before


async def test_permissions(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    change_id = await make_incident(api, owner, page)
    plain = await new_member(api, owner, name="Plain")
    manager = await member_with(api, owner, 201, "Manager")
    events = await member_with(api, owner, 202, "Events")
    writes = [
        ("/status-page/change/create", incident_body(page)),
        ("/status-page/change/update", {"page_id": page.page_id, "change_id": change_id,
                                        "title": "x"}),
        ("/status-page/change/delete", {"page_id": page.page_id, "change_id": change_id}),
    ]
    reads = [
        ("/status-page/change/info", {"page_id": page.page_id, "change_id": change_id}),
        ("/status-page/change/list", {"page_id": page.page_id, "type": "incident"}),
    ]
    for path, body in writes + reads:
        reply = await api.call(path, body, key=plain.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    for path, body in writes:
        reply = await api.call(path, body, key=manager.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    for path, body in reads:
        await ok(api, path, body, manager.key)
    await ok(api, "/status-page/change/create", incident_body(page), events.key)
    await ok(api, "/status-page/change/delete", {"page_id": page.page_id,
                                                 "change_id": change_id}, events.key)


async def test_notify_subscribers_enqueues_in_the_same_transaction(
        api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    await make_incident(api, owner, page)
    assert await jobs_of(api, NOTIFY_JOB) == []
    change_id = await make_incident(api, owner, page, notify_subscribers=True)
    info = await change_info(api, owner, page.page_id, change_id)
    [job] = await jobs_of(api, NOTIFY_JOB)
    assert job["change_id"] == change_id and job["event"] == "created"
    assert job["update_id"] == info["updates"][0]["update_id"]
    # A refused create enqueues nothing.
    await api.call("/status-page/change/create", incident_body(page, notify_subscribers=True,
                                                               title=""), key=owner.key)
    assert len(await jobs_of(api, NOTIFY_JOB)) == 1


async def test_linked_changes_are_the_accounts_own(
    api: Api, owner: Person, other_owner: Person
) -> None:
    """Another account's event id, an unknown id and a malformed one are all not found, on
    create and on update, and nothing is stored."""
    page = await make_page(api, owner)
    theirs = str(await make_incident(api, other_owner, await make_page(api, other_owner)))
    mine = await make_incident(api, owner, page)
    for linked in ([theirs], ["123456"], ["ext-1"], [str(mine), theirs]):
        created = await api.call("/status-page/change/create",
                                 incident_body(page, linked_changes=linked), key=owner.key)
        assert (created.status, created.code) == (400, "ResourceNotFound"), linked
        updated = await api.call("/status-page/change/update", {
            "page_id": page.page_id, "change_id": mine, "linked_changes": linked},
            key=owner.key)
        assert (updated.status, updated.code) == (400, "ResourceNotFound"), linked
    assert (await change_info(api, owner, page.page_id, mine))["linked_change_ids"] == []
    listed = await api.call("/status-page/change/list",
                            {"page_id": page.page_id, "type": "incident"}, key=owner.key)
    assert listed.data["total"] == 1
