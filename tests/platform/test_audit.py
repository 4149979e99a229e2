"""The audit log: what the operation layer records, and /audit/* reading it back."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest
from sqlalchemy import select

from dutyline.db.tables.platform import audit_log
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, Reply

pytestmark = pytest.mark.anyio

DAY = 24 * 3600


def window(**extra: Any) -> dict[str, Any]:
    """A search window around now (the api fixture runs on the real clock)."""
    now = int(time.time())
    return {"start_time": now - 3600, "end_time": now + 3600, **extra}


async def search(api: Api, who: Person, **extra: Any) -> Reply:
    return await api.call("/audit/search", window(**extra), key=who.key)


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        rows = await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)
        )
        return list(rows)


async def test_successful_write_is_audited(api: Api, owner: Person) -> None:
    made = await api.call("/team/upsert", {"team_name": "SRE"}, key=owner.key)
    assert made.status == 200
    team_id = made.data["team_id"]
    found = await search(api, owner)
    assert found.status == 200
    assert found.data["total"] == 1
    assert found.data["search_after_ctx"] == ""
    doc = found.data["docs"][0]
    assert doc["account_id"] == owner.account_id
    assert doc["member_id"] == owner.person_id
    assert doc["member_name"] == "Acme Owner"
    assert doc["operation"] == "team.upsert"
    assert doc["operation_name"]  # a label, from the operation's summary
    assert doc["request_id"] == made.body["request_id"] == made.headers["Service-Request-Id"]
    assert doc["outcome"] == "OK"
    assert doc["target_ids"] == [str(team_id)]
    assert len(doc["key_suffix"]) >= 4 and owner.key.endswith(doc["key_suffix"])
    assert doc["is_write"] is True and doc["is_dangerous"] is False
    assert doc["params"] == []
    assert doc["ip"] == "127.0.0.9"
    assert abs(doc["created_at"] - time.time() * 1000) < 3_600_000  # milliseconds
    assert msgspec.json.decode(doc["body"]) == {"team_name": "SRE"}
    # Reads are not audited, and neither is searching the log.
    assert (await api.call("/team/list", {}, key=owner.key)).status == 200
    assert (await search(api, owner)).data["total"] == 1


async def test_failed_write_is_audited_with_its_error_code(api: Api, owner: Person) -> None:
    assert (await api.call("/team/upsert", {"team_name": "SRE"}, key=owner.key)).status == 200
    dup = await api.call("/team/upsert", {"team_name": "sre"}, key=owner.key)
    assert dup.status == 400 and dup.code == "InvalidParameter"
    # The failed call's own transaction rolled back, yet its audit row is there.
    docs = (await search(api, owner)).data["docs"]
    assert [(d["operation"], d["outcome"]) for d in docs] == [
        ("team.upsert", "InvalidParameter"), ("team.upsert", "OK")]
    assert docs[0]["request_id"] == dup.body["request_id"]
    assert docs[0]["target_ids"] == []
    # And the write itself did not happen.
    listed = await api.call("/team/list", {}, key=owner.key)
    assert [t["team_name"] for t in listed.data["items"]] == ["SRE"]


async def test_fields_the_operation_does_not_know_are_left_out(api: Api,
                                                               owner: Person) -> None:
    # (the fields marked secret: tests/security/test_audit_masking.py)
    body = {"team_name": "Ops", "api_key": "sk-live-123", "headers": {"Authorization": "B x"},
            "nested": [{"token": "t-456", "password": "hunter2", "note": "kept"}]}
    assert (await api.call("/team/upsert", body, key=owner.key)).status == 200
    rows = await audit_rows(api, owner.account_id)
    assert len(rows) == 1
    stored = rows[0].body
    for secret in ("sk-live-123", "B x", "Authorization", "t-456", "hunter2", owner.key):
        assert secret not in stored
    assert msgspec.json.decode(stored) == {"team_name": "Ops"}
    doc = (await search(api, owner)).data["docs"][0]
    assert doc["body"] == stored


async def test_other_accounts_audit_rows_are_invisible(
    api: Api, owner: Person, other_owner: Person
) -> None:
    made = await api.call("/team/upsert", {"team_name": "Private"}, key=owner.key)
    assert made.status == 200
    theirs = await search(api, other_owner)
    assert theirs.data == {"total": 0, "search_after_ctx": "", "docs": []}
    by_request = await search(api, other_owner, request_id=made.body["request_id"])
    assert by_request.data["total"] == 0
    by_person = await search(api, other_owner, person_id=owner.person_id)
    assert by_person.data["total"] == 0


async def test_filters(api: Api, owner: Person) -> None:
    admin = await new_member(api, owner, name="Ada", builtin="admin")
    first = await api.call("/team/upsert", {"team_name": "A"}, key=owner.key)
    second = await api.call("/team/upsert", {"team_name": "B"}, key=admin.key)
    gone = await api.call("/team/delete", {"team_id": first.data["team_id"]}, key=admin.key)
    assert (first.status, second.status, gone.status) == (200, 200, 200)

    def ops(reply: Reply) -> list[str]:
        return [d["operation"] for d in reply.data["docs"]]

    assert ops(await search(api, owner)) == ["team.delete", "team.upsert", "team.upsert"]
    by_person = await search(api, owner, person_id=admin.person_id)
    assert ops(by_person) == ["team.delete", "team.upsert"]
    assert {d["member_name"] for d in by_person.data["docs"]} == {"Ada"}
    assert ops(await search(api, owner, operations=["team.delete"])) == ["team.delete"]
    assert ops(await search(api, owner, operations=["nope.nope"])) == []
    # The live service's names of the same operations (its clients filter with them).
    assert ops(await search(api, owner, operations=["team:write:delete"])) == ["team.delete"]
    assert ops(await search(api, owner, operations=["team:write:upsert", "team:read:x"])) == [
        "team.upsert", "team.upsert"]
    dangerous = await search(api, owner, is_dangerous=True)
    assert ops(dangerous) == ["team.delete"] and dangerous.data["docs"][0]["is_dangerous"]
    assert len(ops(await search(api, owner, is_dangerous=False))) == 3
    assert len(ops(await search(api, owner, is_write=True))) == 3
    assert ops(await search(api, owner, is_write=False)) == []
    one = await search(api, owner, request_id=second.body["request_id"])
    assert one.data["total"] == 1 and one.data["docs"][0]["member_id"] == admin.person_id
    # The time window: rows now are outside a window that ended a day ago.
    now = int(time.time())
    old = await api.call("/audit/search", {"start_time": now - 3 * DAY, "end_time": now - DAY},
                         key=owner.key)
    assert old.data["total"] == 0


async def test_cursor_paging_newest_first(api: Api, owner: Person) -> None:
    for i in range(7):
        assert (await api.call("/team/upsert", {"team_name": f"t{i}"}, key=owner.key)).status == 200
    seen: list[str] = []
    cursor = ""
    pages = 0
    while True:
        page = await search(api, owner, limit=3, search_after_ctx=cursor)
        assert page.status == 200
        assert page.data["total"] == 7
        seen += [msgspec.json.decode(d["body"])["team_name"] for d in page.data["docs"]]
        pages += 1
        cursor = page.data["search_after_ctx"]
        if not cursor:
            break
    assert pages == 3
    assert seen == [f"t{i}" for i in reversed(range(7))]
    # limit 0 means the default page size, 20.
    assert len((await search(api, owner, limit=0)).data["docs"]) == 7


async def test_cursor_is_tamper_safe(api: Api, owner: Person, other_owner: Person) -> None:
    for i in range(3):
        await api.call("/team/upsert", {"team_name": f"t{i}"}, key=owner.key)
        await api.call("/team/upsert", {"team_name": f"t{i}"}, key=other_owner.key)
    cursor = (await search(api, owner, limit=1)).data["search_after_ctx"]
    assert cursor
    flipped = cursor[:5] + ("A" if cursor[5] != "A" else "B") + cursor[6:]
    for bad in ["garbage", "!!!", flipped, cursor + "AA", cursor[:-2]]:
        reply = await search(api, owner, limit=1, search_after_ctx=bad)
        assert reply.status == 400, bad
        assert reply.code == "InvalidParameter"
        assert "search_after_ctx" in reply.message
    # Another account's cursor is refused too, not used to page through its rows.
    stolen = await search(api, other_owner, limit=1, search_after_ctx=cursor)
    assert stolen.status == 400 and "search_after_ctx" in stolen.message


async def test_search_validation_names_the_field(api: Api, owner: Person) -> None:
    now = int(time.time())
    cases: list[tuple[dict[str, Any], str]] = [
        ({"end_time": now}, "start_time"),
        ({"start_time": now}, "end_time"),
        ({"start_time": now, "end_time": now}, "end_time"),
        ({"start_time": now, "end_time": now - 10}, "end_time"),
        ({"start_time": now - 91 * DAY, "end_time": now}, "end_time"),
        ({"start_time": "yesterday", "end_time": now}, "start_time"),
        ({"start_time": 0, "end_time": 2**63 - 1}, "end_time"),
        (window(limit=100), "limit"),
        (window(limit=-1), "limit"),
        (window(person_id=0), "person_id"),
        (window(operations="team.upsert"), "operations"),
    ]
    for body, field in cases:
        reply = await api.call("/audit/search", body, key=owner.key)
        assert reply.status == 400, body
        assert reply.code == "InvalidParameter"
        assert field in reply.message, (body, reply.message)
    ok = await api.call("/audit/search", {"start_time": now - 90 * DAY, "end_time": now},
                        key=owner.key)
    assert ok.status == 200
    zh = await api.call("/audit/search", {"start_time": now, "end_time": now - 1},
                        key=owner.key, headers={"Accept-Language": "zh-CN"})
    assert "end_time" in zh.message and "必须晚于 start_time" in zh.message


async def test_member_without_account_manage_is_denied(api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Pat", builtin="member")
    for path, body in [("/audit/search", window()), ("/audit/operation/list", {})]:
        reply = await api.call(path, body, key=plain.key)
        assert reply.status == 403 and reply.code == "AccessDenied", path
    admin = await new_member(api, owner, name="Ada", builtin="admin")
    assert (await api.call("/audit/search", window(), key=admin.key)).status == 200


async def test_operation_list_names_the_audited_operations(api: Api, owner: Person) -> None:
    reply = await api.call("/audit/operation/list", {}, key=owner.key)
    assert reply.status == 200
    items = reply.data["items"]
    names = [i["name"] for i in items]
    assert names == sorted(names)
    assert {"team.upsert", "team.delete"} <= set(names)
    # Reads are not audited, so they are not listed.
    assert not {"team.list", "audit.search", "audit.operation.list"} & set(names)
    assert all(isinstance(i["name_cn"], str) and i["name_cn"] for i in items)
    # Every listed name works as a filter.
    assert (await search(api, owner, operations=names)).status == 200


async def test_the_live_services_operation_names_find_dutylines(api: Api, owner: Person) -> None:
    """The reference's own examples: `template:write:create` and `incident:write:acknowledge`."""
    made = await api.call("/template/create", {"template_name": "Prod default"}, key=owner.key)
    assert made.status == 200, made.body
    incident = await api.call("/incident/create", {"title": "disk full",
                                                   "incident_severity": "Critical"},
                              key=owner.key)
    assert incident.status == 200, incident.body
    acked = await api.call("/incident/ack", {"incident_ids": [incident.data["incident_id"]]},
                           key=owner.key)
    assert acked.status == 200, acked.body
    found = await search(api, owner, operations=["template:write:create",
                                                 "incident:write:acknowledge"])
    assert sorted(d["operation"] for d in found.data["docs"]) == [
        "incident.ack", "template.create"]
    assert (await search(api, owner, operations=["template:write:delete"])).data["total"] == 0
