"""/status-page/create|update|delete|list|info, section and component upsert/delete."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.status_page import status_component, status_page, status_section
from dutyline.status_page import cache
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.status_page.admin_helpers import make_page, member_with, ok

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock()) as client:
        yield client


async def test_create_public_page_and_read_it_back(api: Api, owner: Person) -> None:
    reply = await api.call("/status-page/create", {
        "page_name": " Acme Status ", "url_name": "acme", "description": "All of Acme",
        "time_zone": "Europe/Paris"}, key=owner.key)
    assert reply.status == 200
    page_id = reply.data["page_id"]
    assert reply.data == {"page_id": page_id, "page_name": "Acme Status", "url_name": "acme"}

    info = await ok(api, "/status-page/info", {"page_id": page_id}, owner.key)
    assert info["page_name"] == "Acme Status"
    assert info["url_name"] == "acme"
    assert info["page_type"] == "public"
    assert info["description"] == "All of Acme"
    assert info["time_zone"] == "Europe/Paris"
    assert info["status"] == "enabled"
    assert info["public_url"] == f"{api.runtime.settings.base_url}/status/acme"
    assert info["sections"] == [] and info["components"] == []
    assert info["created_at"] == info["updated_at"] > 1_600_000_000
    assert "access_token" not in info and "access_token_hash" not in info

    listed = await ok(api, "/status-page/list", {}, owner.key)
    assert (listed["total"], listed["has_next_page"]) == (1, False)
    assert listed["items"][0]["page_id"] == page_id


async def test_reads_answer_get_with_query_parameters(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    got = await api.raw("GET", "/status-page/info",
                        params={"app_key": owner.key, "page_id": str(page.page_id)})
    assert got.status_code == 200
    assert got.json()["data"]["page_id"] == page.page_id
    assert len(got.json()["data"]["components"]) == 2
    listed = await api.raw("GET", "/status-page/list",
                           params={"app_key": owner.key, "limit": "1"})
    assert listed.status_code == 200 and listed.json()["data"]["total"] == 1
    bad = await api.raw("GET", "/status-page/info",
                        params={"app_key": owner.key, "page_id": "x"})
    assert bad.status_code == 400 and "page_id" in bad.json()["error"]["message"]


async def test_internal_page_token_is_returned_once_and_stored_hashed(
        api: Api, owner: Person) -> None:
    created = await ok(api, "/status-page/create", {
        "page_name": "Internal", "url_name": "ops-internal", "page_type": "internal"},
        owner.key)
    token = created["access_token"]
    assert len(token) >= 32
    info = await ok(api, "/status-page/info", {"page_id": created["page_id"]}, owner.key)
    assert info["page_type"] == "internal"
    assert token not in str(info)
    async with api.runtime.db.transaction() as conn:
        stored = (await conn.execute(select(status_page.c.access_token_hash).where(
            status_page.c.page_id == created["page_id"]))).scalar_one()
    assert stored == hashlib.sha256(token.encode()).hexdigest()

    rotated = await ok(api, "/status-page/update", {"page_id": created["page_id"],
                                                    "rotate_access_token": True}, owner.key)
    assert rotated["access_token"] and rotated["access_token"] != token
    plain = await ok(api, "/status-page/update", {"page_id": created["page_id"],
                                                  "description": "x"}, owner.key)
    assert plain == {}
    public = await ok(api, "/status-page/update", {"page_id": created["page_id"],
                                                   "page_type": "public"}, owner.key)
    assert public == {}
    refused = await api.call("/status-page/update", {"page_id": created["page_id"],
                                                     "rotate_access_token": True},
                             key=owner.key)
    assert refused.code == "InvalidParameter" and "rotate_access_token" in refused.message
    made_internal = await ok(api, "/status-page/update", {"page_id": created["page_id"],
                                                          "page_type": "internal"}, owner.key)
    assert made_internal["access_token"]


async def test_page_validation_names_the_field(api: Api, owner: Person,
                                               other_owner: Person) -> None:
    await ok(api, "/status-page/create", {"page_name": "A", "url_name": "taken"},
             other_owner.key)
    cases = [
        ({"page_name": "A", "url_name": "Upper"}, "url_name"),
        ({"page_name": "A", "url_name": "under_score"}, "url_name"),
        ({"page_name": "A", "url_name": "-dash"}, "url_name"),
        ({"page_name": "A", "url_name": "a" * 65}, "url_name"),
        ({"page_name": "A", "url_name": "taken"}, "url_name"),
        ({"page_name": "A"}, "url_name"),
        ({"page_name": "   ", "url_name": "blank"}, "page_name"),
        ({"url_name": "noname"}, "page_name"),
        ({"page_name": "A", "url_name": "tz", "time_zone": "Mars/Olympus"}, "time_zone"),
        ({"page_name": "A", "url_name": "tz", "time_zone": "../../etc/passwd"}, "time_zone"),
        ({"page_name": "A", "url_name": "kind", "page_type": "secret"}, "page_type"),
        ({"page_name": "A", "url_name": "desc", "description": "d" * 1025}, "description"),
    ]
    for body, field in cases:
        reply = await api.call("/status-page/create", body, key=owner.key)
        assert reply.status == 400, body
        assert reply.code == "InvalidParameter", body
        assert field in reply.message, (body, reply.message)
    assert (await ok(api, "/status-page/list", {}, owner.key))["total"] == 0
    page = await make_page(api, owner)
    clash = await api.call("/status-page/update", {"page_id": page.page_id, "url_name": "taken"},
                           key=owner.key)
    assert clash.code == "InvalidParameter" and "url_name" in clash.message
    same = await api.call("/status-page/update", {"page_id": page.page_id,
                                                  "url_name": page.url_name}, key=owner.key)
    assert same.status == 200


async def test_update_changes_only_given_fields(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    before = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    await ok(api, "/status-page/update", {"page_id": page.page_id, "page_name": "Renamed",
                                          "url_name": "renamed", "time_zone": "Asia/Shanghai"},
             owner.key)
    after = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    assert (after["page_name"], after["url_name"], after["time_zone"]) == (
        "Renamed", "renamed", "Asia/Shanghai")
    assert after["description"] == before["description"]
    assert after["public_url"].endswith("/status/renamed")
    # The old address is free again.
    await ok(api, "/status-page/create", {"page_name": "B", "url_name": page.url_name},
             owner.key)


async def test_list_pages_paging(api: Api, owner: Person) -> None:
    for i in range(3):
        await ok(api, "/status-page/create", {"page_name": f"P{i}", "url_name": f"p{i}"},
                 owner.key)
        api.runtime.clock.advance(1)
    first = await ok(api, "/status-page/list", {"p": 1, "limit": 2}, owner.key)
    second = await ok(api, "/status-page/list", {"p": 2, "limit": 2}, owner.key)
    assert (first["total"], first["has_next_page"], len(first["items"])) == (3, True, 2)
    assert (second["has_next_page"], len(second["items"])) == (False, 1)
    ids = {i["page_id"] for i in first["items"]} | {i["page_id"] for i in second["items"]}
    assert len(ids) == 3
    for body, field in [({"p": 0}, "p"), ({"limit": 101}, "limit"),
                        ({"p": 101, "limit": 100}, "p")]:
        reply = await api.call("/status-page/list", body, key=owner.key)
        assert reply.code == "InvalidParameter" and field in reply.message


async def test_sections_and_components(api: Api, owner: Person) -> None:
    page = await make_page(api, owner, components=0)
    other = await ok(api, "/status-page/section/upsert",
                     {"page_id": page.page_id, "name": "Edge", "order_id": 0}, owner.key)
    component_id = (await ok(api, "/status-page/component/upsert", {
        "page_id": page.page_id, "section_id": page.section_id, "name": "API",
        "description": "Public API", "available_since_seconds": 1_600_000_000,
        "order_id": 3, "hide_uptime": True}, owner.key))["component_id"]
    info = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    assert [s["name"] for s in info["sections"]] == ["Edge", "Core"]
    assert info["components"] == [{
        "component_id": component_id, "section_id": page.section_id, "name": "API",
        "description": "Public API", "available_since_seconds": 1_600_000_000, "order_id": 3,
        "hide_uptime": True, "hide_all": False, "status": "operational"}]

    # Update: omitted fields stay; the component moves to the other section.
    await ok(api, "/status-page/component/upsert", {
        "page_id": page.page_id, "component_id": component_id, "name": "API v2",
        "section_id": other["section_id"], "status": "degraded"}, owner.key)
    await ok(api, "/status-page/section/upsert", {
        "page_id": page.page_id, "section_id": page.section_id, "name": "Core 2",
        "description": "d"}, owner.key)
    info = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    [component] = info["components"]
    assert (component["name"], component["section_id"], component["status"]) == (
        "API v2", other["section_id"], "degraded")
    assert (component["description"], component["order_id"], component["hide_uptime"]) == (
        "Public API", 3, True)
    assert {s["section_id"]: s["name"] for s in info["sections"]}[page.section_id] == "Core 2"

    # A section that still holds components is not deleted; an empty one is.
    held = await api.call("/status-page/section/delete", {
        "page_id": page.page_id, "section_id": other["section_id"]}, key=owner.key)
    assert (held.status, held.code) == (400, "ReferenceExist")
    assert other["section_id"] in held.message
    await ok(api, "/status-page/section/delete", {"page_id": page.page_id,
                                                  "section_id": page.section_id}, owner.key)
    await ok(api, "/status-page/component/delete", {"page_id": page.page_id,
                                                    "component_id": component_id}, owner.key)
    await ok(api, "/status-page/section/delete", {"page_id": page.page_id,
                                                  "section_id": other["section_id"]}, owner.key)
    info = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    assert info["sections"] == [] and info["components"] == []


async def test_structure_validation(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    second = await make_page(api, owner)
    cases = [
        ("/status-page/component/upsert", {"page_id": page.page_id, "name": "X",
                                           "section_id": second.section_id}, "section_id",
         "InvalidParameter"),
        ("/status-page/component/upsert", {"page_id": page.page_id, "name": "X",
                                           "status": "broken"}, "status", "InvalidParameter"),
        ("/status-page/component/upsert", {"page_id": page.page_id, "name": " "}, "name",
         "InvalidParameter"),
        ("/status-page/component/upsert", {"page_id": page.page_id}, "name", "InvalidParameter"),
        ("/status-page/component/upsert", {"page_id": page.page_id, "name": "X",
                                           "order_id": -1}, "order_id", "InvalidParameter"),
        ("/status-page/component/upsert", {"page_id": page.page_id, "name": "X",
                                           "component_id": second.components[0]},
         second.components[0], "ResourceNotFound"),
        ("/status-page/section/upsert", {"page_id": page.page_id, "name": ""}, "name",
         "InvalidParameter"),
        ("/status-page/section/upsert", {"page_id": page.page_id, "name": "S",
                                         "section_id": second.section_id}, second.section_id,
         "ResourceNotFound"),
        ("/status-page/section/delete", {"page_id": page.page_id,
                                         "section_id": second.section_id}, second.section_id,
         "ResourceNotFound"),
        ("/status-page/component/delete", {"page_id": page.page_id,
                                           "component_id": second.components[0]},
         second.components[0], "ResourceNotFound"),
        ("/status-page/section/upsert", {"page_id": 0, "name": "S"}, "page_id",
         "InvalidParameter"),
    ]
    for path, body, needle, code in cases:
        reply = await api.call(path, body, key=owner.key)
        assert (reply.status, reply.code) == (400, code), (path, body, reply.body)
        assert needle in reply.message, (path, body, reply.message)
    # Nothing moved: the other page still has its components.
    info = await ok(api, "/status-page/info", {"page_id": second.page_id}, owner.key)
    assert [c["component_id"] for c in info["components"]] == second.components


async def test_delete_page_removes_everything(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    await ok(api, "/status-page/delete", {"page_id": page.page_id}, owner.key)
    gone = await api.call("/status-page/info", {"page_id": page.page_id}, key=owner.key)
    assert (gone.status, gone.code) == (400, "ResourceNotFound")
    async with api.runtime.db.transaction() as conn:
        for table in (status_component, status_section):
            left = (await conn.execute(select(table).where(
                table.c.page_id == page.page_id))).all()
            assert left == []
    again = await api.call("/status-page/delete", {"page_id": page.page_id}, key=owner.key)
    assert again.code == "ResourceNotFound"


async def test_other_accounts_pages_are_invisible_and_untouchable(
        api: Api, owner: Person, other_owner: Person) -> None:
    page = await make_page(api, owner)
    stranger = other_owner.key
    assert (await ok(api, "/status-page/list", {}, stranger))["total"] == 0
    attempts = [
        ("/status-page/info", {"page_id": page.page_id}),
        ("/status-page/update", {"page_id": page.page_id, "page_name": "Stolen"}),
        ("/status-page/delete", {"page_id": page.page_id}),
        ("/status-page/section/upsert", {"page_id": page.page_id, "name": "S"}),
        ("/status-page/section/upsert", {"page_id": page.page_id, "name": "S",
                                         "section_id": page.section_id}),
        ("/status-page/section/delete", {"page_id": page.page_id,
                                         "section_id": page.section_id}),
        ("/status-page/component/upsert", {"page_id": page.page_id, "name": "C",
                                           "component_id": page.components[0]}),
        ("/status-page/component/delete", {"page_id": page.page_id,
                                           "component_id": page.components[0]}),
    ]
    before = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    for path, body in attempts:
        reply = await api.call(path, body, key=stranger)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), (path, reply.body)
        assert str(page.page_id) in reply.message
    after = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    assert after == before
    # A stranger's own page cannot hold the owner's components either.
    theirs = await make_page(api, other_owner, components=0)
    moved = await api.call("/status-page/component/upsert", {
        "page_id": theirs.page_id, "component_id": page.components[0], "name": "C"},
        key=stranger)
    assert moved.code == "ResourceNotFound"


async def test_permissions(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    plain = await new_member(api, owner, name="Plain")
    events = await member_with(api, owner, 202, "Events")
    manager = await member_with(api, owner, 201, "Manager")
    for path, body in [("/status-page/list", {}), ("/status-page/info",
                                                   {"page_id": page.page_id}),
                       ("/status-page/create", {"page_name": "X", "url_name": "x"})]:
        reply = await api.call(path, body, key=plain.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    # Event managers read pages but cannot change them.
    assert (await ok(api, "/status-page/info", {"page_id": page.page_id},
                     events.key))["page_id"] == page.page_id
    assert (await ok(api, "/status-page/list", {}, events.key))["total"] == 1
    for path, body in [
        ("/status-page/create", {"page_name": "X", "url_name": "x"}),
        ("/status-page/update", {"page_id": page.page_id, "page_name": "X"}),
        ("/status-page/delete", {"page_id": page.page_id}),
        ("/status-page/section/upsert", {"page_id": page.page_id, "name": "S"}),
        ("/status-page/section/delete", {"page_id": page.page_id,
                                         "section_id": page.section_id}),
        ("/status-page/component/upsert", {"page_id": page.page_id, "name": "C"}),
        ("/status-page/component/delete", {"page_id": page.page_id,
                                           "component_id": page.components[0]}),
    ]:
        reply = await api.call(path, body, key=events.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    await ok(api, "/status-page/create", {"page_name": "M", "url_name": "by-manager"},
             manager.key)


async def test_structure_writes_invalidate_the_public_cache(api: Api, owner: Person) -> None:
    page = await make_page(api, owner, components=1)
    version = cache.version(page.page_id)
    api.runtime.clock.advance(5)
    await ok(api, "/status-page/component/upsert", {
        "page_id": page.page_id, "component_id": page.components[0], "name": "Renamed"},
        owner.key)
    assert cache.version(page.page_id) > version
    info = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    assert info["updated_at"] == info["created_at"] + 5


async def test_list_items_carry_name_type_sections_and_components(
    api: Api, owner: Person
) -> None:
    """Clients of the live service read `name`, `type` and a page's parts from the list
    beside page_name and page_type."""
    page = await make_page(api, owner, components=2, page_type="internal")
    await make_page(api, owner, components=1)
    listed = await ok(api, "/status-page/list", {}, owner.key)
    by_id = {i["page_id"]: i for i in listed["items"]}
    item = by_id[page.page_id]
    assert (item["name"], item["type"]) == (item["page_name"], item["page_type"])
    assert item["type"] == "internal"
    assert [s["section_id"] for s in item["sections"]] == [page.section_id]
    assert [c["component_id"] for c in item["components"]] == page.components
    assert sorted(len(i["components"]) for i in listed["items"]) == [1, 2]
    info = await ok(api, "/status-page/info", {"page_id": page.page_id}, owner.key)
    assert item == info
