"""Every MCP operation × owner, admin, team member, other member (no team), key without
mcp_manage, other account."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.server import free_port

pytestmark = pytest.mark.anyio

MCP_MANAGE_ID = 101
OK, DENIED, MISSING = 200, "AccessDenied", "ResourceNotFound"
_serial = itertools.count(1)
CALLERS = ("owner", "admin", "team_member", "other_member", "no_permission", "other_account")


@dataclass
class World:
    api: Api
    people: dict[str, Person]
    team_id: int
    url: str

    async def server(self, *, team: bool, status: str = "enabled") -> str:
        reply = await self.api.call("/safari/mcp/server/create", {
            "server_name": f"s{next(_serial)}", "description": "d", "url": self.url,
            "team_id": self.team_id if team else 0, "status": status, "connect_timeout": 1,
        }, key=self.people["owner"].key)
        assert reply.status == 200, reply.body
        return str(reply.data["server_id"])


@pytest.fixture
async def world(api: Api, owner: Person) -> World:
    role = await api.call("/role/upsert", {"role_name": "MCP", "permission_ids": [MCP_MANAGE_ID]},
                          key=owner.key)
    role_id = role.data["role_id"]
    people = {
        "owner": owner,
        "admin": await new_member(api, owner, name="Adm", builtin="admin"),
        "team_member": await new_member(api, owner, name="Tm", builtin="member",
                                        role_ids=[role_id]),
        "other_member": await new_member(api, owner, name="Om", builtin="member",
                                         role_ids=[role_id]),
        "no_permission": await new_member(api, owner, name="Np", builtin="member"),
        "other_account": await new_account(api, "Globex"),
    }
    team = await api.call("/team/upsert", {"team_name": "SRE", "person_ids": [
        people["team_member"].person_id, people["no_permission"].person_id]}, key=owner.key)
    # Nothing listens there: get answers quickly with list_error.
    return World(api, people, team.data["team_id"], f"http://127.0.0.1:{free_port()}/mcp")


def outcome(reply: Any) -> int | str:
    return OK if reply.status == 200 else reply.code


EXPECTED_MUTATION = {
    # account-level server, team server
    "owner": (OK, OK),
    "admin": (OK, OK),
    "team_member": (DENIED, OK),
    "other_member": (DENIED, MISSING),  # a team server of another team is invisible
    "no_permission": (DENIED, DENIED),
    "other_account": (MISSING, MISSING),
}


@pytest.mark.parametrize("operation", ["update", "delete", "enable", "disable"])
async def test_mutations(world: World, operation: str) -> None:
    for caller in CALLERS:
        for team, expected in zip((False, True), EXPECTED_MUTATION[caller], strict=True):
            server_id = await world.server(
                team=team, status="disabled" if operation == "enable" else "enabled"
            )
            body = {"server_id": server_id, "description": "changed"}
            reply = await world.api.call(f"/safari/mcp/server/{operation}", body,
                                         key=world.people[caller].key)
            # other_account's key might lack nothing but the server: never a 403 leak.
            assert outcome(reply) == expected, (operation, caller, team, reply.body)
            if expected != OK:  # refused calls change nothing
                got = await world.api.call("/safari/mcp/server/list", {"limit": 100},
                                           key=world.people["owner"].key)
                mine = next(s for s in got.data["servers"] if s["server_id"] == server_id)
                assert mine["description"] == "d"
                assert mine["status"] == ("disabled" if operation == "enable" else "enabled")


async def test_create(world: World) -> None:
    expected = {
        "owner": (OK, OK), "admin": (OK, OK), "team_member": (DENIED, OK),
        "other_member": (DENIED, DENIED), "no_permission": (DENIED, DENIED),
        "other_account": (OK, MISSING),  # its own account-level server; our team is unknown
    }
    for caller in CALLERS:
        for team, want in zip((False, True), expected[caller], strict=True):
            reply = await world.api.call("/safari/mcp/server/create", {
                "server_name": f"c{next(_serial)}", "description": "d", "url": world.url,
                "team_id": world.team_id if team else 0}, key=world.people[caller].key)
            assert outcome(reply) == want, (caller, team, reply.body)
            if want == OK:
                assert reply.data["can_edit"] is True


async def test_get_and_list_visibility_and_can_edit(world: World) -> None:
    account_server = await world.server(team=False)
    team_server = await world.server(team=True)
    visible = {
        "owner": {account_server: True, team_server: True},
        "admin": {account_server: True, team_server: True},
        "team_member": {account_server: False, team_server: True},
        "other_member": {account_server: False},
        "no_permission": {account_server: False, team_server: False},
        "other_account": {},
    }
    for caller in CALLERS:
        key = world.people[caller].key
        listed = await world.api.call("/safari/mcp/server/list", {}, key=key)
        assert listed.status == 200
        seen = {s["server_id"]: s["can_edit"] for s in listed.data["servers"]}
        assert seen == visible[caller], caller
        assert listed.data["total"] == len(visible[caller])
        for server_id in (account_server, team_server):
            got = await world.api.call("/safari/mcp/server/get", {"server_id": server_id},
                                       key=key)
            if server_id in visible[caller]:
                assert got.status == 200, (caller, got.body)
                assert got.data["can_edit"] is visible[caller][server_id]
                assert "connection refused" in got.data["list_error"]
            else:
                assert got.code == MISSING, (caller, server_id)
