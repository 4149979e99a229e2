"""The platform's records carry their limits and the services check them on entry: called
directly with a value past a limit, a service refuses it as the API does (same field, same
reason), and writes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from dutyline.db.tables.platform import member, team
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.limits import refused_alike

pytestmark = pytest.mark.anyio


async def _count(api: Api, table: object, account_id: int) -> int:
    async with api.runtime.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(table).where(
            table.c.account_id == account_id))).scalar_one())  # type: ignore[attr-defined]


async def test_team_changes_past_their_limits(api: Api, owner: Person) -> None:
    said = await refused_alike(
        api, owner, "/team/upsert", {"team_name": "x" * 40},
        lambda conn, actor: teams.upsert_team(conn, actor,
                                              team=teams.TeamChanges(team_name="x" * 40)))
    assert said == "Invalid parameter team_name: Expected `str` of length <= 39"
    await refused_alike(
        api, owner, "/team/upsert", {"team_name": "SRE", "description": "d" * 501},
        lambda conn, actor: teams.upsert_team(conn, actor, team=teams.TeamChanges(
            team_name="SRE", description="d" * 501)))
    await refused_alike(
        api, owner, "/team/upsert", {"team_name": "SRE", "person_ids": [0]},
        lambda conn, actor: teams.upsert_team(conn, actor, team=teams.TeamChanges(
            team_name="SRE", person_ids=[0])))
    assert await _count(api, team, owner.account_id) == 0


async def test_new_members_past_their_limits(api: Api, owner: Person) -> None:
    said = await refused_alike(
        api, owner, "/member/invite",
        {"members": [{"member_name": "Ann", "email": "ann@acme.example"},
                     {"member_name": "B" * 40, "email": "b@acme.example"}]},
        lambda conn, actor: members.invite_members(conn, actor, members=[
            members.NewMember(member_name="Ann", email="ann@acme.example"),
            members.NewMember(member_name="B" * 40, email="b@acme.example")]))
    assert said.startswith("Invalid parameter members[1].member_name: ")
    await refused_alike(
        api, owner, "/member/invite", {"members": []},
        lambda conn, actor: members.invite_members(conn, actor, members=[]))
    many = [{"member_name": f"M{i:02d}", "email": f"m{i}@acme.example"} for i in range(21)]
    await refused_alike(
        api, owner, "/member/invite", {"members": many},
        lambda conn, actor: members.invite_members(
            conn, actor, members=[members.NewMember(**m) for m in many]))
    assert await _count(api, member, owner.account_id) == 1


async def test_profile_changes_past_their_limits(api: Api, owner: Person) -> None:
    other = await new_member(api, owner, name="Other")
    for field, value in (("email", "e" * 250 + "@acme.example"), ("phone", "1" * 33),
                         ("country_code", "1" * 9), ("member_name", "N"),
                         ("time_zone", "Z" * 65)):
        await refused_alike(
            api, owner, "/member/info/reset", {"member_id": other.person_id, field: value},
            lambda conn, actor, f=field, v=value: members.reset_info(
                conn, actor, member_id=other.person_id,
                changes=members.ProfileChanges(**{f: v})))


async def test_a_role_choice_past_its_limits(api: Api, owner: Person) -> None:
    other = await new_member(api, owner, name="Other")
    await refused_alike(
        api, owner, "/member/role/update",
        {"member_id": other.person_id, "role_ids": list(range(1, 102))},
        lambda conn, actor: members.update_roles(conn, actor, member_id=other.person_id,
                                                 role_ids=list(range(1, 102))))
