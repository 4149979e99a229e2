"""Nobody acts above their own rights: an operation on another member needs every permission
that member holds (Owners and Admins hold them all), and only the Owner acts on the Owner
(platform/role/service.py `require_over`).

The walk: every operation whose request names a member (a `person_id`, `member_ids`...
field) is either one that acts on that member, with a body here, or listed with the reason
it does not. For each acting operation, a lesser member (account_manage alone; a custom
role) is refused (403 AccessDenied) against the Owner, an Admin and a member holding a
permission they lack, and no row changes; the same body against a member they outrank, or
against themselves, succeeds, which proves the refusal came from the rule and not from a
body the walk got wrong. `test_the_walk_knows_every_member_field` keeps it complete."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from sqlalchemy import select

from dutyline.db.tables.platform import app_key, member
from dutyline.domains import all_routers
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import signed_in
from tests.security.test_cross_account_refs import changed, snapshot

pytestmark = pytest.mark.anyio

ACCOUNT_MANAGE_ID = 1
INCIDENT_MANAGE_ID = 203
# The built-in Member role's read permissions (api/permissions.py MEMBER_DEFAULT).
MEMBER_VIEWS = [204, 501, 208, 210]


@dataclass
class Case:
    """One call's people: whom it acts on, and what the account has for it."""

    target: Person
    target_roles: list[int]
    empty_role: int  # a custom role granting nothing: anyone may hand it out
    target_key: int  # one of the target's app keys


Body = Callable[[Case], dict[str, Any]]

# Operations that act on the member they name: the body of one call on `case.target`.
ACTS_ON: dict[str, Body] = {
    "/app-key/create": lambda c: {"key_name": "theirs", "person_id": c.target.person_id},
    "/app-key/delete": lambda c: {"key_id": c.target_key},
    "/member/delete": lambda c: {"member_id": c.target.person_id},
    "/member/info/reset": lambda c: {"member_id": c.target.person_id,
                                     "email": f"taken.{c.target.person_id}@evil.example"},
    "/member/role/grant": lambda c: {"member_id": c.target.person_id,
                                     "role_ids": [c.empty_role]},
    "/member/role/revoke": lambda c: {"member_id": c.target.person_id,
                                      "role_ids": [c.empty_role]},
    "/member/role/update": lambda c: {"member_id": c.target.person_id,
                                      "role_ids": c.target_roles},
    "/role/member/grant": lambda c: {"role_id": c.empty_role,
                                     "member_ids": [c.target.person_id]},
    "/role/member/revoke": lambda c: {"role_id": c.empty_role,
                                      "member_ids": [c.target.person_id]},
    "/member/notify/reset": lambda c: {"member_id": c.target.person_id, "critical": ["email"]},
    "/member/notify/test": lambda c: {"member_id": c.target.person_id, "channels": ["email"]},
}
# /app-key/delete names a key, not a member: the walk over member fields does not find it.
ACTS_ON_BY_OTHER_IDS = {"/app-key/delete"}

# Member fields of operations that do not act on the member, and why.
NOT_ACTING_ON: dict[str, str] = {
    "/app-key/list person_id": "reads another's key names (never a key), with account_manage",
    "/member/notify/info member_id": "reads another's contacts, with account_manage",
    "/person/infos person_ids": "reads profiles every member may read",
    "/team/list person_id": "a filter",
    "/audit/search person_id": "a filter",
    "/team/upsert person_ids": "a team's composition, under the team permissions",
    "/channel/escalate/rule/create layers.target.person_ids": "whom a rule pages",
    "/channel/escalate/rule/update layers.target.person_ids": "whom a rule pages",
    "/channel/notify/rule/create target.person_ids": "whom a rule notifies",
    "/channel/notify/rule/update target.person_ids": "whom a rule notifies",
    "/incident/war-room/create member_ids": "whom a war room invites",
    "/incident/war-room/add-member member_ids": "whom a war room invites",
    "/incident/create assigned_to.person_ids": "whom an incident is assigned to",
    "/incident/assign assigned_to.person_ids": "whom an incident is assigned to",
    "/incident/responder/add person_ids": "who responds to an incident",
    "/schedule/create layers.groups.members.person_ids": "who is on call",
    "/schedule/update layers.groups.members.person_ids": "who is on call",
    "/schedule/preview layers.groups.members.person_ids": "who would be on call",
}

_MEMBER_FIELDS = ("person_id", "person_ids", "member_id", "member_ids")


def _member_fields(t: Any) -> set[str]:
    """Paths of the request fields of `t` that name members (`a.b[]` as `a.b`)."""
    found: set[str] = set()

    def walk(ti: Any, name: str, depth: int) -> None:
        if depth > 20:
            return
        if isinstance(ti, msgspec.inspect.StructType):
            for f in ti.fields:
                walk(f.type, f"{name}.{f.name}" if name else f.name, depth + 1)
        elif isinstance(ti, msgspec.inspect.ListType | msgspec.inspect.SetType |
                        msgspec.inspect.VarTupleType | msgspec.inspect.FrozenSetType):
            walk(ti.item_type, name, depth + 1)
        elif isinstance(ti, msgspec.inspect.DictType):
            walk(ti.value_type, name, depth + 1)
        elif isinstance(ti, msgspec.inspect.UnionType):
            for x in ti.types:
                walk(x, name, depth + 1)
        elif name.split(".")[-1] in _MEMBER_FIELDS:
            found.add(name)

    walk(msgspec.inspect.type_info(t), "", 0)
    return found


def test_the_walk_knows_every_member_field() -> None:
    """A new operation naming a member must join ACTS_ON or say why it does not."""
    found = {f"{op.path} {path}" for router in all_routers() for op in router.operations
             for path in _member_fields(op.request_type)}
    acting = {entry for entry in found if entry.split(" ")[0] in ACTS_ON}
    assert found - acting - set(NOT_ACTING_ON) == set(), "unclassified member fields"
    assert set(NOT_ACTING_ON) - found == set(), "stale entries"
    assert {e.split(" ")[0] for e in acting} | ACTS_ON_BY_OTHER_IDS == set(ACTS_ON)


# --- the people -------------------------------------------------------------------------


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


async def custom_role(api: Api, owner: Person, name: str, permission_ids: list[int]) -> int:
    made = await ok(api, "/role/upsert", {"role_name": name, "permission_ids": permission_ids},
                    owner)
    return int(made["role_id"])


async def builtin(api: Api, who: Person, name: str) -> int:
    items = (await ok(api, "/role/list", {}, who))["items"]
    return int(next(r["role_id"] for r in items if r["role_name"] == name))


@dataclass
class Account:
    owner: Person
    admin: Person
    roles: dict[str, int]  # role name -> id


async def account(api: Api, owner: Person) -> Account:
    roles = {name: await builtin(api, owner, name) for name in ("Owner", "Admin", "Member")}
    roles["Managers"] = await custom_role(api, owner, "Managers", [ACCOUNT_MANAGE_ID])
    roles["Leads"] = await custom_role(api, owner, "Leads",
                                       [ACCOUNT_MANAGE_ID, *MEMBER_VIEWS])
    roles["Responders"] = await custom_role(api, owner, "Responders", [INCIDENT_MANAGE_ID])
    roles["Empty"] = await custom_role(api, owner, "Empty", [])
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    return Account(owner, admin, roles)


async def lesser(api: Api, acc: Account, kind: str) -> Person:
    """A member with account_manage alone, or a custom role that manages the account and
    reads what the Member role reads."""
    role = acc.roles["Managers" if kind == "account_manage" else "Leads"]
    return await new_member(api, acc.owner, name=f"Lesser {kind}", builtin=None,
                            role_ids=[role])


async def case_for(api: Api, acc: Account, target: Person) -> Case:
    # A spare key of theirs: deleting it leaves the key they call with.
    spare = await ok(api, "/app-key/create", {"key_name": "spare"}, target)
    return Case(target, await member_record(api, acc, target), acc.roles["Empty"],
                int(spare["key_id"]))


async def member_record(api: Api, acc: Account, target: Person) -> list[int]:
    data = await ok(api, "/member/list", {"limit": 100}, acc.owner)
    return next(list(m["account_role_ids"]) for m in data["items"]
                if m["member_id"] == target.person_id)


# --- the walk ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(ACTS_ON))
@pytest.mark.parametrize("kind", ["account_manage", "custom role"])
async def test_a_lesser_member_cannot_act_on_those_above(api: Api, owner: Person, path: str,
                                                         kind: str) -> None:
    acc = await account(api, owner)
    actor = await lesser(api, acc, kind)
    responder = await new_member(api, owner, name="Responder", builtin=None,
                                 role_ids=[acc.roles["Responders"]])
    for target in (acc.owner, acc.admin, responder):
        case = await case_for(api, acc, target)
        before = await snapshot(api)
        reply = await api.call(path, ACTS_ON[path](case), key=actor.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), (path, reply.body)
        assert changed(before, await snapshot(api)) == []
    # The same call on a member holding nothing they lack, and on themselves, is theirs.
    peers = [await new_member(api, owner, name="Peer", builtin=None,
                              role_ids=[acc.roles["Managers"]])]
    if path != "/member/delete":  # nobody deletes themselves
        peers.append(actor)
    for peer in peers:
        reply = await api.call(path, ACTS_ON[path](await case_for(api, acc, peer)),
                               key=actor.key)
        assert reply.status == 200, (path, reply.body)


@pytest.mark.parametrize("path", sorted(ACTS_ON))
async def test_the_owner_and_admins_act_on_those_below(api: Api, owner: Person,
                                                       path: str) -> None:
    acc = await account(api, owner)
    other_admin = await new_member(api, owner, name="Other admin", builtin="admin")
    third_admin = await new_member(api, owner, name="Third admin", builtin="admin")
    member_ = await new_member(api, owner, name="Plain")
    for actor, target in ((acc.owner, third_admin), (acc.admin, member_),
                          (acc.admin, other_admin)):
        reply = await api.call(path, ACTS_ON[path](await case_for(api, acc, target)),
                               key=actor.key)
        assert reply.status == 200, (path, reply.body)
    # An Admin holds every permission, but only the Owner acts on the Owner.
    case = await case_for(api, acc, acc.owner)
    before = await snapshot(api)
    reply = await api.call(path, ACTS_ON[path](case), key=acc.admin.key)
    assert (reply.status, reply.code) == (403, "AccessDenied"), (path, reply.body)
    assert changed(before, await snapshot(api)) == []


# --- the cases, one by one --------------------------------------------------------


async def test_no_key_for_the_owner_from_account_manage(api: Api, owner: Person) -> None:
    acc = await account(api, owner)
    actor = await lesser(api, acc, "account_manage")
    reply = await api.call("/app-key/create", {"key_name": "mine now",
                                               "person_id": owner.person_id}, key=actor.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    assert "Owner" in reply.message
    async with api.runtime.db.transaction(write=False) as conn:
        names = (await conn.execute(select(app_key.c.key_name).where(
            app_key.c.person_id == owner.person_id))).scalars().all()
    assert names == ["default"]
    # Nor for an Admin: that key would act with every permission.
    reply = await api.call("/app-key/create", {"key_name": "mine now",
                                               "person_id": acc.admin.person_id},
                           key=actor.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    assert "incident_manage" in reply.message


async def test_the_owner_s_email_stays_theirs(api: Api, owner: Person) -> None:
    acc = await account(api, owner)
    actor = await lesser(api, acc, "account_manage")
    async with api.runtime.db.transaction(write=False) as conn:
        email_before = (await conn.execute(select(member.c.email).where(
            member.c.member_id == owner.person_id))).scalar_one()
    reply = await api.call("/member/info/reset", {"member_id": owner.person_id,
                                                  "email": "attacker@evil.example"},
                           key=actor.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    async with api.runtime.db.transaction(write=False) as conn:
        email_after = (await conn.execute(select(member.c.email).where(
            member.c.member_id == owner.person_id))).scalar_one()
    assert email_after == email_before


async def test_the_owner_s_keys_stay(api: Api, owner: Person) -> None:
    acc = await account(api, owner)
    actor = await lesser(api, acc, "account_manage")
    async with api.runtime.db.transaction(write=False) as conn:
        key_id = (await conn.execute(select(app_key.c.key_id).where(
            app_key.c.person_id == owner.person_id))).scalar_one()
    reply = await api.call("/app-key/delete", {"key_id": key_id}, key=actor.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    assert (await api.call("/member/info", {}, key=owner.key)).status == 200
    # The Owner deletes their own.
    assert (await api.call("/app-key/delete", {"key_id": key_id}, key=owner.key)).status == 200
    assert (await api.call("/member/info", {}, key=owner.key)).status == 401


async def test_acting_on_oneself_needs_no_more(api: Api, owner: Person) -> None:
    """A member without account_manage manages their own keys and profile."""
    plain = await new_member(api, owner, name="Plain")
    made = await ok(api, "/app-key/create", {"key_name": "second"}, plain)
    await ok(api, "/app-key/create", {"key_name": "third", "person_id": plain.person_id},
             plain)
    await ok(api, "/member/info/reset", {"member_id": plain.person_id,
                                         "email": "plain.new@example.com"}, plain)
    await ok(api, "/app-key/delete", {"key_id": made["key_id"]}, plain)
    await ok(api, "/member/info/reset", {"member_id": owner.person_id,
                                         "member_name": "The Owner"}, owner)


# --- the console ----------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["invite", "roles", "remove"])
async def test_the_console_refuses_alike(api: Api, owner: Person, action: str) -> None:
    """The members pages call the same services: an account manager's browser cannot act
    on the Owner or an Admin either."""
    acc = await account(api, owner)
    actor = await lesser(api, acc, "custom role")
    browser = await signed_in(api, actor)
    await browser.get("/console/members")
    try:
        for target in (acc.owner, acc.admin):
            roles = await member_record(api, acc, target)
            form: dict[str, Any] = {"role_ids": [str(r) for r in roles]} if (
                action == "roles") else {}
            before = await snapshot(api)
            refused = await browser.post(f"/console/members/{target.person_id}/{action}",
                                         form)
            assert refused.status_code == 403, (action, refused.text[:300])
            assert changed(before, await snapshot(api)) == []
    finally:
        await browser.aclose()


async def test_the_member_page_offers_only_what_they_may_do(api: Api, owner: Person) -> None:
    acc = await account(api, owner)
    actor = await lesser(api, acc, "account_manage")
    peer = await new_member(api, owner, name="Peer", builtin=None,
                            role_ids=[acc.roles["Managers"]])
    browser = await signed_in(api, actor)
    try:
        for target, offered in ((acc.owner, False), (acc.admin, False), (peer, True)):
            page = await browser.get(f"/console/members/{target.person_id}")
            assert page.status_code == 200
            assert (f"/console/members/{target.person_id}/roles" in page.text) is offered
    finally:
        await browser.aclose()
