"""Private channels: seen only by owners, admins and members of the channel's owning or
managing teams; to everyone else they do not exist (ResourceNotFound), even with
channel_manage. Their integrations follow (tests/channel/test_integration.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


@dataclass
class Cast:
    owning: Person  # member of the owning team
    managing: Person  # member of a managing team
    outsider: Person  # plain member of no team
    manager: Person  # channel_manage through a custom role, in no team
    admin: Person
    owner: Person
    owning_team: int
    managing_team: int


async def _team(api: Api, owner: Person, name: str, people: list[Person]) -> int:
    reply = await api.call("/team/upsert", {"team_name": name,
                                            "person_ids": [p.person_id for p in people]},
                           key=owner.key)
    assert reply.status == 200, reply.body
    team_id: int = reply.data["team_id"]
    return team_id


async def _channel_manager(api: Api, owner: Person) -> Person:
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    ids = [p["id"] for p in perms if p["permission_name"] == "channel_manage"]
    role = await api.call("/role/upsert", {"role_name": "Channel keepers", "permission_ids": ids},
                          key=owner.key)
    assert role.status == 200, role.body
    return await new_member(api, owner, name="Keeper", builtin=None,
                            role_ids=[role.data["role_id"]])


@pytest.fixture
async def cast(api: Api, owner: Person) -> Cast:
    owning = await new_member(api, owner, name="Olga")
    managing = await new_member(api, owner, name="Mike")
    outsider = await new_member(api, owner, name="Otto")
    manager = await _channel_manager(api, owner)
    admin = await new_member(api, owner, name="Ada", builtin="admin")
    return Cast(owning, managing, outsider, manager, admin, owner,
                await _team(api, owner, "Owners", [owning]),
                await _team(api, owner, "Helpers", [managing]))


async def _create(api: Api, cast: Cast, name: str, **extra: object) -> int:
    reply = await api.call("/channel/create", {"channel_name": name, **extra},
                           key=cast.owner.key)
    assert reply.status == 200, reply.body
    channel_id: int = reply.data["channel_id"]
    return channel_id


async def _sees(api: Api, who: Person, channel_id: int) -> bool:
    """What /channel/info, /channel/list and /channel/infos say, which must agree."""
    info = await api.call("/channel/info", {"channel_id": channel_id}, key=who.key)
    listed = await api.call("/channel/list", {"channel_ids": [channel_id]}, key=who.key)
    infos = await api.call("/channel/infos", {"channel_ids": [channel_id]}, key=who.key)
    in_list = [c["channel_id"] for c in listed.data["items"]] == [channel_id]
    in_infos = [c["channel_id"] for c in infos.data["items"]] == [channel_id]
    if info.status == 200:
        assert in_list and in_infos
        return True
    assert info.code == "ResourceNotFound"
    assert not in_list and not in_infos and listed.data["total"] == 0
    return False


async def test_private_channel_seen_by_its_teams_and_admins(api: Api, cast: Cast) -> None:
    private = await _create(api, cast, "Secret", team_id=cast.owning_team,
                            managing_team_ids=[cast.managing_team], is_private=True)
    public = await _create(api, cast, "Open", team_id=cast.owning_team)
    for who in (cast.owner, cast.admin, cast.owning, cast.managing):
        assert await _sees(api, who, private)
    for who in (cast.outsider, cast.manager):
        assert not await _sees(api, who, private)
    for who in (cast.owner, cast.admin, cast.owning, cast.managing, cast.outsider,
                cast.manager):
        assert await _sees(api, who, public)
    total = await api.call("/channel/list", {}, key=cast.outsider.key)
    assert [c["channel_name"] for c in total.data["items"]] == ["Open"]


async def test_hidden_private_channel_cannot_be_managed(api: Api, cast: Cast) -> None:
    private = await _create(api, cast, "Secret", team_id=cast.owning_team, is_private=True)
    public = await _create(api, cast, "Open")
    for path, body in [("/channel/update", {"description": "mine now"}),
                       ("/channel/disable", {}), ("/channel/delete", {})]:
        reply = await api.call(path, {"channel_id": private, **body}, key=cast.manager.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    info = await api.call("/channel/info", {"channel_id": private}, key=cast.owner.key)
    assert (info.data["description"], info.data["status"]) == ("", "enabled")
    # The same person manages a public channel.
    ok = await api.call("/channel/update", {"channel_id": public, "description": "fine"},
                        key=cast.manager.key)
    assert ok.status == 200


async def test_private_without_teams_is_for_admins_only(api: Api, cast: Cast) -> None:
    private = await _create(api, cast, "Vault", is_private=True)
    assert await _sees(api, cast.admin, private)
    assert await _sees(api, cast.owner, private)
    for who in (cast.owning, cast.managing, cast.outsider):
        assert not await _sees(api, who, private)


async def test_visibility_follows_updates(api: Api, cast: Cast) -> None:
    channel_id = await _create(api, cast, "Moving", team_id=cast.owning_team, is_private=True)
    assert not await _sees(api, cast.managing, channel_id)
    await api.call("/channel/update", {"channel_id": channel_id,
                                       "managing_team_ids": [cast.managing_team]},
                   key=cast.owner.key)
    assert await _sees(api, cast.managing, channel_id)
    assert not await _sees(api, cast.outsider, channel_id)
    await api.call("/channel/update", {"channel_id": channel_id, "is_private": False},
                   key=cast.owner.key)
    assert await _sees(api, cast.outsider, channel_id)
    # Joining the owning team is enough too.
    await api.call("/channel/update", {"channel_id": channel_id, "is_private": True,
                                       "managing_team_ids": []}, key=cast.owner.key)
    assert not await _sees(api, cast.outsider, channel_id)
    await api.call("/team/upsert", {"team_id": cast.owning_team, "team_name": "Owners",
                                    "person_ids": [cast.owning.person_id,
                                                   cast.outsider.person_id]},
                   key=cast.owner.key)
    assert await _sees(api, cast.outsider, channel_id)


async def test_my_team_and_managed_filters(api: Api, cast: Cast) -> None:
    owned = await _create(api, cast, "Owned", team_id=cast.owning_team, is_private=True)
    helped = await _create(api, cast, "Helped", team_id=cast.managing_team,
                           managing_team_ids=[cast.owning_team])
    await _create(api, cast, "Elsewhere")

    async def names(who: Person, body: dict[str, object]) -> list[str]:
        reply = await api.call("/channel/list", {"orderby": "channel_name", "asc": True,
                                                 **body}, key=who.key)
        return [c["channel_name"] for c in reply.data["items"]]

    assert await names(cast.owning, {"is_my_team": True}) == ["Owned"]
    assert await names(cast.owning, {"is_my_managed": True}) == ["Helped", "Owned"]
    assert await names(cast.managing, {"is_my_team": True}) == ["Helped"]
    assert await names(cast.outsider, {"is_my_managed": True}) == []
    assert await names(cast.outsider, {"team_ids": [cast.owning_team]}) == []
    assert owned != helped
