"""A channel's settings and an integration's route carry their limits in the records the
channel services take (ChannelChanges, RouteSpec), checked when the service is entered: a
direct call past a limit is refused as the API refuses it."""

from __future__ import annotations

import msgspec
import pytest

from dutyline.channel import service as channels
from dutyline.channel.noise import service as noise
from dutyline.channel.route import service as routes
from dutyline.channel.schemas import Group
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.limits import refused_alike

pytestmark = pytest.mark.anyio


async def test_channel_changes_past_their_limits(api: Api, owner: Person) -> None:
    said = await refused_alike(
        api, owner, "/channel/create", {"channel_name": "c" * 60},
        lambda conn, actor: channels.create_channel(
            conn, actor, channel=channels.ChannelChanges(channel_name="c" * 60)))
    assert said == "Invalid parameter channel_name: Expected `str` of length <= 59"
    await refused_alike(
        api, owner, "/channel/create",
        {"channel_name": "Checkout", "group": {"method": "p", "time_window": 1441}},
        lambda conn, actor: channels.create_channel(conn, actor, channel=channels.ChannelChanges(
            channel_name="Checkout", group=Group(method="p", time_window=1441))))
    made = await api.call("/channel/create", {"channel_name": "Checkout"}, key=owner.key)
    channel_id = made.data["channel_id"]
    await refused_alike(
        api, owner, "/channel/update",
        {"channel_id": channel_id, "auto_resolve_timeout": 2_592_001},
        lambda conn, actor: channels.update_channel(
            conn, actor, channel_id=channel_id,
            changes=channels.ChannelChanges(auto_resolve_timeout=2_592_001)))
    await refused_alike(
        api, owner, "/channel/update",
        {"channel_id": channel_id, "managing_team_ids": [1, 2, 3, 4]},
        lambda conn, actor: channels.update_channel(
            conn, actor, channel_id=channel_id,
            changes=channels.ChannelChanges(managing_team_ids=[1, 2, 3, 4])))
    await refused_alike(
        api, owner, "/channel/update",
        {"channel_id": channel_id, "is_external_report_enabled": True,
         "external_report_token": "short"},
        lambda conn, actor: channels.update_channel(
            conn, actor, channel_id=channel_id, changes=channels.ChannelChanges(
                is_external_report_enabled=True, external_report_token="short")))
    info = await api.call("/channel/info", {"channel_id": channel_id}, key=owner.key)
    assert info.data["auto_resolve_timeout"] == 0


async def test_a_route_past_its_limits(api: Api, owner: Person) -> None:
    cases = [{"if": [{"key": "title", "oper": "IN", "vals": ["x"]}], "channel_ids": [1]}] * 101
    said = await refused_alike(
        api, owner, "/route/upsert", {"integration_id": 1, "cases": cases},
        lambda conn, actor: routes.upsert(
            conn, actor, integration_id=1, sections=None, default=None, version=None,
            cases=[routes.RouteCase(if_=c["if"], channel_ids=[1]) for c in cases]))
    assert said == "Invalid parameter cases: Expected `array` of length <= 100"
    await refused_alike(
        api, owner, "/route/upsert",
        {"integration_id": 1, "default": {"channel_ids": [0]}},
        lambda conn, actor: routes.upsert(
            conn, actor, integration_id=1, cases=None, sections=None, version=None,
            default=routes.RouteDefault(channel_ids=[0])))


async def test_a_noise_rule_past_its_limits(api: Api, owner: Person) -> None:
    made = await api.call("/channel/create", {"channel_name": "Checkout"}, key=owner.key)
    channel_id = made.data["channel_id"]
    drop = {"channel_id": channel_id, "filters": [[{"key": "title", "oper": "IN",
                                                    "vals": ["noise"]}]]}
    said = await refused_alike(
        api, owner, "/channel/unsubscribe/rule/create", {**drop, "rule_name": "r" * 40},
        lambda conn, actor: noise.DROP_RULES.create(
            conn, actor, channel_id=channel_id, rule_name="r" * 40, description="",
            priority=0, config={}))
    assert said == "Invalid parameter rule_name: Expected `str` of length <= 39"
    await refused_alike(
        api, owner, "/channel/unsubscribe/rule/create",
        {**drop, "rule_name": "Drop", "priority": 1_000_001},
        lambda conn, actor: noise.DROP_RULES.create(
            conn, actor, channel_id=channel_id, rule_name="Drop", description="",
            priority=1_000_001, config={}))
    rule_id = "0" * 24
    await refused_alike(
        api, owner, "/channel/unsubscribe/rule/update",
        {"channel_id": channel_id, "rule_id": rule_id, "rule_name": "Drop",
         "description": "d" * 501},
        lambda conn, actor: noise.DROP_RULES.update(
            conn, actor, channel_id=channel_id, rule_id=rule_id, rule_name="Drop",
            description="d" * 501, priority=msgspec.UNSET, config=lambda old: old))
