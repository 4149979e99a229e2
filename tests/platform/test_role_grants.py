"""/role/member/grant|revoke and /role/permission/factor/list through the HTTP API."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.platform import member_role
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

INCIDENT_MANAGE_ID = 203
MCP_MANAGE_ID = 101
ACCOUNT_MANAGE_ID = 1


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, reply.body
    return reply.data


async def custom_role(api: Api, owner: Person, name: str, permission_ids: list[int]) -> int:
    made = await ok(api, "/role/upsert", {"role_name": name, "permission_ids": permission_ids},
                    owner)
    return int(made["role_id"])


async def builtin(api: Api, who: Person, name: str) -> int:
    items = (await ok(api, "/role/list", {}, who))["items"]
    return next(r["role_id"] for r in items if r["role_name"] == name)


async def holders(api: Api, role_id: int) -> set[int]:
    async with api.runtime.db.connect() as conn:
        rows = await conn.execute(select(member_role.c.member_id)
                                  .where(member_role.c.role_id == role_id))
    return set(rows.scalars())


async def test_grant_applies_on_the_next_request_and_revoke_takes_it_back(
        api: Api, owner: Person) -> None:
    responder = await custom_role(api, owner, "Responder", [INCIDENT_MANAGE_ID])
    alice = await new_member(api, owner, name="Alice")
    bob = await new_member(api, owner, name="Bob")
    body = {"incident_severity": "Critical", "title": "db down"}
    # A plain member may not create incidents...
    refused = await api.call("/incident/create", body, key=alice.key)
    assert (refused.status, refused.code) == (403, "AccessDenied")

    reply = await api.call("/role/member/grant",
                           {"role_id": responder, "member_ids": [alice.person_id,
                                                                 bob.person_id]},
                           key=owner.key)
    assert (reply.status, reply.data) == (200, {})
    assert await holders(api, responder) == {alice.person_id, bob.person_id}
    # ...and may on the very next call once granted.
    assert (await api.call("/incident/create", body, key=alice.key)).status == 200
    member_record = (await ok(api, "/member/list", {}, owner))["items"]
    roles_of = {m["member_id"]: m["account_role_ids"] for m in member_record}
    assert responder in roles_of[alice.person_id]

    # Granting again skips those who hold it.
    assert (await api.call("/role/member/grant",
                           {"role_id": responder, "member_ids": [alice.person_id]},
                           key=owner.key)).status == 200
    assert await holders(api, responder) == {alice.person_id, bob.person_id}

    reply = await api.call("/role/member/revoke",
                           {"role_id": responder, "member_ids": [alice.person_id]},
                           key=owner.key)
    assert (reply.status, reply.data) == (200, {})
    assert await holders(api, responder) == {bob.person_id}
    refused = await api.call("/incident/create", body, key=alice.key)
    assert (refused.status, refused.code) == (403, "AccessDenied")
    # Revoking from one who does not hold it is skipped.
    assert (await api.call("/role/member/revoke",
                           {"role_id": responder, "member_ids": [alice.person_id]},
                           key=owner.key)).status == 200


async def test_grant_and_revoke_are_audited_with_role_and_members(
        api: Api, owner: Person) -> None:
    responder = await custom_role(api, owner, "Responder", [INCIDENT_MANAGE_ID])
    alice = await new_member(api, owner, name="Alice")
    for path in ("/role/member/grant", "/role/member/revoke"):
        assert (await api.call(path, {"role_id": responder, "member_ids": [alice.person_id]},
                               key=owner.key)).status == 200
    now = int(api.runtime.clock.now())
    docs = (await ok(api, "/audit/search", {"start_time": now - 60, "end_time": now + 60,
                                            "operations": ["role.member.grant",
                                                           "role.member.revoke"]},
                     owner))["docs"]
    assert sorted(d["operation"] for d in docs) == ["role.member.grant", "role.member.revoke"]
    for doc in docs:
        assert doc["target_ids"] == [str(responder), str(alice.person_id)]
        assert doc["is_write"] is True and doc["outcome"] == "OK"


async def test_the_owner_role_is_never_granted_or_revoked(api: Api, owner: Person) -> None:
    owner_role = await builtin(api, owner, "Owner")
    alice = await new_member(api, owner, name="Alice")
    for path, who in (("/role/member/grant", alice), ("/role/member/revoke", owner)):
        reply = await api.call(path, {"role_id": owner_role, "member_ids": [who.person_id]},
                               key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), path
        assert "role_id" in reply.message
    assert await holders(api, owner_role) == {owner.person_id}


async def test_a_manager_cannot_hand_out_more_than_they_hold(api: Api, owner: Person) -> None:
    managers = await custom_role(api, owner, "Managers", [ACCOUNT_MANAGE_ID, INCIDENT_MANAGE_ID])
    # The Member role too: acting on a member needs every right they hold.
    manager = await new_member(api, owner, name="Manager", role_ids=[managers])
    alice = await new_member(api, owner, name="Alice")
    within = await custom_role(api, owner, "Within", [INCIDENT_MANAGE_ID])
    beyond = await custom_role(api, owner, "Beyond", [INCIDENT_MANAGE_ID, MCP_MANAGE_ID])
    admin = await builtin(api, owner, "Admin")

    assert (await api.call("/role/member/grant",
                           {"role_id": within, "member_ids": [alice.person_id]},
                           key=manager.key)).status == 200
    for role_id, who in ((beyond, alice), (admin, alice), (admin, manager)):
        for path in ("/role/member/grant", "/role/member/revoke", "/member/role/grant"):
            body = ({"member_id": who.person_id, "role_ids": [role_id]}
                    if path.startswith("/member/")
                    else {"role_id": role_id, "member_ids": [who.person_id]})
            reply = await api.call(path, body, key=manager.key)
            assert (reply.status, reply.code) == (403, "AccessDenied"), (path, role_id)
    assert "mcp_manage" in (await api.call(
        "/role/member/grant", {"role_id": beyond, "member_ids": [alice.person_id]},
        key=manager.key)).message
    assert await holders(api, beyond) == set()
    assert alice.person_id not in await holders(api, admin)
    # Nor can they widen a role they hold to rise above it.
    reply = await api.call("/role/upsert", {"role_id": managers, "role_name": "Managers",
                                            "permission_ids": [ACCOUNT_MANAGE_ID,
                                                               MCP_MANAGE_ID]},
                           key=manager.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    info = await ok(api, "/role/info", {"role_id": managers}, owner)
    assert info["permission_ids"] == [ACCOUNT_MANAGE_ID, INCIDENT_MANAGE_ID]
    # An owner may move any role but the Owner one.
    assert (await api.call("/role/member/grant",
                           {"role_id": admin, "member_ids": [alice.person_id]},
                           key=owner.key)).status == 200


async def test_without_account_management_nothing_changes(api: Api, owner: Person) -> None:
    responder = await custom_role(api, owner, "Responder", [INCIDENT_MANAGE_ID])
    alice = await new_member(api, owner, name="Alice")
    plain = await new_member(api, owner, name="Plain")
    for path in ("/role/member/grant", "/role/member/revoke"):
        reply = await api.call(path, {"role_id": responder, "member_ids": [alice.person_id]},
                               key=plain.key)
        assert (reply.status, reply.code) == (403, "AccessDenied")
    assert await holders(api, responder) == set()


async def test_unknown_or_foreign_ids_refuse_the_whole_call(
        api: Api, owner: Person, other_owner: Person) -> None:
    responder = await custom_role(api, owner, "Responder", [INCIDENT_MANAGE_ID])
    theirs = await custom_role(api, other_owner, "Theirs", [INCIDENT_MANAGE_ID])
    alice = await new_member(api, owner, name="Alice")
    stranger = await new_member(api, other_owner, name="Stranger")
    cases = [
        ({"role_id": theirs, "member_ids": [alice.person_id]}, str(theirs)),
        ({"role_id": responder, "member_ids": [alice.person_id, stranger.person_id]},
         str(stranger.person_id)),
        ({"role_id": responder, "member_ids": [alice.person_id, 12345]}, "12345"),
    ]
    for body, named in cases:
        for path in ("/role/member/grant", "/role/member/revoke"):
            reply = await api.call(path, body, key=owner.key)
            assert (reply.status, reply.code) == (400, "ResourceNotFound"), (path, body)
            assert named in reply.message
    assert await holders(api, responder) == set()
    assert await holders(api, theirs) == set()


async def test_a_deleted_member_is_not_found(api: Api, owner: Person) -> None:
    responder = await custom_role(api, owner, "Responder", [INCIDENT_MANAGE_ID])
    gone = await new_member(api, owner, name="Gone")
    assert (await api.call("/member/delete", {"member_id": gone.person_id},
                           key=owner.key)).status == 200
    reply = await api.call("/role/member/grant",
                           {"role_id": responder, "member_ids": [gone.person_id]},
                           key=owner.key)
    assert (reply.status, reply.code) == (400, "ResourceNotFound")


@pytest.mark.parametrize(("body", "field"), [
    ({"member_ids": [1]}, "role_id"),
    ({"role_id": 1}, "member_ids"),
    ({"role_id": 1, "member_ids": []}, "member_ids"),
    ({"role_id": 1, "member_ids": list(range(1, 102))}, "member_ids"),
    ({"role_id": 1, "member_ids": ["x"]}, "member_ids"),
    ({"role_id": 0, "member_ids": [1]}, "role_id"),
])
async def test_request_bounds(api: Api, owner: Person, body: dict[str, Any],
                              field: str) -> None:
    reply = await api.call("/role/member/grant", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert field in reply.message


async def test_permission_factors_name_every_operation(api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Plain")
    # Any valid key may read them.
    reply = await api.call("/role/permission/factor/list", {}, key=plain.key)
    assert reply.status == 200
    factors = reply.data
    assert isinstance(factors, list)
    names = {f["factor_name"] for f in factors}
    assert {f["factor_type"] for f in factors} == {"api"}
    assert {"template:read:info", "role:write:member-grant",
            "incident:write:custom-action-do", "role:read:permission-factor-list"} <= names
    served = {op.path for op in api.runtime.operations}
    assert len(names) == len(served)
    assert (await api.call("/role/permission/factor/list", {"factor_types": ["api"]},
                           key=plain.key)).data == factors
    assert (await api.call("/role/permission/factor/list", {"factor_types": ["menu", "url"]},
                           key=plain.key)).data == []
    bad = await api.call("/role/permission/factor/list", {"factor_types": ["nope"]},
                         key=plain.key)
    assert (bad.status, bad.code) == (400, "InvalidParameter")
    assert (await api.call("/role/permission/factor/list", {}, key=None)).status == 401


async def test_other_account_unaffected(api: Api, owner: Person) -> None:
    other = await new_account(api, "Initech")
    responder = await custom_role(api, owner, "Responder", [INCIDENT_MANAGE_ID])
    reply = await api.call("/role/member/grant",
                           {"role_id": responder, "member_ids": [other.person_id]},
                           key=owner.key)
    assert (reply.status, reply.code) == (400, "ResourceNotFound")


async def test_inviting_with_roles_beyond_ones_rights_is_refused(api: Api, owner: Person) -> None:
    managers = await custom_role(api, owner, "Managers", [ACCOUNT_MANAGE_ID])
    manager = await new_member(api, owner, name="Manager", builtin=None, role_ids=[managers])
    beyond = await custom_role(api, owner, "Beyond", [MCP_MANAGE_ID])
    reply = await api.call("/member/invite", {"members": [{
        "member_name": "Ivy", "email": "ivy@example.com", "role_ids": [beyond]}]},
        key=manager.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    # The account's default role is every new member's, whoever invites them.
    assert (await api.call("/member/invite", {"members": [{
        "member_name": "Ivy", "email": "ivy@example.com"}]}, key=manager.key)).status == 200
