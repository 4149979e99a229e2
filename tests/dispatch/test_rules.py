"""/channel/escalate/rule/*: the record, validation of every range, permissions, other
accounts' ids, and write-only webhook secrets."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from sqlalchemy import select

from dutyline.db.tables.dispatch import escalate_rule
from tests.api.test_reference_schemas import check
from tests.dispatch.support import (
    PRESET_TEMPLATE,
    create_rule,
    layer,
    make_channel,
    rule_body,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def test_create_info_list_update_and_toggle(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    body = rule_body(channel_id, [layer(person_ids=[owner.person_id], max_times=2,
                                        notify_step=0.5, escalate_window=30),
                                  layer(emails=["boss@example.com"], force_escalate=True,
                                        by={"critical": ["email"]})],
                     priority=3, aggr_window=120, description="primary then boss")
    response = await api.raw("POST", "/channel/escalate/rule/create",
                             params={"app_key": owner.key}, json=body)
    created = check("/channel/escalate/rule/create", response)["data"]
    rule_id = created["rule_id"]
    assert created["rule_name"] == "Default"

    listed = check("/channel/escalate/rule/list", await api.raw(
        "POST", "/channel/escalate/rule/list", params={"app_key": owner.key},
        json={"channel_id": channel_id}))["data"]["items"]
    [item] = listed
    assert item["rule_id"] == rule_id and item["status"] == "enabled"
    assert item["priority"] == 3 and item["aggr_window"] == 120
    assert item["account_id"] == owner.account_id and item["updated_by"] == owner.person_id
    assert item["layers"][0]["target"]["person_ids"] == [owner.person_id]
    assert item["layers"][0]["notify_step"] == 0.5 and item["layers"][0]["max_times"] == 2
    # Clients read these by name: an empty array and a false flag are answered, not dropped.
    assert item["layers"][0]["target"]["webhooks"] == []
    assert item["layers"][0]["target"]["by"]["follow_preference"] is True
    assert item["layers"][1]["target"]["by"] == {"follow_preference": False,
                                                 "critical": ["email"]}
    assert item["layers"][1]["force_escalate"] is True
    assert item["filters"] == [] and item["time_filters"] == []

    info = check("/channel/escalate/rule/info", await api.raw(
        "POST", "/channel/escalate/rule/info", params={"app_key": owner.key},
        json={"channel_id": channel_id, "rule_id": rule_id}))["data"]
    assert info == item

    body2 = {**body, "rule_id": rule_id, "rule_name": "Renamed", "aggr_window": 0,
             "layers": [layer(emails=["a@example.com"])]}
    # The test server has no SMTP: the rule is saved, and the answer says e-mail cannot go.
    assert (await api.call("/channel/escalate/rule/update", body2, key=owner.key)).data == {
        "warnings": [{"field": "layers[0].target.emails",
                      "message": "e-mail is not configured: set DUTYLINE_SMTP_URL"}]}
    for op, status in (("disable", "disabled"), ("enable", "enabled"), ("disable", "disabled")):
        reply = await api.call(f"/channel/escalate/rule/{op}",
                               {"channel_id": channel_id, "rule_id": rule_id}, key=owner.key)
        assert reply.data == {}
        got = (await api.call("/channel/escalate/rule/info",
                              {"channel_id": channel_id, "rule_id": rule_id},
                              key=owner.key)).data
        assert got["status"] == status
    assert got["rule_name"] == "Renamed" and len(got["layers"]) == 1
    deleted = await api.call("/channel/escalate/rule/delete",
                             {"channel_id": channel_id, "rule_id": rule_id}, key=owner.key)
    assert deleted.data == {}
    gone = await api.call("/channel/escalate/rule/info",
                          {"channel_id": channel_id, "rule_id": rule_id}, key=owner.key)
    assert gone.status == 400 and gone.code == "ResourceNotFound"


async def test_list_is_in_priority_order(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    late = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])],
                                                   priority=9, rule_name="late"))
    early = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])],
                                                    priority=1, rule_name="early"))
    items = (await api.call("/channel/escalate/rule/list", {"channel_id": channel_id},
                            key=owner.key)).data["items"]
    assert [i["rule_id"] for i in items] == [early, late]


@pytest.mark.parametrize(("change", "field"), [
    ({"aggr_window": 3601}, "aggr_window"),
    ({"aggr_window": -1}, "aggr_window"),
    ({"priority": 201}, "priority"),
    ({"rule_name": ""}, "rule_name"),
    ({"rule_name": "x" * 40}, "rule_name"),
    ({"description": "d" * 501}, "description"),
    ({"template_id": "nothex"}, "template_id"),
    ({"layers": []}, "layers"),
    ({"layers": [layer(emails=["a@x.io"], max_times=7)]}, "max_times"),
    ({"layers": [layer(emails=["a@x.io"], notify_step=0.4)]}, "notify_step"),
    ({"layers": [layer(emails=["a@x.io"], notify_step=121)]}, "notify_step"),
    ({"layers": [layer(emails=["a@x.io"], escalate_window=721)]}, "escalate_window"),
    ({"layers": [{"target": {"by": {"follow_preference": True}}}]}, "target"),
    ({"layers": [{"target": {"emails": ["a@x.io"]}}]}, "by"),
    ({"layers": [layer(emails=["not-an-address"])]}, "emails"),
    ({"layers": [layer(emails=["a@x.io"], by={"critical": ["pigeon"]})]}, "by.critical"),
    ({"layers": [layer(webhooks=[{"type": "custom", "settings": {"url": "ftp://x"}}])]},
     "settings.url"),
    ({"layers": [layer(webhooks=[{"type": "carrier", "settings": {"url": "https://x.io"}}])]},
     "type"),
])
async def test_out_of_range_values_are_invalid_parameters(
        api: Api, owner: Person, change: dict[str, Any], field: str) -> None:
    channel_id = await make_channel(api, owner)
    body = {**rule_body(channel_id, [layer(emails=["a@x.io"])]), **change}
    reply = await api.call("/channel/escalate/rule/create", body, key=owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert field in reply.message


async def test_boundaries_are_accepted(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    body = rule_body(channel_id, [layer(emails=["a@x.io"], max_times=6, notify_step=120,
                                        escalate_window=720)], aggr_window=3600, priority=200,
                     rule_name="x" * 39)
    await create_rule(api, owner, body)
    body = rule_body(channel_id, [layer(emails=["a@x.io"], max_times=0, notify_step=0.5,
                                        escalate_window=0)], aggr_window=0, priority=0)
    await create_rule(api, owner, body)


async def test_members_read_but_cannot_write(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    rule_id = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])]))
    member = await new_member(api, owner, name="Reader")
    listed = await api.call("/channel/escalate/rule/list", {"channel_id": channel_id},
                            key=member.key)
    assert [i["rule_id"] for i in listed.data["items"]] == [rule_id]
    ref = {"channel_id": channel_id, "rule_id": rule_id}
    for op, body in (("create", rule_body(channel_id, [layer(emails=["a@x.io"])])),
                     ("update", {**rule_body(channel_id, [layer(emails=["a@x.io"])]), **ref}),
                     ("delete", ref), ("enable", ref), ("disable", ref)):
        reply = await api.call(f"/channel/escalate/rule/{op}", body, key=member.key)
        assert reply.status == 403 and reply.code == "AccessDenied", op


async def test_other_accounts_ids_are_not_found(api: Api, owner: Person,
                                                other_owner: Person) -> None:
    mine = await make_channel(api, owner)
    theirs = await make_channel(api, other_owner, "Theirs")
    their_rule = await create_rule(api, other_owner,
                                   rule_body(theirs, [layer(emails=["a@x.io"])]))
    reply = await api.call("/channel/escalate/rule/create",
                           rule_body(theirs, [layer(emails=["a@x.io"])]), key=owner.key)
    assert reply.code == "ResourceNotFound"
    for op in ("info", "delete", "enable", "disable"):
        for channel_id in (mine, theirs):
            reply = await api.call(f"/channel/escalate/rule/{op}",
                                   {"channel_id": channel_id, "rule_id": their_rule},
                                   key=owner.key)
            assert reply.status == 400 and reply.code == "ResourceNotFound", op
    assert (await api.call("/channel/escalate/rule/list", {"channel_id": theirs},
                           key=owner.key)).code == "ResourceNotFound"
    reply = await api.call("/channel/escalate/rule/create", rule_body(
        mine, [layer(person_ids=[other_owner.person_id])]), key=owner.key)
    assert reply.code == "ResourceNotFound" and str(other_owner.person_id) in reply.message
    team = await api.call("/team/upsert", {"team_name": "ops", "person_ids": [
        other_owner.person_id]}, key=other_owner.key)
    reply = await api.call("/channel/escalate/rule/create", rule_body(
        mine, [layer(team_ids=[int(team.data["team_id"])])]), key=owner.key)
    assert reply.code == "ResourceNotFound"
    reply = await api.call("/channel/escalate/rule/create", rule_body(
        mine, [layer(schedule_to_role_ids={"123456": [1]})]), key=owner.key)
    assert reply.code == "ResourceNotFound"


async def test_a_rule_names_a_preset_or_its_accounts_template(api: Api, owner: Person,
                                                              other_owner: Person) -> None:
    """Every built-in preset is every account's; a template of another account (or none at
    all) is not found; the id a rule holds saves again after its template was deleted."""
    channel_id = await make_channel(api, owner)
    body = rule_body(channel_id, [layer(emails=["a@x.io"])])
    for preset in (PRESET_TEMPLATE, "000000000000000000000001", PRESET_TEMPLATE.upper()):
        await create_rule(api, owner, {**body, "template_id": preset})
    made = await api.call("/template/create", {"template_name": "Mine", "sms": "x"},
                          key=owner.key)
    mine = made.data["template_id"]
    theirs = (await api.call("/template/create", {"template_name": "Theirs", "sms": "x"},
                             key=other_owner.key)).data["template_id"]
    rule_id = await create_rule(api, owner, {**body, "template_id": mine})
    for unknown in (theirs, "ab" * 12):
        reply = await api.call("/channel/escalate/rule/create",
                               {**body, "template_id": unknown}, key=owner.key)
        assert reply.code == "ResourceNotFound" and unknown in reply.message, reply.body
        reply = await api.call("/channel/escalate/rule/update", {
            **body, "rule_id": rule_id, "template_id": unknown}, key=owner.key)
        assert reply.code == "ResourceNotFound", reply.body
    gone = await api.call("/template/delete", {"template_id": mine}, key=owner.key)
    assert gone.status == 200, gone.body
    renamed = {**body, "rule_id": rule_id, "template_id": mine, "rule_name": "Kept"}
    reply = await api.call("/channel/escalate/rule/update", renamed, key=owner.key)
    assert reply.status == 200, reply.body
    reply = await api.call("/channel/escalate/rule/create", {**body, "template_id": mine},
                           key=owner.key)
    assert reply.code == "ResourceNotFound", reply.body


async def _stored_hooks(api: Api, rule_id: str) -> list[dict[str, Any]]:
    async with api.runtime.db.transaction() as conn:
        raw = (await conn.execute(select(escalate_rule.c.layers).where(
            escalate_rule.c.rule_id == rule_id))).scalar_one()
    hooks: list[dict[str, Any]] = msgspec.json.decode(raw)[0]["target"]["webhooks"]
    return hooks


async def test_webhook_secrets_are_sealed_write_only_and_dropped_on_origin_change(
        api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    hook = {"type": "custom", "settings": {"url": "https://hooks.example.com/a",
                                            "secret": "s3cret"}}
    body = rule_body(channel_id, [layer(webhooks=[hook])])
    rule_id = await create_rule(api, owner, body)
    info = (await api.call("/channel/escalate/rule/info",
                           {"channel_id": channel_id, "rule_id": rule_id}, key=owner.key)).data
    assert info["layers"][0]["target"]["webhooks"] == [
        {"type": "custom", "settings": {"url": "https://hooks.example.com/a"}}]
    [stored] = await _stored_hooks(api, rule_id)
    assert stored["settings"]["secret"] != "s3cret"
    assert api.runtime.secrets.open(stored["settings"]["secret"]) == "s3cret"
    # Same origin, secret left out: kept.
    same = {"type": "custom", "settings": {"url": "https://hooks.example.com/b"}}
    await api.call("/channel/escalate/rule/update", {**rule_body(channel_id, [layer(
        webhooks=[same])]), "rule_id": rule_id}, key=owner.key)
    [stored] = await _stored_hooks(api, rule_id)
    assert api.runtime.secrets.open(stored["settings"]["secret"]) == "s3cret"
    # Another origin: dropped.
    moved = {"type": "custom", "settings": {"url": "https://evil.example.net/b"}}
    await api.call("/channel/escalate/rule/update", {**rule_body(channel_id, [layer(
        webhooks=[moved])]), "rule_id": rule_id}, key=owner.key)
    [stored] = await _stored_hooks(api, rule_id)
    assert "secret" not in stored["settings"]
