"""/integration/* through the HTTP API, and the key resolver alert ingestion calls."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.channel.integration.service import (
    ResolvedIntegration,
    hash_key,
    is_well_formed,
    lookup_key_sync,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def _channel(api: Api, who: Person, name: str = "Payments", **extra: Any) -> int:
    reply = await api.call("/channel/create", {"channel_name": name, **extra}, key=who.key)
    assert reply.status == 200, reply.body
    channel_id: int = reply.data["channel_id"]
    return channel_id


async def _integration(api: Api, who: Person, channel_id: int,
                       name: str = "Prometheus") -> dict[str, Any]:
    reply = await api.call("/integration/create",
                           {"channel_id": channel_id, "integration_name": name}, key=who.key)
    assert reply.status == 200, reply.body
    data: dict[str, Any] = reply.data
    return data


async def _resolve(api: Api, key: str) -> ResolvedIntegration | None:
    """What ingestion does with a pushed key: refuse a malformed one, look up its hash."""
    if not is_well_formed(key):
        return None
    found = await api.runtime.db.run_sync(
        lambda conn: lookup_key_sync(conn, hash_key(key)), write=False)
    return None if found is None else found.integration


async def test_create_shows_the_key_once_and_resolves_it(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    created = await _integration(api, owner, channel_id)
    key = created["integration_key"]
    assert set(created) == {"integration_id", "integration_name", "integration_key"}
    assert created["integration_name"] == "Prometheus"
    assert key.startswith("ik_") and len(key) > 40

    resolved = await _resolve(api, key)
    assert resolved == ResolvedIntegration(
        integration_id=created["integration_id"], account_id=owner.account_id,
        channel_id=channel_id, integration_name="Prometheus", integration_type="standard",
        channel_status="enabled",
    )

    info = await api.call("/integration/info", {"integration_id": created["integration_id"]},
                          key=owner.key)
    assert info.status == 200
    assert "integration_key" not in info.data
    assert key not in str(info.body)
    assert info.data["key_suffix"] == key[-6:]
    assert info.data["channel_id"] == channel_id
    assert info.data["channel_name"] == "Payments"
    assert info.data["status"] == "enabled"
    assert info.data["creator_id"] == owner.person_id

    listed = await api.call("/integration/list", {"channel_id": channel_id}, key=owner.key)
    assert listed.status == 200
    assert listed.data["total"] == 1
    assert [i["integration_id"] for i in listed.data["items"]] == [created["integration_id"]]
    assert key not in str(listed.body)


async def test_unknown_and_malformed_keys_do_not_resolve(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    key = (await _integration(api, owner, channel_id))["integration_key"]
    for wrong in ["", "ik_", key[:-1], key + "x", key.upper(), "dk_" + key[3:], "x" * 500]:
        assert await _resolve(api, wrong) is None, wrong


async def test_deleted_integration_stops_resolving_and_frees_its_name(api: Api,
                                                                       owner: Person) -> None:
    channel_id = await _channel(api, owner)
    created = await _integration(api, owner, channel_id)
    gone = await api.call("/integration/delete", {"integration_id": created["integration_id"]},
                          key=owner.key)
    assert (gone.status, gone.data) == (200, {})
    assert await _resolve(api, created["integration_key"]) is None
    info = await api.call("/integration/info", {"integration_id": created["integration_id"]},
                          key=owner.key)
    assert (info.status, info.code) == (400, "ResourceNotFound")
    again = await api.call("/integration/delete", {"integration_id": created["integration_id"]},
                           key=owner.key)
    assert again.code == "ResourceNotFound"
    listed = await api.call("/integration/list", {"channel_id": channel_id}, key=owner.key)
    assert listed.data["total"] == 0
    renewed = await _integration(api, owner, channel_id)  # the name is free again
    assert renewed["integration_key"] != created["integration_key"]
    assert (await _resolve(api, renewed["integration_key"])) is not None


async def test_channel_status_decides_what_resolves(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    key = (await _integration(api, owner, channel_id))["integration_key"]
    assert (await api.call("/channel/disable", {"channel_id": channel_id}, key=owner.key)).status \
        == 200
    disabled = await _resolve(api, key)
    assert disabled is not None and disabled.channel_status == "disabled"
    await api.call("/channel/enable", {"channel_id": channel_id}, key=owner.key)
    enabled = await _resolve(api, key)
    assert enabled is not None and enabled.channel_status == "enabled"
    assert (await api.call("/channel/delete", {"channel_id": channel_id}, key=owner.key)).status \
        == 200
    assert await _resolve(api, key) is None
    listed = await api.call("/integration/list", {}, key=owner.key)
    assert listed.data["total"] == 0


async def test_names_are_unique_per_channel(api: Api, owner: Person) -> None:
    first = await _channel(api, owner, "One")
    second = await _channel(api, owner, "Two")
    await _integration(api, owner, first, "Grafana")
    dup = await api.call("/integration/create",
                         {"channel_id": first, "integration_name": " Grafana "}, key=owner.key)
    assert (dup.status, dup.code) == (400, "InvalidParameter")
    assert "integration_name" in dup.message
    await _integration(api, owner, second, "Grafana")  # another channel: fine
    listed = await api.call("/integration/list", {}, key=owner.key)
    assert listed.data["total"] == 2
    assert {i["channel_id"] for i in listed.data["items"]} == {first, second}
    paged = await api.call("/integration/list", {"limit": 1, "p": 2}, key=owner.key)
    assert paged.data["total"] == 2 and len(paged.data["items"]) == 1


@pytest.mark.parametrize(("body", "field"), [
    ({"integration_name": "x"}, "channel_id"),
    ({"channel_id": 0, "integration_name": "x"}, "channel_id"),
    ({"channel_id": "1", "integration_name": "x"}, "channel_id"),
    ({"channel_id": 1}, "integration_name"),
    ({"channel_id": 1, "integration_name": ""}, "integration_name"),
    ({"channel_id": 1, "integration_name": "x" * 129}, "integration_name"),
])
async def test_create_validation_names_the_field(api: Api, owner: Person, body: dict[str, Any],
                                                 field: str) -> None:
    reply = await api.call("/integration/create", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert field in reply.message


async def test_blank_name_and_unknown_channel(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    blank = await api.call("/integration/create",
                           {"channel_id": channel_id, "integration_name": "   "}, key=owner.key)
    assert blank.code == "InvalidParameter" and "integration_name" in blank.message
    missing = await api.call("/integration/create",
                             {"channel_id": 12345, "integration_name": "x"}, key=owner.key)
    assert (missing.status, missing.code) == (400, "ResourceNotFound")
    listed = await api.call("/integration/list", {"channel_id": 12345}, key=owner.key)
    assert listed.code == "ResourceNotFound"


async def test_other_accounts_integrations_are_not_found(api: Api, owner: Person,
                                                          other_owner: Person) -> None:
    channel_id = await _channel(api, owner)
    created = await _integration(api, owner, channel_id)
    iid = created["integration_id"]
    for path, body in [
        ("/integration/info", {"integration_id": iid}),
        ("/integration/delete", {"integration_id": iid}),
        ("/integration/create", {"channel_id": channel_id, "integration_name": "Stolen"}),
        ("/integration/list", {"channel_id": channel_id}),
    ]:
        reply = await api.call(path, body, key=other_owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    assert (await api.call("/integration/list", {}, key=other_owner.key)).data["total"] == 0
    # Nothing changed for the owner.
    assert await _resolve(api, created["integration_key"]) is not None
    listed = await api.call("/integration/list", {"channel_id": channel_id}, key=owner.key)
    assert [i["integration_name"] for i in listed.data["items"]] == ["Prometheus"]


async def test_permissions(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    created = await _integration(api, owner, channel_id)
    member = await new_member(api, owner, builtin="member")
    nobody = await new_member(api, owner, name="Nobody", builtin=None)
    admin = await new_member(api, owner, name="Admin", builtin="admin")

    listed = await api.call("/integration/list", {}, key=member.key)  # members may view
    assert listed.status == 200 and listed.data["total"] == 1
    for path, body in [
        ("/integration/create", {"channel_id": channel_id, "integration_name": "M"}),
        ("/integration/delete", {"integration_id": created["integration_id"]}),
    ]:
        reply = await api.call(path, body, key=member.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    denied = await api.call("/integration/info", {"integration_id": created["integration_id"]},
                            key=nobody.key)
    assert (denied.status, denied.code) == (403, "AccessDenied")

    made = await _integration(api, admin, channel_id, "By admin")
    assert (await _resolve(api, made["integration_key"])) is not None
    assert (await api.call("/integration/list", {}, key=owner.key)).data["total"] == 2


async def test_private_channel_integrations_follow_channel_visibility(
        api: Api, owner: Person) -> None:
    team = await api.call("/team/upsert", {"team_name": "Core"}, key=owner.key)
    channel_id = await _channel(api, owner, "Secret", team_id=team.data["team_id"],
                                is_private=True)
    created = await _integration(api, owner, channel_id)
    member = await new_member(api, owner, builtin="member")
    info = await api.call("/integration/info", {"integration_id": created["integration_id"]},
                          key=member.key)
    assert info.code == "ResourceNotFound"
    assert (await api.call("/integration/list", {}, key=member.key)).data["total"] == 0
    await api.call("/team/upsert", {"team_id": team.data["team_id"], "team_name": "Core",
                                    "person_ids": [member.person_id]}, key=owner.key)
    info = await api.call("/integration/info", {"integration_id": created["integration_id"]},
                          key=member.key)
    assert info.status == 200 and info.data["channel_name"] == "Secret"
