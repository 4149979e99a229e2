"""Escalation and notification rules carry their limits in the records the dispatch services
take (RuleSpec, NotifyRuleSpec, EscalateLayer...), checked when the service is entered: a
direct call past a limit is refused as the API refuses it, nested paths included."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.dispatch import service as rules
from dutyline.dispatch.notify_rule import service as notify_rules
from dutyline.dispatch.schemas import EscalateLayer, EscalateTarget, NotifyBy
from tests.dispatch.support import PRESET_TEMPLATE, layer, make_channel, rule_body
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.limits import refused_alike

pytestmark = pytest.mark.anyio


def _layer(person_id: int, **options: Any) -> EscalateLayer:
    return EscalateLayer(target=EscalateTarget(person_ids=[person_id],
                                               by=NotifyBy(follow_preference=True)), **options)


def _rule(api: Api, channel_id: int, layers: list[EscalateLayer], **fields: Any) -> Any:
    values: dict[str, Any] = {"template_id": PRESET_TEMPLATE, "rule_name": "Default",
                              "description": "", "priority": 0, "aggr_window": 0,
                              "time_filters": [], "filters": [], **fields}
    return lambda conn, actor: rules.create_rule(
        conn, actor, deps=api.runtime.deps, channel_id=channel_id, layers=layers, **values)


async def test_an_escalation_rule_past_its_limits(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    me = owner.person_id
    # The column holds 64 characters; the rule's name 39, whoever writes it.
    said = await refused_alike(
        api, owner, "/channel/escalate/rule/create",
        rule_body(channel_id, [layer(person_ids=[me])], rule_name="r" * 40),
        _rule(api, channel_id, [_layer(me)], rule_name="r" * 40))
    assert said == "Invalid parameter rule_name: Expected `str` of length <= 39"
    said = await refused_alike(
        api, owner, "/channel/escalate/rule/create",
        rule_body(channel_id, [layer(person_ids=[me]), layer(person_ids=[me], notify_step=500)]),
        _rule(api, channel_id, [_layer(me), _layer(me, notify_step=500)]))
    assert said.startswith("Invalid parameter layers[1].notify_step: ")
    await refused_alike(
        api, owner, "/channel/escalate/rule/create",
        rule_body(channel_id, [layer(person_ids=[me])], priority=201),
        _rule(api, channel_id, [_layer(me)], priority=201))
    await refused_alike(
        api, owner, "/channel/escalate/rule/create",
        rule_body(channel_id, [layer(person_ids=[me], max_times=7)]),
        _rule(api, channel_id, [_layer(me, max_times=7)]))
    await refused_alike(
        api, owner, "/channel/escalate/rule/create",
        rule_body(channel_id, [layer(person_ids=[0])]),
        _rule(api, channel_id, [_layer(0)]))
    reply = await api.call("/channel/escalate/rule/list", {"channel_id": channel_id},
                           key=owner.key)
    assert reply.data["items"] == []


async def test_an_escalation_rule_update_past_its_limits(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    rule_id = "0" * 24
    await refused_alike(
        api, owner, "/channel/escalate/rule/update",
        {**rule_body(channel_id, [layer(person_ids=[owner.person_id])],
                     description="d" * 501), "rule_id": rule_id},
        lambda conn, actor: rules.update_rule(
            conn, actor, deps=api.runtime.deps, channel_id=channel_id, rule_id=rule_id,
            template_id=PRESET_TEMPLATE, rule_name="Default", description="d" * 501,
            priority=0, aggr_window=0, layers=[_layer(owner.person_id)], time_filters=[],
            filters=[]))


async def test_a_notification_rule_past_its_limits(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    target = {"person_ids": [owner.person_id], "by": {"follow_preference": True}}

    def create(**fields: Any) -> Any:
        values: dict[str, Any] = {"rule_name": "Tell", "description": "", "events": ["i_new"],
                                  "template_id": "", "filters": [], "time_filters": [],
                                  **fields}
        return lambda conn, actor: notify_rules.create_rule(
            conn, actor, deps=api.runtime.deps, channel_id=channel_id,
            target=EscalateTarget(person_ids=[owner.person_id],
                                  by=NotifyBy(follow_preference=True)), **values)

    body = {"channel_id": channel_id, "rule_name": "Tell", "events": ["i_new"],
            "target": target}
    await refused_alike(api, owner, "/channel/notify/rule/create",
                        {**body, "rule_name": "t" * 40}, create(rule_name="t" * 40))
    await refused_alike(api, owner, "/channel/notify/rule/create",
                        {**body, "events": []}, create(events=[]))
    await refused_alike(api, owner, "/channel/notify/rule/create",
                        {**body, "events": ["i_gone"]}, create(events=["i_gone"]))
