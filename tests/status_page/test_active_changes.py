"""/status-page/change/active/list: a page's open incidents and maintenances (not in the
reference: its request is /status-page/change/list's page and type, its items that
operation's change record)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dutyline.config import Settings
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.status_page.admin_helpers import (
    Page,
    check_reference_schema,
    make_incident,
    make_page,
    ok,
)

pytestmark = pytest.mark.anyio
NOW = 1_700_000_000
PATH = "/status-page/change/active/list"


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(NOW)) as client:
        yield client


async def _maintenance(api: Api, who: Person, page: Page, status: str, start: int) -> int:
    return int((await ok(api, "/status-page/change/create", {
        "page_id": page.page_id, "type": "maintenance", "title": f"Upgrade {status}",
        "status": status, "start_at_seconds": start,
        "updates": [{"status": status, "description": status}]}, who.key))["change_id"])


async def _resolve(api: Api, who: Person, page: Page, change_id: int) -> None:
    await ok(api, "/status-page/change/timeline/create", {
        "page_id": page.page_id, "change_id": change_id, "status": "resolved",
        "component_changes": [{"component_id": page.components[0],
                               "status": "operational"}]}, who.key)


async def test_active_list_holds_the_open_incidents_and_maintenances(
    api: Api, owner: Person
) -> None:
    page = await make_page(api, owner)
    other_page = await make_page(api, owner)
    open_incident = await make_incident(api, owner, page, start_at_seconds=NOW - 100)
    closed_incident = await make_incident(api, owner, page, start_at_seconds=NOW - 50)
    await _resolve(api, owner, page, closed_incident)
    scheduled = await _maintenance(api, owner, page, "scheduled", NOW + 3600)
    ongoing = await _maintenance(api, owner, page, "ongoing", NOW - 10)
    await _maintenance(api, owner, page, "completed", NOW - 20)
    await make_incident(api, owner, other_page)

    data = await ok(api, PATH, {"page_id": page.page_id}, owner.key)
    assert [c["change_id"] for c in data["items"]] == [scheduled, ongoing, open_incident]
    assert {c["status"] for c in data["items"]} == {"scheduled", "ongoing", "investigating"}
    incident = data["items"][-1]
    assert incident["updates"][0]["component_changes"][0]["status"] == "degraded"
    assert incident["affected_components"][0]["component_id"] == page.components[0]
    for item in data["items"]:
        check_reference_schema("StatusPageChangeItem", item)

    only = await ok(api, PATH, {"page_id": page.page_id, "type": "incident"}, owner.key)
    assert [c["change_id"] for c in only["items"]] == [open_incident]
    got = await api.raw("GET", PATH, params={"app_key": owner.key, "page_id": page.page_id,
                                             "type": "maintenance"})
    assert got.status_code == 200
    assert [c["change_id"] for c in got.json()["data"]["items"]] == [scheduled, ongoing]

    await _resolve(api, owner, page, open_incident)
    after = await ok(api, PATH, {"page_id": page.page_id, "type": "incident"}, owner.key)
    assert after["items"] == [] and after["total"] == 0


async def test_active_list_carries_what_the_live_services_clients_read(
    api: Api, owner: Person
) -> None:
    """A published client decodes strictly (one field of the wrong JSON type fails its call):
    `total`, and per change its ids, times and `timelines[]` with an integer `timeline_id`."""
    page = await make_page(api, owner)
    incident = await make_incident(api, owner, page, start_at_seconds=NOW - 100)
    await ok(api, "/status-page/change/timeline/create", {
        "page_id": page.page_id, "change_id": incident, "status": "identified",
        "at_seconds": NOW - 40, "description": "a bad deploy"}, owner.key)
    got = await api.raw("GET", PATH, params={"app_key": owner.key, "page_id": page.page_id,
                                             "type": "incident"})
    data = got.json()["data"]
    assert data["total"] == 1 and type(data["total"]) is int
    (item,) = data["items"]
    for name in ("change_id", "page_id", "created_at", "updated_at"):
        assert type(item[name]) is int, name
    for name in ("title", "description", "type", "status"):
        assert type(item[name]) is str, name
    assert item["created_at"] == NOW and item["updated_at"] >= item["created_at"]
    timelines = item["timelines"]
    assert [(t["at"], t["status"]) for t in timelines] == [
        (u["at_seconds"], u["status"]) for u in item["updates"]]
    assert "a bad deploy" in [t["description"] for t in timelines]
    ids = [t["timeline_id"] for t in timelines]
    assert all(type(i) is int and 0 < i < 2**53 for i in ids)
    assert len(set(ids)) == len(ids)
    # The same update keeps its id between reads.
    again = await ok(api, PATH, {"page_id": page.page_id}, owner.key)
    assert [t["timeline_id"] for t in again["items"][0]["timelines"]] == ids
    check_reference_schema("StatusPageChangeItem", item)


async def test_active_list_is_scoped_and_guarded(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    await make_incident(api, owner, page)
    other = await new_account(api, "Other")
    theirs = await api.call(PATH, {"page_id": page.page_id}, key=other.key)
    assert (theirs.status, theirs.code) == (400, "ResourceNotFound")
    unknown = await api.call(PATH, {"page_id": 12345}, key=owner.key)
    assert (unknown.status, unknown.code) == (400, "ResourceNotFound")
    for bad in ({}, {"page_id": 0}, {"page_id": page.page_id, "type": "outage"}):
        assert (await api.call(PATH, bad, key=owner.key)).status == 400
    plain = await new_member(api, owner, name="Plain", builtin="member")
    denied = await api.call(PATH, {"page_id": page.page_id}, key=plain.key)
    assert (denied.status, denied.code) == (403, "AccessDenied")
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    events_id = next(p["id"] for p in perms
                     if p["permission_name"] == "status_page_event_manage")
    role_id = (await ok(api, "/role/upsert", {"role_name": "Events",
                                              "permission_ids": [events_id]},
                        owner.key))["role_id"]
    editor = await new_member(api, owner, name="Editor", builtin=None, role_ids=[role_id])
    assert len((await ok(api, PATH, {"page_id": page.page_id}, editor.key))["items"]) == 1
    assert (await api.call(PATH, {"page_id": page.page_id}, key=None)).status == 401
