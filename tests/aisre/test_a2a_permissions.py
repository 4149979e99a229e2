"""Every A2A operation × owner, admin, team member, other member, key without agent_manage
and another account: the expected status and code, and what each one sees.

Each write gets a fresh agent, so one caller's success never changes what the next sees."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from dutyline.api.ratelimit import MemoryRateLimiter, default_windows
from tests.aisre.a2a_peers import Peer, a2a_peer
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

AGENT_MANAGE_ID = 102
CALLERS = ("owner", "admin", "team_member", "other_member", "no_permission", "other_account")
OK, DENIED, NOT_FOUND = (200, "OK"), (403, "AccessDenied"), (400, "ResourceNotFound")


@dataclass
class World:
    api: Api
    peer: Peer
    owner: Person
    team_id: int
    callers: dict[str, Person]

    async def agent(self, *, team: bool, disabled: bool = False) -> str:
        body = {"agent_name": "Target", "card_url": self.peer.base_url,
                "team_id": self.team_id if team else 0}
        made = await self.api.call("/safari/a2a-agent/create", body, key=self.owner.key)
        assert made.status == 200, made.body
        agent_id = str(made.data["agent_id"])
        if disabled:
            off = await self.api.call("/safari/a2a-agent/disable", {"agent_id": agent_id},
                                      key=self.owner.key)
            assert off.status == 200
        return agent_id


async def make_world(api: Api, peer: Peer) -> World:
    owner = await new_account(api, "Acme")
    role = await api.call("/role/upsert", {"role_name": "Agent keepers",
                                           "permission_ids": [AGENT_MANAGE_ID]}, key=owner.key)
    role_id = role.data["role_id"]
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    team_member = await new_member(api, owner, name="Teammate", role_ids=[role_id])
    other_member = await new_member(api, owner, name="Outsider", role_ids=[role_id])
    no_permission = await new_member(api, owner, name="Viewer")  # built-in Member role
    team = await api.call("/team/upsert", {
        "team_name": "SRE", "person_ids": [team_member.person_id, no_permission.person_id],
    }, key=owner.key)
    assert team.status == 200, team.body
    other_account = await new_account(api, "Globex")
    callers = {"owner": owner, "admin": admin, "team_member": team_member,
               "other_member": other_member, "no_permission": no_permission,
               "other_account": other_account}
    return World(api, peer, owner, team.data["team_id"], callers)


Body = Callable[[World], Awaitable[dict[str, Any]]]


def on_agent(team: bool, disabled: bool = False, **extra: Any) -> Body:
    async def body(w: World) -> dict[str, Any]:
        return {"agent_id": await w.agent(team=team, disabled=disabled), **extra}
    return body


def create_body(team: bool) -> Body:
    async def body(w: World) -> dict[str, Any]:
        return {"agent_name": "New", "card_url": w.peer.base_url,
                "team_id": w.team_id if team else 0}
    return body


ACCOUNT_WRITE = {"owner": OK, "admin": OK, "team_member": DENIED, "other_member": DENIED,
                 "no_permission": DENIED, "other_account": NOT_FOUND}
TEAM_WRITE = {**ACCOUNT_WRITE, "team_member": OK}
CASES: list[tuple[str, str, Body, dict[str, tuple[int, str]]]] = [
    ("create account-level", "create", create_body(False),
     {**ACCOUNT_WRITE, "other_account": OK}),  # its own account-level agent
    ("create team-level", "create", create_body(True),
     {**TEAM_WRITE, "other_account": (400, "InvalidParameter")}),  # not its team
    ("get account-level", "get", on_agent(False),
     dict.fromkeys(CALLERS, OK) | {"other_account": NOT_FOUND}),
    ("get team-level", "get", on_agent(True),
     dict.fromkeys(CALLERS, OK) | {"other_member": NOT_FOUND, "other_account": NOT_FOUND}),
    ("update account-level", "update", on_agent(False, agent_name="Changed"), ACCOUNT_WRITE),
    ("update team-level", "update", on_agent(True, agent_name="Changed"), TEAM_WRITE),
    ("delete account-level", "delete", on_agent(False), ACCOUNT_WRITE),
    ("delete team-level", "delete", on_agent(True), TEAM_WRITE),
    ("enable account-level", "enable", on_agent(False, disabled=True), ACCOUNT_WRITE),
    ("enable team-level", "enable", on_agent(True, disabled=True), TEAM_WRITE),
    ("disable account-level", "disable", on_agent(False), ACCOUNT_WRITE),
    ("disable team-level", "disable", on_agent(True), TEAM_WRITE),
]


async def test_operation_matrix(api: Api) -> None:
    async with a2a_peer() as peer:
        w = await make_world(api, peer)
        wrong: list[str] = []
        for label, op, body_for, expected in CASES:
            for caller in CALLERS:
                body = await body_for(w)
                reply = await api.call(f"/safari/a2a-agent/{op}", body,
                                       key=w.callers[caller].key)
                got = (reply.status, reply.body["error"]["code"] if "error" in reply.body
                       else "OK")
                if got != expected[caller]:
                    wrong.append(f"{label} as {caller}: {got} != {expected[caller]}")
                if got[0] != 200 and "agent_id" in body:
                    # A refused write changed nothing.
                    check = await api.call("/safari/a2a-agent/get", {"agent_id": body["agent_id"]},
                                           key=w.owner.key)
                    assert check.data["agent_name"] == "Target"
                    assert check.data["status"] == ("disabled" if op == "enable" else "enabled")
    assert wrong == []


async def test_visibility_and_can_edit(api: Api) -> None:
    async with a2a_peer() as peer:
        w = await make_world(api, peer)
        account_agent = await w.agent(team=False)
        team_agent = await w.agent(team=True)
        expected = {
            "owner": {account_agent: True, team_agent: True},
            "admin": {account_agent: True, team_agent: True},
            "team_member": {account_agent: False, team_agent: True},
            "other_member": {account_agent: False},
            "no_permission": {account_agent: False, team_agent: False},
            "other_account": {},
        }
        for caller, sees in expected.items():
            listed = await api.call("/safari/a2a-agent/list", {}, key=w.callers[caller].key)
            assert listed.status == 200
            got = {a["agent_id"]: a["can_edit"] for a in listed.data["agents"]}
            assert got == sees, caller
            assert listed.data["total"] == len(sees)
            for agent_id, can_edit in sees.items():
                one = await api.call("/safari/a2a-agent/get", {"agent_id": agent_id},
                                     key=w.callers[caller].key)
                assert one.data["can_edit"] is can_edit, (caller, agent_id)


async def test_list_and_enable_are_rate_limited_per_app_key(api: Api) -> None:
    async with a2a_peer() as peer:
        w = await make_world(api, peer)
        agent_id = await w.agent(team=False, disabled=True)
        # From here on: two calls a minute per window, so nothing depends on timing.
        api.runtime.limiter = MemoryRateLimiter(default_windows(1000, 2), api.runtime.clock)
        owner, admin = w.callers["owner"], w.callers["admin"]
        replies = [await api.call("/safari/a2a-agent/list", {}, key=owner.key) for _ in range(3)]
        assert [r.status for r in replies] == [200, 200, 429]
        assert replies[2].code == "RequestTooFrequently" and "Retry-After" in replies[2].headers
        assert replies[0].headers["X-RateLimit-Limit"]
        # The same key's window covers enable too...
        same_key = await api.call("/safari/a2a-agent/enable", {"agent_id": agent_id},
                                  key=owner.key)
        assert same_key.status == 429
        # ...while another key of the same account has its own window (per app_key).
        other_key = await api.call("/safari/a2a-agent/enable", {"agent_id": agent_id},
                                   key=admin.key)
        assert other_key.status == 200 and other_key.body["data"] is None
