"""/role/* through the HTTP API."""

from __future__ import annotations

import pytest

from dutyline.api import permissions
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

# The stable permission names and their scopes, which /role/permission/list lists and roles
# refer to.
DECIDED_SCOPES = {
    "mcp_manage": "ai-sre", "agent_manage": "ai-sre",
    "status_page_manage": "on-call", "status_page_event_manage": "on-call",
    "incident_manage": "on-call", "channel_view": "on-call", "channel_manage": "on-call",
    "template_view": "on-call", "template_manage": "on-call", "integration_view": "on-call",
    "integration_manage": "on-call", "mapping_data_view": "on-call",
    "mapping_data_manage": "on-call", "alert_rule_manage": "monit",
    # the reference's "Schedules Read" / "Schedules Manage"
    "schedule_view": "on-call", "schedule_manage": "on-call",
    # the reference's "Calendars Manage"
    "calendar_manage": "on-call",
}


async def builtin_roles(api: Api, person: Person) -> dict[str, dict]:
    items = (await api.call("/role/list", {}, key=person.key)).data["items"]
    return {r["role_name"]: r for r in items if not r["editable"]}


async def test_role_list_shows_builtins_not_editable(api: Api, owner: Person) -> None:
    reply = await api.call("/role/list", {}, key=owner.key)
    assert reply.status == 200
    assert reply.data["total"] == 3
    by_name = {r["role_name"]: r for r in reply.data["items"]}
    assert set(by_name) == {"Owner", "Admin", "Member"}
    assert all(r["editable"] is False and r["status"] == "enabled" for r in by_name.values())
    assert by_name["Owner"]["permission_ids"] == sorted(permissions.ALL_IDS)
    assert set(by_name["Member"]["permission_ids"]) == {204, 501, 208, 210}
    member = await new_member(api, owner)
    assert (await api.call("/role/list", {}, key=member.key)).data["total"] == 3


async def test_role_upsert_create_update_and_info(api: Api, owner: Person) -> None:
    created = await api.call("/role/upsert", {"role_name": "Responder", "description": "IR",
                                              "permission_ids": [203, 205, 203]}, key=owner.key)
    assert created.status == 200
    role_id = created.data["role_id"]
    assert created.data == {"role_id": role_id, "role_name": "Responder"}
    info = (await api.call("/role/info", {"role_id": role_id}, key=owner.key)).data
    assert info["role_name"] == "Responder" and info["description"] == "IR"
    assert info["permission_ids"] == [203, 205]
    assert info["editable"] is True and info["status"] == "enabled"
    assert info["created_at"] > 1_600_000_000

    updated = await api.call("/role/upsert", {"role_id": role_id, "role_name": "Responders",
                                              "permission_ids": [1]}, key=owner.key)
    assert updated.status == 200
    info = (await api.call("/role/info", {"role_id": role_id}, key=owner.key)).data
    assert (info["role_name"], info["permission_ids"], info["description"]) == (
        "Responders", [1], "IR")
    # Omitting permission_ids keeps the set.
    await api.call("/role/upsert", {"role_id": role_id, "role_name": "Responders"}, key=owner.key)
    assert (await api.call("/role/info", {"role_id": role_id},
                           key=owner.key)).data["permission_ids"] == [1]
    assert (await api.call("/role/list", {}, key=owner.key)).data["total"] == 4


async def test_role_upsert_rejects_bad_input(api: Api, owner: Person) -> None:
    await api.call("/role/upsert", {"role_name": "Taken"}, key=owner.key)
    cases = [
        ({"role_name": ""}, "role_name"),
        ({"role_name": "x" * 40}, "role_name"),
        ({}, "role_name"),
        ({"role_name": "   "}, "role_name"),
        ({"role_name": "ok", "description": "d" * 500}, "description"),
        ({"role_name": "ok", "permission_ids": [1, 9999, 77]}, "permission_ids"),
        ({"role_name": "ok", "permission_ids": "1"}, "permission_ids"),
        ({"role_name": "taken"}, "role_name"),
        ({"role_name": "admin"}, "role_name"),
    ]
    for body, field in cases:
        reply = await api.call("/role/upsert", body, key=owner.key)
        assert reply.status == 400, body
        assert reply.code == "InvalidParameter", body
        assert field in reply.message, (body, reply.message)
    unknown = await api.call("/role/upsert", {"role_name": "ok", "permission_ids": [1, 9999]},
                             key=owner.key)
    assert "9999" in unknown.message
    zh = await api.call("/role/upsert", {"role_name": "ok", "permission_ids": [9999]},
                        key=owner.key, headers={"Accept-Language": "zh-CN"})
    assert "未知的权限" in zh.message and "permission_ids" in zh.message
    assert (await api.call("/role/list", {}, key=owner.key)).data["total"] == 4


async def test_builtin_roles_cannot_be_changed(api: Api, owner: Person) -> None:
    builtins = await builtin_roles(api, owner)
    for role in builtins.values():
        rid = role["role_id"]
        for path, body in [("/role/upsert", {"role_id": rid, "role_name": "Renamed"}),
                           ("/role/disable", {"role_id": rid}), ("/role/enable", {"role_id": rid}),
                           ("/role/delete", {"role_id": rid})]:
            reply = await api.call(path, body, key=owner.key)
            assert reply.status == 400 and reply.code == "BadRequest", (path, role["role_name"])
    after = await builtin_roles(api, owner)
    assert after == builtins


async def test_disabled_role_stops_granting(api: Api, owner: Person) -> None:
    role_id = (await api.call("/role/upsert", {"role_name": "Org admin", "permission_ids": [1]},
                              key=owner.key)).data["role_id"]
    holder = await new_member(api, owner, name="Holder", builtin=None, role_ids=[role_id])
    assert (await api.call("/team/upsert", {"team_name": "A"}, key=holder.key)).status == 200
    assert (await api.call("/role/disable", {"role_id": role_id}, key=owner.key)).status == 200
    assert (await api.call("/role/info", {"role_id": role_id},
                           key=owner.key)).data["status"] == "disabled"
    denied = await api.call("/team/upsert", {"team_name": "B"}, key=holder.key)
    assert denied.status == 403 and denied.code == "AccessDenied"
    assert (await api.call("/role/enable", {"role_id": role_id}, key=owner.key)).status == 200
    assert (await api.call("/team/upsert", {"team_name": "B"}, key=holder.key)).status == 200


async def test_role_delete_refused_while_held(api: Api, owner: Person) -> None:
    role_id = (await api.call("/role/upsert", {"role_name": "Temp"}, key=owner.key)).data[
        "role_id"]
    holder = await new_member(api, owner, name="Holder", role_ids=[role_id])
    held = await api.call("/role/delete", {"role_id": role_id}, key=owner.key)
    assert held.status == 400 and held.code == "ReferenceExist"
    assert str(role_id) in held.message
    revoke = await api.call("/member/role/revoke", {"member_id": holder.person_id,
                                                    "role_ids": [role_id]}, key=owner.key)
    assert revoke.status == 200
    assert (await api.call("/role/delete", {"role_id": role_id}, key=owner.key)).status == 200
    gone = await api.call("/role/info", {"role_id": role_id}, key=owner.key)
    assert gone.status == 400 and gone.code == "ResourceNotFound"


async def test_other_accounts_roles_are_not_found(api: Api, owner: Person,
                                                  other_owner: Person) -> None:
    role_id = (await api.call("/role/upsert", {"role_name": "Mine", "permission_ids": [203]},
                              key=owner.key)).data["role_id"]
    for path, body in [("/role/info", {"role_id": role_id}),
                       ("/role/upsert", {"role_id": role_id, "role_name": "Stolen"}),
                       ("/role/disable", {"role_id": role_id}),
                       ("/role/delete", {"role_id": role_id}),
                       ("/role/permission/list", {"role_ids": [role_id]})]:
        reply = await api.call(path, body, key=other_owner.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", path
    info = (await api.call("/role/info", {"role_id": role_id}, key=owner.key)).data
    assert (info["role_name"], info["status"], info["permission_ids"]) == (
        "Mine", "enabled", [203])
    names = {r["role_name"] for r in
             (await api.call("/role/list", {}, key=other_owner.key)).data["items"]}
    assert names == {"Owner", "Admin", "Member"}


async def test_role_id_validation(api: Api, owner: Person) -> None:
    for path in ("/role/info", "/role/enable", "/role/disable", "/role/delete"):
        for body in ({}, {"role_id": 0}, {"role_id": "x"}):
            reply = await api.call(path, body, key=owner.key)
            assert reply.status == 400 and reply.code == "InvalidParameter", (path, body)
            assert "role_id" in reply.message


async def test_permission_catalog_matches_decisions(api: Api, owner: Person) -> None:
    reply = await api.call("/role/permission/list", {}, key=owner.key)
    assert reply.status == 200
    items = reply.data["items"]
    by_name = {i["permission_name"]: i for i in items}
    # Beyond the decided ones: account_manage and environment_use (api/permissions.py).
    assert set(by_name) == set(DECIDED_SCOPES) | {"account_manage", "environment_use"}
    for name, scope in DECIDED_SCOPES.items():
        assert by_name[name]["scope"] == scope, name
    for item in items:
        assert set(item) == {"id", "permission_name", "permission_type", "description", "class",
                             "scope", "status"}
        assert item["permission_type"] in ("read", "manage")
        assert item["permission_type"] == ("read" if item["permission_name"].endswith("_view")
                                           else "manage")
        assert item["status"] == "enabled" and item["class"] and item["description"]
    assert len({i["id"] for i in items}) == len(items)


async def test_permission_list_for_roles(api: Api, owner: Person) -> None:
    role_id = (await api.call("/role/upsert", {"role_name": "R", "permission_ids": [203, 301]},
                              key=owner.key)).data["role_id"]
    member = await new_member(api, owner)
    granted = await api.call("/role/permission/list", {"role_ids": [role_id]}, key=member.key)
    assert [i["permission_name"] for i in granted.data["items"]] == ["incident_manage",
                                                                     "alert_rule_manage"]
    assert "is_granted" not in granted.data["items"][0]
    every = await api.call("/role/permission/list", {"role_ids": [role_id], "with_all": True},
                           key=owner.key)
    flags = {i["permission_name"]: i["is_granted"] for i in every.data["items"]}
    assert len(flags) == len(permissions.CATALOG)
    assert {n for n, g in flags.items() if g} == {"incident_manage", "alert_rule_manage"}
    owner_role = (await builtin_roles(api, owner))["Owner"]["role_id"]
    all_granted = await api.call("/role/permission/list", {"role_ids": [owner_role],
                                                           "with_all": True}, key=owner.key)
    assert all(i["is_granted"] for i in all_granted.data["items"])
    bad = await api.call("/role/permission/list", {"role_ids": [0]}, key=owner.key)
    assert bad.status == 400 and bad.code == "InvalidParameter" and "role_ids" in bad.message
