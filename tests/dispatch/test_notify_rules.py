"""Channel notification rules: create, update, delete, enable, disable and list, with their
validation, permissions and account scoping, on each database."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.dispatch import channel_notify_rule
from dutyline.db.tables.platform import audit_log
from tests.dispatch.notify_rule_support import (
    CREATE,
    create_notify_rule,
    list_notify_rules,
    notify_rule,
)
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import PRESET_TEMPLATE, make_channel
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def test_create_list_update_disable_enable_delete(
        api: Api, owner: Person, receiver: Receiver) -> None:
    channel_id = await make_channel(api, owner)
    mate = await new_member(api, owner, name="Mate", email="mate@example.com")
    body = notify_rule(
        channel_id, rule_name="  Tell ops  ", description="Ops hear of every critical one",
        events=["i_rslv", "i_new", "i_ack", "i_new"], template_id=PRESET_TEMPLATE.upper(),
        target={"person_ids": [mate.person_id], "by": {"critical": ["email"]},
                "emails": ["ops@example.com"],
                "webhooks": [{"type": "custom", "settings": {"url": receiver.url("/ops"),
                                                             "secret": "hush"}}]},
        filters=[[{"key": "severity", "oper": "IN", "vals": ["Critical"]}]],
        time_filters=[{"start": "00:00", "end": "23:59", "repeat": [0, 1, 2, 3, 4, 5, 6]}])
    before = int(api.runtime.clock.now())
    created = await api.call(CREATE, body, key=owner.key)
    assert created.status == 200, created.body
    rule_id = created.data["rule_id"]
    # Saved, with what this server (no SMTP) cannot send named.
    assert {k: v for k, v in created.data.items() if k != "warnings"} == {
        "rule_id": rule_id, "rule_name": "Tell ops"}
    assert [w["field"] for w in created.data["warnings"]] == [
        "target.by.critical", "target.by.warning", "target.by.info", "target.emails"]
    assert len(rule_id) == 24 and int(rule_id, 16) >= 0

    [item] = await list_notify_rules(api, owner, channel_id)
    now = item["created_at"]
    assert before <= now <= int(api.runtime.clock.now())
    assert item == {
        "account_id": owner.account_id, "channel_id": channel_id, "rule_id": rule_id,
        "rule_name": "Tell ops", "description": "Ops hear of every critical one",
        # In the vocabulary's order, each once.
        "events": ["i_new", "i_ack", "i_rslv"],
        # The webhook's secret is write-only.
        "target": {"person_ids": [mate.person_id],
                   "by": {"follow_preference": False, "critical": ["email"]},
                   "emails": ["ops@example.com"],
                   "webhooks": [{"type": "custom", "settings": {"url": receiver.url("/ops")}}]},
        "template_id": PRESET_TEMPLATE, "filters": body["filters"],
        "time_filters": body["time_filters"], "status": "enabled",
        "updated_by": owner.person_id, "created_at": now, "updated_at": now}
    # Stored sealed, not in the clear.
    async with api.runtime.db.transaction() as conn:
        stored = (await conn.execute(select(channel_notify_rule.c.target))).scalar_one()
    assert "hush" not in stored

    ids = {"channel_id": channel_id, "rule_id": rule_id}
    updated = await api.call("/channel/notify/rule/update", {
        **ids, "rule_name": "Tell ops of resolutions", "events": ["i_rslv"],
        "target": {"team_ids": [], "emails": ["lead@example.com"], "by": {}}}, key=owner.key)
    assert updated.status == 200, updated.body
    assert [w["field"] for w in updated.data["warnings"]] == ["target.emails"]
    [item] = await list_notify_rules(api, owner, channel_id)
    assert (item["rule_name"], item["events"], item["target"], item["filters"],
            item["template_id"], item["description"], item["status"]) == (
        "Tell ops of resolutions", ["i_rslv"],
        {"emails": ["lead@example.com"], "by": {"follow_preference": False}, "webhooks": []},
        [], "", "",
        "enabled")

    for op, status in (("disable", "disabled"), ("disable", "disabled"),
                       ("enable", "enabled"), ("disable", "disabled")):
        reply = await api.call(f"/channel/notify/rule/{op}", ids, key=owner.key)
        assert reply.status == 200 and reply.data == {}, reply.body
        [item] = await list_notify_rules(api, owner, channel_id)
        assert item["status"] == status
    # An update keeps the status.
    assert (await api.call("/channel/notify/rule/update", {
        **ids, "rule_name": "Again", "events": ["i_new"],
        "target": {"webhooks": [{"type": "custom", "settings": {"url": receiver.url()}}]}},
        key=owner.key)).status == 200
    [item] = await list_notify_rules(api, owner, channel_id)
    assert item["status"] == "disabled"

    deleted = await api.call("/channel/notify/rule/delete", ids, key=owner.key)
    assert deleted.status == 200 and deleted.data == {}
    assert await list_notify_rules(api, owner, channel_id) == []
    again = await api.call("/channel/notify/rule/delete", ids, key=owner.key)
    assert (again.status, again.code) == (400, "ResourceNotFound")
    async with api.runtime.db.transaction() as conn:
        operations = (await conn.execute(
            select(audit_log.c.operation, audit_log.c.outcome)
            .where(audit_log.c.account_id == owner.account_id,
                   audit_log.c.operation.like("channel.notify%"))
            .order_by(audit_log.c.id))).all()
    assert operations[-1].operation == "channel.notify.rule.delete"
    assert operations[-1].outcome != operations[-2].outcome  # the refused second delete
    assert [row.operation for row in operations[:-1]] == [
        "channel.notify.rule.create", "channel.notify.rule.update",
        "channel.notify.rule.disable", "channel.notify.rule.disable",
        "channel.notify.rule.enable", "channel.notify.rule.disable",
        "channel.notify.rule.update", "channel.notify.rule.delete"]


@pytest.mark.parametrize(("change", "field"), [
    ({"events": []}, "events"),
    ({"events": ["i_comm"]}, "events"),
    ({"rule_name": "   "}, "rule_name"),
    ({"rule_name": "x" * 40}, "rule_name"),
    ({"description": "x" * 501}, "description"),
    ({"target": {}}, "target"),
    ({"target": {"person_ids": [1]}}, "target.by"),
    ({"target": {"emails": ["not-an-address"], "by": {}}}, "target.emails[0]"),
    ({"target": {"webhooks": [{"type": "custom", "settings": {"url": "ftp://x.io/h"}}]}},
     "target.webhooks[0].settings.url"),
    ({"target": {"webhooks": [{"type": "pigeon", "settings": {"url": "https://x.io"}}]}},
     "target.webhooks[0].type"),
    ({"target": {"emails": ["a@x.io"], "by": {"critical": ["carrier-pigeon"]}}},
     "target.by.critical[0]"),
    ({"filters": [[{"key": "severity", "oper": "LIKE", "vals": ["x"]}]]}, "filters"),
    ({"time_filters": [{"start": "25:00", "end": "26:00"}]}, "time_filters"),
    ({"template_id": "nope"}, "template_id"),
])
async def test_invalid_rules_are_refused_naming_the_field(
        api: Api, owner: Person, change: dict[str, Any], field: str) -> None:
    channel_id = await make_channel(api, owner)
    reply = await api.call(CREATE, {**notify_rule(channel_id), **change}, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
    assert field in reply.body["error"]["message"], reply.body
    assert await list_notify_rules(api, owner, channel_id) == []


async def test_what_is_not_the_accounts_is_not_found(
        api: Api, owner: Person, other_owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    theirs = await make_channel(api, other_owner, "Theirs")
    their_rule = await create_notify_rule(api, other_owner, notify_rule(theirs))
    their_member = await new_member(api, other_owner, name="Stranger")
    their_template = (await api.call("/template/create", {
        "template_name": "Theirs", "email": "x"}, key=other_owner.key)).data["template_id"]
    their_schedule = (await api.call("/schedule/create", {
        "schedule_name": "Theirs", "time_zone": "UTC", "layers": [{
            "layer_name": "L", "mode": 0, "rotation_unit": "day", "rotation_value": 1,
            "enable_time": 1_700_000_000, "groups": [{"group_name": "A", "members": [
                {"role_id": 0, "person_ids": [other_owner.person_id]}]}]}]},
        key=other_owner.key)).data["schedule_id"]
    for body in (
            notify_rule(theirs),
            notify_rule(channel_id, target={"schedule_to_role_ids": {str(their_schedule): [0]},
                                            "by": {}}),
            notify_rule(channel_id, target={"person_ids": [their_member.person_id],
                                            "by": {"follow_preference": True}}),
            notify_rule(channel_id, template_id=their_template),
            notify_rule(channel_id, target={"team_ids": [987654], "by": {}})):
        reply = await api.call(CREATE, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), (body, reply.body)
    ids = {"channel_id": theirs, "rule_id": their_rule}
    mine_with_their_rule = {"channel_id": channel_id, "rule_id": their_rule}
    for op in ("delete", "enable", "disable"):
        for body in (ids, mine_with_their_rule):
            reply = await api.call(f"/channel/notify/rule/{op}", body, key=owner.key)
            assert (reply.status, reply.code) == (400, "ResourceNotFound")
    reply = await api.call("/channel/notify/rule/update", {
        **notify_rule(theirs), "rule_id": their_rule}, key=owner.key)
    assert (reply.status, reply.code) == (400, "ResourceNotFound")
    reply = await api.call("/channel/notify/rule/list", {"channel_id": theirs}, key=owner.key)
    assert (reply.status, reply.code) == (400, "ResourceNotFound")
    assert await list_notify_rules(api, owner, channel_id) == []
    # Theirs is untouched.
    [item] = await list_notify_rules(api, other_owner, theirs)
    assert (item["rule_id"], item["status"], item["rule_name"]) == (
        their_rule, "enabled", "Tell the team")


async def test_writes_need_channel_management_and_the_list_any_member(
        api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    rule_id = await create_notify_rule(api, owner, notify_rule(channel_id))
    reader = await new_member(api, owner, name="Reader", builtin="member")
    ids = {"channel_id": channel_id, "rule_id": rule_id}
    for path, body in (
            (CREATE, notify_rule(channel_id)),
            ("/channel/notify/rule/update", {**notify_rule(channel_id, rule_name="Mine"),
                                             **ids}),
            ("/channel/notify/rule/disable", ids),
            ("/channel/notify/rule/enable", ids),
            ("/channel/notify/rule/delete", ids)):
        reply = await api.call(path, body, key=reader.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), (path, reply.body)
    [item] = await list_notify_rules(api, reader, channel_id)
    assert (item["rule_id"], item["rule_name"], item["status"]) == (
        rule_id, "Tell the team", "enabled")
    # A member with no role at all still lists (the reference asks no permission).
    nobody = await new_member(api, owner, name="Nobody", builtin=None)
    assert [i["rule_id"] for i in await list_notify_rules(api, nobody, channel_id)] == [rule_id]


async def test_a_channel_holds_at_most_fifty_rules(api: Api, owner: Person) -> None:
    from dutyline.dispatch.notify_rule.service import MAX_RULES_PER_CHANNEL

    channel_id = await make_channel(api, owner)
    for n in range(MAX_RULES_PER_CHANNEL):
        await create_notify_rule(api, owner, notify_rule(channel_id, rule_name=f"R{n}"))
    reply = await api.call(CREATE, notify_rule(channel_id), key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert "channel_id" in reply.body["error"]["message"]
    assert len(await list_notify_rules(api, owner, channel_id)) == MAX_RULES_PER_CHANNEL
