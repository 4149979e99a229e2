"""Every member, role and app-key write × every kind of caller: the expected status and code.

Each call gets a fresh target in the first account, so one caller's success never changes
what the next one sees."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

_serial = itertools.count()


@dataclass
class World:
    api: Api
    owner: Person
    roles: dict[str, int]
    custom_role: int  # held by the "custom" caller: incident and channel management only


Setup = Callable[[World], Awaitable[dict[str, Any]]]


async def fresh_member(w: World) -> Person:
    return await new_member(w.api, w.owner, name=f"Target {next(_serial)}")


async def fresh_role(w: World) -> int:
    reply = await w.api.call("/role/upsert", {"role_name": f"Role {next(_serial)}",
                                              "permission_ids": [203]}, key=w.owner.key)
    return int(reply.data["role_id"])


async def invite_body(w: World) -> dict[str, Any]:
    n = next(_serial)
    return {"members": [{"member_name": f"New {n}", "email": f"new{n}@x.io",
                         "role_ids": [w.custom_role]}]}


async def delete_body(w: World) -> dict[str, Any]:
    return {"member_id": (await fresh_member(w)).person_id}


async def grant_body(w: World) -> dict[str, Any]:
    return {"member_id": (await fresh_member(w)).person_id, "role_ids": [w.roles["Admin"]]}


async def revoke_body(w: World) -> dict[str, Any]:
    return {"member_id": (await fresh_member(w)).person_id, "role_ids": [w.roles["Member"]]}


async def update_body(w: World) -> dict[str, Any]:
    return {"member_id": (await fresh_member(w)).person_id, "role_ids": [w.custom_role]}


async def role_upsert_body(w: World) -> dict[str, Any]:
    return {"role_id": await fresh_role(w), "role_name": f"Renamed {next(_serial)}",
            "permission_ids": [1]}


async def role_id_body(w: World) -> dict[str, Any]:
    return {"role_id": await fresh_role(w)}


async def key_create_body(w: World) -> dict[str, Any]:
    return {"key_name": "for-them", "person_id": (await fresh_member(w)).person_id}


async def key_delete_body(w: World) -> dict[str, Any]:
    target = await fresh_member(w)
    reply = await w.api.call("/app-key/list", {"person_id": target.person_id}, key=w.owner.key)
    return {"key_id": reply.data["items"][0]["key_id"]}


OK = (200, "OK")
DENIED = (403, "AccessDenied")
NOT_FOUND = (400, "ResourceNotFound")
# owner, admin, plain member, member with a custom role lacking account_manage, other
# account's owner. The other owner passes the permission check (they manage their own
# account) and then finds nothing: the targets live in the first account.
STANDARD = {"owner": OK, "admin": OK, "member": DENIED, "custom": DENIED, "other": NOT_FOUND}

MATRIX: list[tuple[str, Setup]] = [
    ("/member/invite", invite_body),
    ("/member/delete", delete_body),
    ("/member/role/grant", grant_body),
    ("/member/role/revoke", revoke_body),
    ("/member/role/update", update_body),
    ("/role/upsert", role_upsert_body),
    ("/role/enable", role_id_body),
    ("/role/disable", role_id_body),
    ("/role/delete", role_id_body),
    ("/app-key/create", key_create_body),
    ("/app-key/delete", key_delete_body),
]


@pytest.mark.parametrize(("path", "setup"), MATRIX, ids=[m[0] for m in MATRIX])
async def test_write_permission_matrix(api: Api, owner: Person, other_owner: Person,
                                       path: str, setup: Setup) -> None:
    listed = (await api.call("/role/list", {}, key=owner.key)).data["items"]
    roles = {r["role_name"]: r["role_id"] for r in listed}
    custom_role = (await api.call("/role/upsert", {"role_name": "Responder",
                                                   "permission_ids": [203, 205]},
                                  key=owner.key)).data["role_id"]
    world = World(api, owner, roles, custom_role)
    callers = {
        "owner": owner,
        "admin": await new_member(api, owner, name="Admin", builtin="admin"),
        "member": await new_member(api, owner, name="Plain"),
        "custom": await new_member(api, owner, name="Custom", builtin=None,
                                   role_ids=[custom_role]),
        "other": other_owner,
    }
    outcomes = {}
    for who, caller in callers.items():
        reply = await api.call(path, await setup(world), key=caller.key)
        outcomes[who] = (reply.status, reply.body.get("error", {}).get("code", "OK"))
    assert outcomes == STANDARD


async def test_creating_in_ones_own_account_needs_only_account_manage(
    api: Api, owner: Person, other_owner: Person
) -> None:
    """Writes that name no target of another account succeed for the other owner, in
    their own account, and stay out of ours."""
    member = await new_member(api, owner, name="Plain")
    created = await api.call("/role/upsert", {"role_name": "Theirs"}, key=other_owner.key)
    assert created.status == 200
    invited = await api.call("/member/invite", {"members": [{"member_name": "Them",
                                                             "email": "them@x.io"}]},
                             key=other_owner.key)
    assert invited.status == 200
    ours = {r["role_name"] for r in (await api.call("/role/list", {},
                                                    key=owner.key)).data["items"]}
    assert "Theirs" not in ours
    assert (await api.call("/member/list", {}, key=owner.key)).data["total"] == 2
    for path, body in [("/role/upsert", {"role_name": "Nope"}),
                       ("/member/invite", {"members": [{"member_name": "Nope",
                                                        "email": "nope@x.io"}]})]:
        reply = await api.call(path, body, key=member.key)
        assert reply.status == 403 and reply.code == "AccessDenied", path
    # Own keys need no permission at all.
    assert (await api.call("/app-key/create", {"key_name": "mine"}, key=member.key)).status == 200


async def test_reads_need_only_a_valid_key(api: Api, owner: Person) -> None:
    nobody = await new_member(api, owner, name="No Roles", builtin=None)
    for path, body in [("/member/info", {}), ("/member/list", {}), ("/role/list", {}),
                       ("/role/permission/list", {}), ("/app-key/list", {}),
                       ("/person/infos", {"person_ids": [owner.person_id]})]:
        assert (await api.call(path, body, key=nobody.key)).status == 200, path
        anonymous = await api.call(path, body, key="dk_not-a-key")
        assert anonymous.status == 401 and anonymous.code == "Unauthorized", path
