"""/monit/rule/move, /monit/rule/audits, /monit/rule/audit/detail, /monit/rule/dstypes and
/monit/rule/counter/*: what they return, what is stored, scope, permissions, bad input."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dutyline.config import Settings
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.monit.support import channel, create_rule, datasource, rule_body, rule_info

pytestmark = pytest.mark.anyio
PROM = "http://127.0.0.1:9"  # never queried: these rules are not evaluated here


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


async def _setup(api: Api) -> tuple[Person, int, int]:
    owner = await new_account(api, "Acme")
    return owner, await channel(api, owner), await datasource(api, owner, PROM)


async def _audits(api: Api, owner: Person, rule_id: int) -> list[dict[str, Any]]:
    reply = await api.call("/monit/rule/audits", {"id": rule_id}, key=owner.key)
    assert reply.status == 200, reply.body
    return list(reply.data)


async def test_every_change_leaves_a_snapshot_in_the_trail(api: Api, clock: FakeClock) -> None:
    owner, channel_id, ds_id = await _setup(api)
    key = owner.key
    rule_id = await create_rule(api, owner, rule_body(ds_id, channel_id))
    clock.advance(60)
    info = await rule_info(api, owner, rule_id)
    assert (await api.call("/monit/rule/update", {**info, "name": "Renamed"},
                           key=key)).status == 200
    clock.advance(60)
    await api.call("/monit/rule/update/fields", {"ids": [rule_id], "fields": ["enabled"],
                                                 "enabled": False}, key=key)
    # A refused change stores nothing.
    bad = await api.call("/monit/rule/update", {**info, "cron_pattern": "nope"}, key=key)
    assert bad.status == 400
    clock.advance(60)
    await api.call("/monit/rule/move", {"ids": [rule_id], "dest_folder_id": 9}, key=key)
    clock.advance(60)
    assert (await api.call("/monit/rule/delete", {"id": rule_id}, key=key)).status == 200
    # The trail outlives the rule, newest first, without the snapshots.
    trail = await _audits(api, owner, rule_id)
    assert [a["action"] for a in trail] == ["delete", "move", "update", "update", "create"]
    assert all("content" not in a for a in trail)
    assert {a["alert_rule_id"] for a in trail} == {rule_id}
    assert {(a["creator_id"], a["account_id"]) for a in trail} == {
        (owner.person_id, owner.account_id)}
    assert trail[0]["created_at"] - trail[-1]["created_at"] == 240
    # Each snapshot is the rule as it stood after that change.
    snapshots = []
    for entry in trail:
        detail = await api.call("/monit/rule/audit/detail", {"id": entry["id"]}, key=key)
        assert detail.status == 200 and detail.data["action"] == entry["action"]
        snapshots.append(json.loads(detail.data["content"]))
    delete, move, fields, update, create = snapshots
    assert create["name"] == "Target down" and create["enabled"] is True
    assert update["name"] == "Renamed" and update["enabled"] is True
    assert fields["enabled"] is False and fields["folder_id"] == 0
    assert move["folder_id"] == 9 and delete["folder_id"] == 9
    assert create["rule_configs"]["check_threshold"]["critical"] == "$A > 0"
    assert "eval_status" not in create


async def test_import_is_recorded_and_counted(api: Api, clock: FakeClock) -> None:
    owner, channel_id, ds_id = await _setup(api)
    first = await create_rule(api, owner, rule_body(ds_id, channel_id))
    exported = (await api.call("/monit/rule/export", {"ids": [first]}, key=owner.key)).data
    clock.advance(30)
    imported = await api.call("/monit/rule/import",
                              [{**exported[0], "name": "Copy"}, exported[0]], key=owner.key)
    assert [m["message"] == "" for m in imported.data] == [True, False]  # 2nd: name taken
    rules = (await api.call("/monit/rule/list/basic", {}, key=owner.key)).data
    copy = next(r["id"] for r in rules if r["name"] == "Copy")
    assert [a["action"] for a in await _audits(api, owner, copy)] == ["import"]
    clock.advance(30)
    await api.call("/monit/rule/delete/batch", {"ids": [first, copy]}, key=owner.key)
    total = (await api.call("/monit/rule/counter/total", {}, key=owner.key)).data
    start = int(clock.now()) - 60
    assert [(c["num"], c["clock"]) for c in total] == [(1, start), (2, start + 30),
                                                       (0, start + 60)]
    assert {c["account_id"] for c in total} == {owner.account_id}


async def test_several_changes_in_one_second_keep_one_sample(api: Api) -> None:
    owner, channel_id, ds_id = await _setup(api)
    await create_rule(api, owner, rule_body(ds_id, channel_id, name="a"))
    await create_rule(api, owner, rule_body(ds_id, channel_id, name="b"))
    total = (await api.call("/monit/rule/counter/total", {}, key=owner.key)).data
    assert [c["num"] for c in total] == [2]


async def test_audits_are_scoped_and_unknown_ids_are_400(api: Api) -> None:
    owner, channel_id, ds_id = await _setup(api)
    other = await new_account(api, "Globex")
    rule_id = await create_rule(api, owner, rule_body(ds_id, channel_id))
    (entry,) = await _audits(api, owner, rule_id)
    refused = [
        (other, "/monit/rule/audits", {"id": rule_id}),  # another account's rule
        (other, "/monit/rule/audit/detail", {"id": entry["id"]}),  # ... and its record
        (owner, "/monit/rule/audits", {"id": 424242}),  # no such rule
        (owner, "/monit/rule/audit/detail", {"id": rule_id}),  # a rule id, not a record's
    ]
    for person, path, body in refused:
        reply = await api.call(path, body, key=person.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", (path, body)
    for path in ("/monit/rule/audits", "/monit/rule/audit/detail"):
        for body in ({}, {"id": 0}, {"id": "x"}):
            reply = await api.call(path, body, key=owner.key)
            assert reply.status == 400 and reply.code == "InvalidParameter", (path, body)


async def test_move(api: Api) -> None:
    owner, channel_id, ds_id = await _setup(api)
    key = owner.key
    a = await create_rule(api, owner, rule_body(ds_id, channel_id, name="a"))
    b = await create_rule(api, owner, rule_body(ds_id, channel_id, name="b"))
    # "a" already lives in folder 5: the second "a" stays put, reported by name.
    await api.call("/monit/rule/move", {"ids": [a], "dest_folder_id": 5}, key=key)
    a2 = await create_rule(api, owner, rule_body(ds_id, channel_id, name="a"))
    moved = await api.call("/monit/rule/move", {"ids": [a2, b], "dest_folder_id": 5}, key=key)
    assert moved.status == 200
    assert moved.data[0]["name"] == "a" and moved.data[0]["message"]
    assert moved.data[1] == {"name": "b", "message": ""}
    assert (await rule_info(api, owner, a2))["folder_id"] == 0
    assert (await rule_info(api, owner, b))["folder_id"] == 5
    # An unknown or another account's id: 400, nothing moved.
    other = await new_account(api, "Globex")
    theirs = await api.call("/monit/rule/move", {"ids": [b], "dest_folder_id": 0},
                            key=other.key)
    assert theirs.status == 400 and theirs.code == "ResourceNotFound"
    unknown = await api.call("/monit/rule/move", {"ids": [b, 424242], "dest_folder_id": 0},
                             key=key)
    assert unknown.status == 400 and unknown.code == "ResourceNotFound"
    assert (await rule_info(api, owner, b))["folder_id"] == 5
    for body in ({"ids": [], "dest_folder_id": 1}, {"ids": [b]}, {"ids": [b],
                                                                  "dest_folder_id": -1}):
        reply = await api.call("/monit/rule/move", body, key=key)
        assert reply.status == 400 and reply.code == "InvalidParameter", body
    status = (await api.call("/monit/rule/counter/status", {}, key=key)).data
    assert [(s["folder_id"], s["rule_total"]) for s in status] == [(0, 1), (5, 2)]
    nodes = (await api.call("/monit/rule/counter/node", {}, key=key)).data
    assert nodes == {"0": 1, "5": 2}


async def test_counter_channel_and_dstypes(api: Api) -> None:
    owner, prod, ds_id = await _setup(api)
    ops = await channel(api, owner, "Ops")
    await create_rule(api, owner, rule_body(ds_id, prod, name="a"))
    await create_rule(api, owner, {**rule_body(ds_id, prod, name="b"),
                                   "channel_ids": [prod, ops]})
    await create_rule(api, owner, {**rule_body(ds_id, prod, name="c"), "channel_ids": []})
    counts = (await api.call("/monit/rule/counter/channel", {}, key=owner.key)).data
    assert counts == {"Prod": 2, "Ops": 1}
    other = await new_account(api, "Globex")
    assert (await api.call("/monit/rule/counter/channel", {}, key=other.key)).data == {}
    assert (await api.call("/monit/rule/counter/total", {}, key=other.key)).data == []
    assert (await api.call("/monit/rule/counter/node", {}, key=other.key)).data == {}
    types = (await api.call("/monit/rule/dstypes", {}, key=owner.key)).data
    assert types == [{"id": 1, "name": "Prometheus", "ident": "prometheus", "account_id": 0,
                      "weight": 100}]
    extra = await api.call("/monit/rule/dstypes", {"ds": 1}, key=owner.key)
    assert extra.status == 400 and extra.code == "InvalidParameter"


async def test_the_new_operations_need_the_alert_rule_permission(api: Api) -> None:
    owner, channel_id, ds_id = await _setup(api)
    rule_id = await create_rule(api, owner, rule_body(ds_id, channel_id))
    member = await new_member(api, owner)
    calls = [("/monit/rule/move", {"ids": [rule_id], "dest_folder_id": 3}),
             ("/monit/rule/audits", {"id": rule_id}), ("/monit/rule/audit/detail", {"id": 1}),
             ("/monit/rule/dstypes", {})] + [
        (f"/monit/rule/counter/{c}", {}) for c in ("total", "status", "channel", "node")]
    for path, body in calls:
        reply = await api.call(path, body, key=member.key)
        assert reply.status == 403 and reply.code == "AccessDenied", path
    assert (await rule_info(api, owner, rule_id))["folder_id"] == 0
