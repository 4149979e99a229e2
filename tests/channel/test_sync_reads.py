"""The channel and escalation rule reads are sync read operations (api/operation.py), and
their sync services, which the console, pages and jobs call too, answer as the
operations do: same records, same refusals, same not-found for other accounts' ids."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW, INTEGRATION_VIEW
from dutyline.channel import service as channels
from dutyline.channel.integration import service as integrations
from dutyline.channel.noise import service as noise
from dutyline.channel.pipeline import service as pipelines
from dutyline.channel.route import service as routes
from dutyline.dispatch import service as escalation
from dutyline.dispatch.notify_rule import service as notify_rules
from dutyline.domains import all_routers
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.sync import in_sync

pytestmark = pytest.mark.anyio

SYNC_READS = (
    "/channel/info", "/channel/infos", "/channel/list",
    "/integration/info", "/integration/list",
    "/channel/inhibit/rule/list", "/channel/inhibit/rule/info",
    "/channel/silence/rule/list", "/channel/silence/rule/info",
    "/channel/unsubscribe/rule/list", "/channel/unsubscribe/rule/info",
    "/alert/pipeline/info", "/alert/pipeline/list", "/route/info", "/route/list",
    "/channel/escalate/rule/info", "/channel/escalate/rule/list",
    "/channel/notify/rule/list",
)


def test_the_reads_are_sync_operations() -> None:
    ops = {op.path: op for router in all_routers() for op in router.operations}
    assert [p for p in SYNC_READS if not ops[p].sync] == []


def _actor(api: Api, who: Person, *permissions: str) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def _ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


def _plain(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


async def test_the_services_answer_as_the_operations(api: Api, owner: Person,
                                                        other_owner: Person) -> None:
    channel_id = int((await _ok(api, "/channel/create", {"channel_name": "Payments"},
                                owner))["channel_id"])
    integration_id = int((await _ok(api, "/integration/create", {
        "channel_id": channel_id, "integration_name": "std"}, owner))["integration_id"])
    await _ok(api, "/alert/pipeline/upsert", {"integration_id": integration_id, "rules": []},
              owner)
    silence_id = (await _ok(api, "/channel/silence/rule/create", {
        "channel_id": channel_id, "rule_name": "Nightly",
        "filters": [[{"key": "labels.env", "oper": "IN", "vals": ["staging"]}]],
        "time_filters": [{"start": "00:00", "end": "24:00", "repeat": []}]}, owner))["rule_id"]
    in_channel = {"channel_id": channel_id}
    expected = {
        "channel": await _ok(api, "/channel/info", in_channel, owner),
        "channels": await _ok(api, "/channel/list", {}, owner),
        "integrations": await _ok(api, "/integration/list", in_channel, owner),
        "silences": await _ok(api, "/channel/silence/rule/list", in_channel, owner),
        "silence": await _ok(api, "/channel/silence/rule/info",
                             {**in_channel, "rule_id": silence_id}, owner),
        "pipeline": await _ok(api, "/alert/pipeline/info", {"integration_id": integration_id},
                              owner),
        "routes": await _ok(api, "/route/list", {"integration_ids": [integration_id]}, owner),
        "escalations": await _ok(api, "/channel/escalate/rule/list", in_channel, owner),
        "notify": await _ok(api, "/channel/notify/rule/list", in_channel, owner),
    }
    actor = _actor(api, owner, CHANNEL_VIEW, INTEGRATION_VIEW)
    async with api.runtime.db.transaction(write=False) as conn:
        total, items = await in_sync(conn, channels.list_channels_sync,
                                     actor, q=channels.ChannelQuery(),
                                                    offset=0, limit=20)
        got = {
            "channel": await in_sync(conn, channels.channel_info_sync,
                                     actor, channel_id=channel_id),
            "channels": {"items": items, "total": total, "has_next_page": False},
            "integrations": (await in_sync(
                conn, integrations.list_integrations_sync, actor, channel_id=channel_id,
                offset=0, limit=20))[1],
            "silences": {"items": await in_sync(conn, noise.list_rules_sync,
                                                actor, kind=noise.SILENCE,
                                                         channel_id=channel_id)},
            "silence": await in_sync(conn, noise.rule_info_sync, actor, kind=noise.SILENCE,
                                             channel_id=channel_id, rule_id=silence_id),
            "pipeline": await in_sync(conn, pipelines.info_sync,
                                      actor, integration_id=integration_id),
            "routes": {"items": await in_sync(conn, routes.list_routes_sync, actor,
                                                         integration_ids=[integration_id])},
            "escalations": {"items": await in_sync(conn, escalation.list_rules_sync, actor,
                                                                 channel_id=channel_id)},
            "notify": {"items": await in_sync(conn, notify_rules.list_rules_sync, actor,
                                                              channel_id=channel_id)},
        }
    expected["integrations"] = expected["integrations"]["items"]
    assert _plain(got) == expected
    assert expected["silence"]["is_effective"] is True

    stranger = _actor(api, other_owner, CHANNEL_VIEW, INTEGRATION_VIEW)
    nobody = _actor(api, owner)
    async with api.runtime.db.transaction(write=False) as conn:
        with pytest.raises(errors.ResourceNotFound):
            await in_sync(conn, channels.channel_info_sync, stranger, channel_id=channel_id)
        with pytest.raises(errors.ResourceNotFound):
            await in_sync(conn, noise.list_rules_sync,
                          stranger, kind=noise.SILENCE, channel_id=channel_id)
        with pytest.raises(errors.ResourceNotFound):
            await in_sync(conn, integrations.integration_info_sync,
                          stranger, integration_id=integration_id)
        with pytest.raises(errors.AccessDenied):
            await in_sync(conn, escalation.rule_info_sync,
                          nobody, channel_id=channel_id, rule_id="0" * 24)
        assert await in_sync(conn, channels.channel_infos_sync,
                             stranger, channel_ids=[channel_id]) == []
