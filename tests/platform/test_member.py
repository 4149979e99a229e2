"""/member/* and /person/infos through the HTTP API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def role_ids(api: Api, person: Person) -> dict[str, int]:
    items = (await api.call("/role/list", {}, key=person.key)).data["items"]
    return {r["role_name"]: r["role_id"] for r in items}


async def members(api: Api, person: Person, **body: Any) -> dict[int, dict[str, Any]]:
    reply = await api.call("/member/list", {"limit": 100, **body}, key=person.key)
    assert reply.status == 200
    return {m["member_id"]: m for m in reply.data["items"]}


async def invite(api: Api, person: Person, *items: dict[str, Any]) -> list[int]:
    reply = await api.call("/member/invite", {"members": list(items)}, key=person.key)
    assert reply.status == 200, reply.body
    return [i["member_id"] for i in reply.data["items"]]


async def test_member_info_is_the_callers_profile(api: Api, owner: Person) -> None:
    roles = await role_ids(api, owner)
    info = await api.call("/member/info", {}, key=owner.key)
    assert info.status == 200
    data = info.data
    assert data["account_id"] == owner.account_id and data["account_name"] == "Acme"
    assert data["account_email"] == "owner@acme.example"
    assert data["member_id"] == owner.person_id and data["member_name"] == "Acme Owner"
    assert data["account_role_ids"] == [roles["Owner"]]
    assert data["status"] == "enabled" and data["is_external"] is False
    # created_at too, which clients of the live service read: when the owner's membership
    # was made.
    assert data["created_at"] > 1_600_000_000
    check("/member/info", await api.raw("POST", "/member/info",
                                        params={"app_key": owner.key}, json={}))
    assert {"account_locale", "account_time_zone", "domain", "email_verified",
            "phone_verified", "country_code", "avatar", "locale", "time_zone"} <= set(data)
    assert "phone" not in data  # none given: left out, not answered empty
    member = await new_member(api, owner, name="Ann")
    mine = (await api.call("/member/info", {}, key=member.key)).data
    assert mine["member_id"] == member.person_id and mine["account_role_ids"] == [roles["Member"]]


async def test_invite_then_list_and_person_infos(api: Api, owner: Person) -> None:
    roles = await role_ids(api, owner)
    reply = await api.call("/member/invite", {"members": [
        {"member_name": "Charlie", "email": "Charlie@Example.com", "locale": "en-US",
         "time_zone": "Asia/Shanghai", "ref_id": "hr-7"},
        {"member_name": "Dana", "phone": "+86 13800001234", "country_code": "+86",
         "role_ids": [roles["Admin"]]},
    ]}, key=owner.key)
    assert reply.status == 200
    items = reply.data["items"]
    assert [i["member_name"] for i in items] == ["Charlie", "Dana"]
    charlie, dana = (i["member_id"] for i in items)

    listed = await members(api, owner)
    assert set(listed) == {owner.person_id, charlie, dana}
    c = listed[charlie]
    assert c["email"] == "charlie@example.com" and c["status"] == "enabled"
    assert c["account_role_ids"] == [roles["Member"]]
    assert (c["locale"], c["time_zone"], c["ref_id"]) == ("en-US", "Asia/Shanghai", "hr-7")
    assert c["account_id"] == owner.account_id and c["created_at"] > 1_600_000_000
    d = listed[dana]
    assert d["account_role_ids"] == [roles["Admin"]]
    assert d["phone"].endswith("1234") and "*" in d["phone"] and d["country_code"] == "+86"

    people = await api.call("/person/infos", {"person_ids": [dana, charlie, 12345678]},
                            key=owner.key)
    assert people.status == 200
    by_id = {p["person_id"]: p for p in people.data["items"]}
    assert set(by_id) == {charlie, dana}
    assert by_id[dana]["phone"] == "+86 13800001234" and by_id[dana]["person_name"] == "Dana"
    assert by_id[dana]["as"] == "member" and by_id[dana]["status"] == "enabled"
    me = (await api.call("/person/infos", {"person_ids": [owner.person_id]},
                         key=owner.key)).data["items"][0]
    assert me["as"] == "account"


async def test_member_list_filters_and_paging(api: Api, owner: Person) -> None:
    roles = await role_ids(api, owner)
    ids = await invite(api, owner, *[{"member_name": f"user-{i}", "email": f"u{i}@x.io"}
                                     for i in range(4)])
    await api.call("/member/role/grant", {"member_id": ids[1], "role_ids": [roles["Admin"]]},
                   key=owner.key)
    admins = await members(api, owner, role_id=roles["Admin"])
    assert set(admins) == {ids[1]}
    found = await members(api, owner, query="USER-2")
    assert set(found) == {ids[2]}
    by_mail = await members(api, owner, query="u3@x")
    assert set(by_mail) == {ids[3]}
    page = await api.call("/member/list", {"p": 2, "limit": 2, "orderby": "created_at",
                                           "asc": True}, key=owner.key)
    assert page.data["total"] == 5 and len(page.data["items"]) == 2
    for body, field in [({"p": 0}, "p"), ({"limit": 101}, "limit"), ({"orderby": "name"},
                        "orderby"), ({"role_id": "x"}, "role_id")]:
        bad = await api.call("/member/list", body, key=owner.key)
        assert bad.status == 400 and bad.code == "InvalidParameter" and field in bad.message


async def test_invite_rejects_bad_input(api: Api, owner: Person, other_owner: Person) -> None:
    await invite(api, owner, {"member_name": "Existing", "email": "taken@x.io",
                              "phone": "13900000000"})
    foreign_role = (await role_ids(api, other_owner))["Admin"]
    owner_role = (await role_ids(api, owner))["Owner"]
    ok = {"member_name": "Fine", "email": "fine@x.io"}
    cases: list[tuple[list[dict[str, Any]], str, str]] = [
        ([], "members", "InvalidParameter"),
        ([ok] * 21, "members", "InvalidParameter"),
        ([{"member_name": "A", "email": "a@x.io"}], "members[0].member_name", "InvalidParameter"),
        ([{"member_name": "x" * 40, "email": "a@x.io"}], "members[0].member_name",
         "InvalidParameter"),
        ([{"member_name": "No Contact"}], "members[0].email", "InvalidParameter"),
        ([ok, {"member_name": "Bad", "email": "not-an-email"}], "members[1].email",
         "InvalidParameter"),
        ([{"member_name": "Bad", "phone": "abc"}], "members[0].phone", "InvalidParameter"),
        ([{"member_name": "Dup", "email": "TAKEN@x.io"}], "members[0].email", "InvalidParameter"),
        ([{"member_name": "Dup", "phone": "13900000000"}], "members[0].phone",
         "InvalidParameter"),
        ([ok, {"member_name": "Twice", "email": "Fine@x.io"}], "members[1].email",
         "InvalidParameter"),
        ([{**ok, "locale": "fr-FR"}], "members[0].locale", "InvalidParameter"),
        ([{**ok, "time_zone": "Mars/Base"}], "members[0].time_zone", "InvalidParameter"),
        ([{**ok, "role_ids": [owner_role]}], "members[0].role_ids", "InvalidParameter"),
        ([{**ok, "role_ids": [foreign_role]}], str(foreign_role), "ResourceNotFound"),
    ]
    for items, field, code in cases:
        reply = await api.call("/member/invite", {"members": items}, key=owner.key)
        assert reply.status == 400, items
        assert reply.code == code, (items, reply.body)
        assert field in reply.message, (field, reply.message)
    # Nothing of the refused batches was stored.
    assert len(await members(api, owner)) == 2
    missing = await api.call("/member/invite", {}, key=owner.key)
    assert missing.code == "InvalidParameter" and "members" in missing.message


async def test_delete_member_cuts_every_tie(api: Api, owner: Person) -> None:
    victim = await new_member(api, owner, name="Victim", email="victim@x.io")
    team_id = (await api.call("/team/upsert", {"team_name": "T", "person_ids": [
        owner.person_id, victim.person_id]}, key=owner.key)).data["team_id"]
    assert (await api.call("/member/info", {}, key=victim.key)).status == 200
    reply = await api.call("/member/delete", {"email": "VICTIM@x.io"}, key=owner.key)
    assert reply.status == 200 and reply.data == {}
    after = await api.call("/member/info", {}, key=victim.key)
    assert after.status == 401 and after.code == "Unauthorized"
    assert victim.person_id not in await members(api, owner)
    person = (await api.call("/person/infos", {"person_ids": [victim.person_id]},
                             key=owner.key)).data["items"][0]
    assert person["status"] == "deleted"
    team = (await api.call("/team/info", {"team_id": team_id}, key=owner.key)).data
    assert team["person_ids"] == [owner.person_id]
    again = await api.call("/member/delete", {"member_id": victim.person_id}, key=owner.key)
    assert again.status == 400 and again.code == "ResourceNotFound"
    # The email is free again for a new member.
    assert await invite(api, owner, {"member_name": "Victim 2", "email": "victim@x.io"})


async def test_delete_member_by_each_identifier(api: Api, owner: Person) -> None:
    ids = await invite(
        api, owner, {"member_name": "By Id", "email": "a@x.io"},
        {"member_name": "By Name", "email": "b@x.io"},
        {"member_name": "By Phone", "phone": "13700000001", "country_code": "+86"},
        {"member_name": "By Ref", "email": "d@x.io", "ref_id": "ext-4"},
    )
    for body in ({"member_id": ids[0]}, {"member_name": "By Name"},
                 {"phone": "13700000001", "country_code": "+86"}, {"ref_id": "ext-4"}):
        reply = await api.call("/member/delete", body, key=owner.key)
        assert reply.status == 200, body
    assert set(await members(api, owner)) == {owner.person_id}
    empty = await api.call("/member/delete", {}, key=owner.key)
    assert empty.status == 400 and empty.code == "InvalidParameter" and "member_id" in empty.message
    nobody = await api.call("/member/delete", {"email": "nobody@x.io"}, key=owner.key)
    assert nobody.code == "ResourceNotFound"


async def test_owner_and_self_cannot_be_deleted(api: Api, owner: Person) -> None:
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    # Only the Owner acts on the Owner, and the Owner cannot delete themselves.
    by_admin = await api.call("/member/delete", {"member_id": owner.person_id}, key=admin.key)
    assert by_admin.status == 403 and by_admin.code == "AccessDenied"
    zh = await api.call("/member/delete", {"member_id": owner.person_id}, key=admin.key,
                        headers={"Accept-Language": "zh-CN"})
    assert zh.message == "只有账户所有者可以操作账户所有者"
    self_delete = await api.call("/member/delete", {"member_id": admin.person_id}, key=admin.key)
    assert self_delete.status == 400 and self_delete.code == "BadRequest"
    by_owner = await api.call("/member/delete", {"member_id": owner.person_id}, key=owner.key)
    assert by_owner.status == 400 and by_owner.code == "BadRequest"
    assert set(await members(api, owner)) == {owner.person_id, admin.person_id}


async def test_role_grant_revoke_update(api: Api, owner: Person) -> None:
    roles = await role_ids(api, owner)
    custom = (await api.call("/role/upsert", {"role_name": "Ops", "permission_ids": [203]},
                             key=owner.key)).data["role_id"]
    m = await new_member(api, owner, name="Mia")
    grant = await api.call("/member/role/grant", {"member_id": m.person_id,
                                                  "role_ids": [custom, custom]}, key=owner.key)
    assert grant.status == 200 and grant.data == {}
    assert (await members(api, owner))[m.person_id]["account_role_ids"] == sorted(
        [roles["Member"], custom])
    # Granting again is harmless.
    assert (await api.call("/member/role/grant", {"member_id": m.person_id, "role_ids": [custom]},
                           key=owner.key)).status == 200
    revoke = await api.call("/member/role/revoke", {"member_id": m.person_id,
                                                    "role_ids": [roles["Member"]]}, key=owner.key)
    assert revoke.status == 200
    assert (await members(api, owner))[m.person_id]["account_role_ids"] == [custom]
    update = await api.call("/member/role/update", {"member_id": m.person_id,
                                                    "role_ids": [roles["Admin"]]}, key=owner.key)
    assert update.status == 200
    assert (await members(api, owner))[m.person_id]["account_role_ids"] == [roles["Admin"]]
    cleared = await api.call("/member/role/update", {"member_id": m.person_id, "role_ids": []},
                             key=owner.key)
    assert cleared.status == 200
    assert (await members(api, owner))[m.person_id]["account_role_ids"] == []


async def test_owner_role_is_fixed(api: Api, owner: Person) -> None:
    roles = await role_ids(api, owner)
    m = await new_member(api, owner, name="Mo")
    for path, body in [
        ("/member/role/grant", {"member_id": m.person_id, "role_ids": [roles["Owner"]]}),
        ("/member/role/revoke", {"member_id": owner.person_id, "role_ids": [roles["Owner"]]}),
        ("/member/role/update", {"member_id": m.person_id, "role_ids": [roles["Owner"]]}),
        ("/member/role/update", {"member_id": owner.person_id, "role_ids": [roles["Admin"]]}),
    ]:
        reply = await api.call(path, body, key=owner.key)
        assert reply.status == 400 and reply.code == "InvalidParameter", (path, body)
        assert "role_ids" in reply.message
    keeps = await api.call("/member/role/update", {"member_id": owner.person_id,
                                                   "role_ids": [roles["Owner"], roles["Admin"]]},
                           key=owner.key)
    assert keeps.status == 200
    listed = await members(api, owner)
    assert listed[owner.person_id]["account_role_ids"] == sorted([roles["Owner"], roles["Admin"]])
    assert listed[m.person_id]["account_role_ids"] == [roles["Member"]]


async def test_role_change_takes_effect_on_next_call(api: Api, owner: Person) -> None:
    manager = (await api.call("/role/upsert", {"role_name": "Org", "permission_ids": [1]},
                              key=owner.key)).data["role_id"]
    m = await new_member(api, owner, name="Max")
    denied = await api.call("/team/upsert", {"team_name": "X"}, key=m.key)
    assert denied.status == 403 and denied.code == "AccessDenied"
    await api.call("/member/role/grant", {"member_id": m.person_id, "role_ids": [manager]},
                   key=owner.key)
    assert (await api.call("/team/upsert", {"team_name": "X"}, key=m.key)).status == 200
    await api.call("/member/role/revoke", {"member_id": m.person_id, "role_ids": [manager]},
                   key=owner.key)
    again = await api.call("/team/upsert", {"team_name": "Y"}, key=m.key)
    assert again.status == 403 and again.code == "AccessDenied"


async def test_role_changes_validate_ids(api: Api, owner: Person, other_owner: Person) -> None:
    m = await new_member(api, owner, name="Val")
    foreign_role = (await role_ids(api, other_owner))["Admin"]
    own_role = (await role_ids(api, owner))["Admin"]
    cases = [
        ({"member_id": m.person_id, "role_ids": []}, "InvalidParameter", "role_ids"),
        ({"member_id": m.person_id}, "InvalidParameter", "role_ids"),
        ({"role_ids": [own_role]}, "InvalidParameter", "member_id"),
        ({"member_id": 0, "role_ids": [own_role]}, "InvalidParameter", "member_id"),
        ({"member_id": m.person_id, "role_ids": [foreign_role]}, "ResourceNotFound",
         str(foreign_role)),
        ({"member_id": other_owner.person_id, "role_ids": [own_role]}, "ResourceNotFound",
         str(other_owner.person_id)),
    ]
    for body, code, named in cases:
        reply = await api.call("/member/role/grant", body, key=owner.key)
        assert reply.status == 400 and reply.code == code, body
        assert named in reply.message, (named, reply.message)
    assert (await members(api, owner))[m.person_id]["account_role_ids"] == [
        (await role_ids(api, owner))["Member"]]


async def test_other_accounts_members_are_not_found(api: Api, owner: Person,
                                                    other_owner: Person) -> None:
    victim = await new_member(api, owner, name="Target", email="target@x.io")
    foreign_roles = await role_ids(api, other_owner)
    for path, body in [
        ("/member/delete", {"member_id": victim.person_id}),
        ("/member/delete", {"email": "target@x.io"}),
        ("/member/role/grant", {"member_id": victim.person_id,
                                "role_ids": [foreign_roles["Admin"]]}),
        ("/member/role/revoke", {"member_id": victim.person_id,
                                 "role_ids": [foreign_roles["Member"]]}),
        ("/member/role/update", {"member_id": victim.person_id, "role_ids": []}),
    ]:
        reply = await api.call(path, body, key=other_owner.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", path
    assert victim.person_id in await members(api, owner)
    assert victim.person_id not in await members(api, other_owner)
    assert (await members(api, owner))[victim.person_id]["account_role_ids"] == [
        (await role_ids(api, owner))["Member"]]
    infos = await api.call("/person/infos", {"person_ids": [victim.person_id]},
                           key=other_owner.key)
    assert infos.data["items"] == []
    assert (await api.call("/member/info", {}, key=victim.key)).status == 200


async def test_person_infos_validation(api: Api, owner: Person) -> None:
    for body in ({}, {"person_ids": [0]}, {"person_ids": list(range(1, 102))}):
        reply = await api.call("/person/infos", body, key=owner.key)
        assert reply.status == 400 and reply.code == "InvalidParameter"
        assert "person_ids" in reply.message
