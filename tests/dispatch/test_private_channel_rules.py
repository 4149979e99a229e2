"""The escalation rules of a private channel follow the channel: to a member who may not see
the channel (no team of it, even holding channel_manage) the channel and its rules are not
found, for reads and writes alike; the channel's teams and admins keep them."""

from __future__ import annotations

import pytest

from tests.dispatch.support import create_rule, layer, rule_body
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def _keeper(api: Api, owner: Person) -> Person:
    """A member in no team who may view and manage every channel they can see."""
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    ids = [p["id"] for p in perms if p["permission_name"] in ("channel_view", "channel_manage")]
    assert len(ids) == 2
    role = await api.call("/role/upsert", {"role_name": "Keepers", "permission_ids": ids},
                          key=owner.key)
    assert role.status == 200, role.body
    return await new_member(api, owner, name="Keeper", builtin=None,
                            role_ids=[role.data["role_id"]])


async def _private_channel(api: Api, owner: Person, team_of: Person) -> int:
    team = await api.call("/team/upsert", {"team_name": "Payroll team",
                                           "person_ids": [team_of.person_id]}, key=owner.key)
    assert team.status == 200, team.body
    reply = await api.call("/channel/create", {
        "channel_name": "Payroll", "is_private": True, "team_id": team.data["team_id"]},
        key=owner.key)
    assert reply.status == 200, reply.body
    return int(reply.data["channel_id"])


async def test_rules_of_a_private_channel_are_not_found_outside_it(
        api: Api, owner: Person) -> None:
    insider = await new_member(api, owner, name="Insider")
    outsider = await new_member(api, owner, name="Outsider")
    keeper = await _keeper(api, owner)
    channel_id = await _private_channel(api, owner, insider)
    rule_id = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])]))
    ref = {"channel_id": channel_id, "rule_id": rule_id}

    for who in (outsider, keeper):
        listed = await api.call("/channel/escalate/rule/list", {"channel_id": channel_id},
                                key=who.key)
        assert listed.status == 400 and listed.code == "ResourceNotFound", listed.body
        info = await api.call("/channel/escalate/rule/info", ref, key=who.key)
        assert info.status == 400 and info.code == "ResourceNotFound", info.body

    body = rule_body(channel_id, [layer(emails=["b@x.io"])], rule_name="Mine")
    for op, payload in (("create", body), ("update", {**body, **ref}), ("disable", ref),
                        ("enable", ref), ("delete", ref)):
        reply = await api.call(f"/channel/escalate/rule/{op}", payload, key=keeper.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", (op, reply.body)

    # Nothing moved, and those who see the channel still read its one rule as it was.
    for who in (insider, owner):
        listed = await api.call("/channel/escalate/rule/list", {"channel_id": channel_id},
                                key=who.key)
        assert [(i["rule_id"], i["rule_name"], i["status"]) for i in listed.data["items"]] == [
            (rule_id, "Default", "enabled")], listed.body
        info = await api.call("/channel/escalate/rule/info", ref, key=who.key)
        assert info.status == 200 and info.data["rule_id"] == rule_id
