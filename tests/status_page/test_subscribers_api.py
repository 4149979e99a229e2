"""/status-page/subscriber/list|import|export."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import insert, select

from dutyline.config import Settings
from dutyline.db.tables.status_page import status_subscriber
from dutyline.status_page import tokens
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.status_page.admin_helpers import check_reference_schema, make_page, member_with, ok

pytestmark = pytest.mark.anyio
NOW = 1_700_000_000


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(NOW)) as client:
        yield client


async def add_row(api: Api, page_id: int, account_id: int, email: str, status: str) -> None:
    """A subscriber in a state the API cannot create (pending, unsubscribed)."""
    async with api.runtime.db.transaction() as conn:
        await conn.execute(insert(status_subscriber).values(
            subscriber_id=email.split("@")[0].ljust(24, "0")[:24], page_id=page_id,
            account_id=account_id, email=email, status=status, source="web",
            created_at=NOW, updated_at=NOW))


async def test_import_counts_duplicates_and_lists_invalid(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    c0 = page.components[0]
    await add_row(api, page.page_id, owner.account_id, "left@example.com", "unsubscribed")
    reply = await api.call("/status-page/subscriber/import", {
        "page_id": page.page_id, "method": "email", "subscribers": [
            {"recipient": "Alice@Example.com", "all": True, "locale": "en-US"},
            {"recipient": "bob@example.com", "component_ids": [c0], "all": False,
             "locale": "zh-CN"},
            {"recipient": "alice@example.com"},
            {"recipient": "left@example.com"},
            {"recipient": "not-an-email"},
            {"recipient": "x@example.com", "component_ids": ["f" * 24]},
            {"recipient": "y@example.com", "all": False},
            {"recipient": "z@example.com", "all": False, "change_ids": [5]},
        ]}, key=owner.key)
    assert reply.status == 200
    assert (reply.data["imported"], reply.data["duplicates"]) == (2, 2)
    assert {i["recipient"] for i in reply.data["invalid"]} == {
        "not-an-email", "x@example.com", "y@example.com", "z@example.com"}
    assert all(i["reason"] for i in reply.data["invalid"])

    listed = await ok(api, "/status-page/subscriber/list", {"page_id": page.page_id},
                      owner.key)
    check_reference_schema("StatusPageSubscriberListResponse", listed)
    assert (listed["total"], listed["has_next_page"]) == (2, False)
    alice, bob = listed["items"]
    assert alice == {"recipient": "alice@example.com", "method": "email", "components": [],
                     "all": True, "locale": "en-US"}
    assert (bob["recipient"], bob["all"], bob["locale"]) == ("bob@example.com", False, "zh-CN")
    assert [(c["component_id"], c["name"]) for c in bob["components"]] == [(c0, "Service 0")]

    async with api.runtime.db.transaction() as conn:
        rows = (await conn.execute(select(status_subscriber).where(
            status_subscriber.c.page_id == page.page_id))).all()
    by_email = {r.email: r for r in rows}
    assert by_email["left@example.com"].status == "unsubscribed"  # never resubscribed
    for email in ("alice@example.com", "bob@example.com"):
        row = by_email[email]
        assert (row.status, row.source) == ("confirmed", "import")
        assert row.unsubscribe_token_hash == tokens.unsubscribe_token_hash(
            "test-secret-key", row.subscriber_id)

    again = await ok(api, "/status-page/subscriber/import", {
        "page_id": page.page_id, "method": "email",
        "subscribers": [{"recipient": "bob@example.com"}]}, owner.key)
    assert again == {"imported": 0, "duplicates": 1, "invalid": []}


async def test_import_validation(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    for body, field in [
        ({"page_id": page.page_id, "method": "im", "subscribers": []}, "method"),
        ({"page_id": page.page_id, "method": "sms"}, "method"),
        ({"page_id": page.page_id}, "method"),
        ({"method": "email"}, "page_id"),
        ({"page_id": page.page_id, "method": "email",
          "subscribers": [{"recipient": "a" * 256}]}, "subscribers[0].recipient"),
        ({"page_id": page.page_id, "method": "email", "subscribers": [{}]},
         "subscribers[0].recipient"),
    ]:
        reply = await api.call("/status-page/subscriber/import", body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), body
        assert field in reply.message, (body, reply.message)


async def test_list_pages_filters_and_hides_unconfirmed(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    c0, c1 = page.components
    subscribers = [{"recipient": f"user{i:02}@example.com"} for i in range(12)]
    subscribers.append({"recipient": "c0@example.com", "component_ids": [c0]})
    subscribers.append({"recipient": "c1@example.com", "component_ids": [c1]})
    await ok(api, "/status-page/subscriber/import", {
        "page_id": page.page_id, "method": "email", "subscribers": subscribers}, owner.key)
    await add_row(api, page.page_id, owner.account_id, "pending@example.com", "pending")

    first = await ok(api, "/status-page/subscriber/list", {"page_id": page.page_id}, owner.key)
    assert (first["total"], first["has_next_page"], len(first["items"])) == (14, True, 10)
    second = await ok(api, "/status-page/subscriber/list",
                      {"page_id": page.page_id, "p": 2}, owner.key)
    assert (second["has_next_page"], len(second["items"])) == (False, 4)
    everyone = [i["recipient"] for i in first["items"] + second["items"]]
    assert len(set(everyone)) == 14 and "pending@example.com" not in everyone

    got = await api.raw("GET", "/status-page/subscriber/list", params={
        "app_key": owner.key, "page_id": str(page.page_id), "component_ids": c0,
        "limit": "100"})
    assert got.status_code == 200
    followers = [i["recipient"] for i in got.json()["data"]["items"]]
    assert "c0@example.com" in followers and "c1@example.com" not in followers
    assert got.json()["data"]["total"] == 13  # 12 following everything, plus c0's

    for body, field in [({"page_id": page.page_id, "component_ids": "nope"}, "component_ids"),
                        ({"page_id": page.page_id, "limit": 101}, "limit"),
                        ({"page_id": page.page_id, "p": 0}, "p"), ({}, "page_id")]:
        reply = await api.call("/status-page/subscriber/list", body, key=owner.key)
        assert reply.code == "InvalidParameter" and field in reply.message, body


async def test_export_is_csv_text(api: Api, owner: Person) -> None:
    page = await make_page(api, owner)
    c0 = page.components[0]
    await ok(api, "/status-page/subscriber/import", {
        "page_id": page.page_id, "method": "email", "subscribers": [
            {"recipient": "alice@example.com", "locale": "zh-CN"},
            {"recipient": "bob@example.com", "component_ids": [c0], "locale": "en-US"},
            {"recipient": "=cmd@example.com"},
        ]}, owner.key)
    reply = await api.call("/status-page/subscriber/export", {"page_id": page.page_id},
                           key=owner.key)
    assert reply.status == 200
    check_reference_schema("StatusPageSubscriberExportResponse", reply.data)
    rows = list(csv.reader(io.StringIO(reply.data)))
    assert rows[0] == ["Method", "Recipient", "Components", "Subscribe All", "Locale"]
    assert rows[1:] == [
        ["email", "'=cmd@example.com", "", "true", ""],
        ["email", "alice@example.com", "", "true", "zh-CN"],
        ["email", "bob@example.com", "Service 0", "false", "en-US"],
    ]
    only_c1 = await ok(api, "/status-page/subscriber/export", {
        "page_id": page.page_id, "component_ids": [page.components[1]]}, owner.key)
    assert [r[1] for r in csv.reader(io.StringIO(only_c1))][1:] == [
        "'=cmd@example.com", "alice@example.com"]


async def test_other_accounts_and_permissions(api: Api, owner: Person,
                                              other_owner: Person) -> None:
    page = await make_page(api, owner)
    await ok(api, "/status-page/subscriber/import", {
        "page_id": page.page_id, "method": "email",
        "subscribers": [{"recipient": "alice@example.com"}]}, owner.key)
    calls = [
        ("/status-page/subscriber/list", {"page_id": page.page_id}),
        ("/status-page/subscriber/export", {"page_id": page.page_id}),
        ("/status-page/subscriber/import", {"page_id": page.page_id, "method": "email",
                                            "subscribers": [{"recipient": "m@example.com"}]}),
    ]
    for path, body in calls:
        reply = await api.call(path, body, key=other_owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    plain = await new_member(api, owner, name="Plain")
    events = await member_with(api, owner, 202, "Events")
    for who in (plain, events):
        for path, body in calls:
            reply = await api.call(path, body, key=who.key)
            assert (reply.status, reply.code) == (403, "AccessDenied"), path
    listed = await ok(api, "/status-page/subscriber/list", {"page_id": page.page_id}, owner.key)
    assert [i["recipient"] for i in listed["items"]] == ["alice@example.com"]
    manager = await member_with(api, owner, 201, "Manager")
    assert (await ok(api, "/status-page/subscriber/list", {"page_id": page.page_id},
                     manager.key))["total"] == 1
