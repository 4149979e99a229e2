"""/channel/inhibit|silence|unsubscribe/rule/* through the API: records as the reference
describes them, validation naming the path, permissions, other accounts, atomic writes."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from dutyline.db.tables.channel import channel
from dutyline.db.tables.channel_noise import noise_rule
from dutyline.db.tables.platform import audit_log
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.reference import reference

pytestmark = pytest.mark.anyio


def cond(key: str, *vals: str, oper: str = "IN") -> dict[str, Any]:
    return {"key": key, "oper": oper, "vals": list(vals)}


INHIBIT = {
    "rule_name": "Node down hides its services",
    "description": "d",
    "priority": 2,
    "source_filters": [[cond("labels.alertname", "NodeDown")]],
    "target_filters": [[cond("labels.alertname", "ServiceDown", "/Svc.*/")]],
    "equals": ["labels.host"],
    "is_directly_discard": False,
}
SILENCE = {
    "rule_name": "Maintenance",
    "time_filter": {"start_time": 1_700_000_000, "end_time": 1_900_000_000},
    "filters": [[cond("labels.env", "staging")]],
}
DROP = {"rule_name": "No test alerts", "filters": [[cond("labels.env", "test", "dev*")]]}


async def _channel(api: Api, who: Person, name: str = "Payments") -> int:
    reply = await api.call("/channel/create", {"channel_name": name}, key=who.key)
    assert reply.status == 200, reply.body
    return int(reply.data["channel_id"])


async def _post(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    return await api.raw("POST", path, params={"app_key": key}, json=body)


async def _rules(api: Api) -> int:
    async with api.runtime.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(noise_rule))).scalar_one())


@pytest.mark.parametrize(("prefix", "body", "item_fields"), [
    ("/channel/inhibit/rule", INHIBIT, {"source_filters", "target_filters", "equals"}),
    ("/channel/silence/rule", SILENCE, {"time_filter", "filters", "is_effective"}),
    ("/channel/unsubscribe/rule", DROP, {"filters"}),
])
async def test_lifecycle_and_reference_shapes(
    api: Api, owner: Person, prefix: str, body: dict[str, Any], item_fields: set[str]
) -> None:
    channel_id = await _channel(api, owner)
    created = check(f"{prefix}/create",
                    await _post(api, f"{prefix}/create", {"channel_id": channel_id, **body},
                                owner.key))
    rule_id = created["data"]["rule_id"]
    assert created["data"]["rule_name"] == body["rule_name"]

    listed = check(f"{prefix}/list", await _post(api, f"{prefix}/list",
                                                 {"channel_id": channel_id}, owner.key))
    (item,) = listed["data"]["items"]
    assert item_fields <= set(item)
    assert item["rule_id"] == rule_id and item["status"] == "enabled"
    assert item["account_id"] == owner.account_id and item["channel_id"] == channel_id
    assert item["updated_by"] == owner.person_id and item["dropped_cnt"] == 0
    for name in item_fields & set(body):
        assert item[name] == body[name]

    ids = {"channel_id": channel_id, "rule_id": rule_id}
    for _ in range(2):  # idempotent
        check(f"{prefix}/disable", await _post(api, f"{prefix}/disable", ids, owner.key))
    info = await api.call(f"{prefix}/info", ids, key=owner.key)
    assert info.data["status"] == "disabled"
    if "is_effective" in item:
        assert item["is_effective"] is True and info.data["is_effective"] is False
    check(f"{prefix}/enable", await _post(api, f"{prefix}/enable", ids, owner.key))

    changed = {**body, "rule_name": "Renamed", "description": "new"}
    check(f"{prefix}/update", await _post(api, f"{prefix}/update", {**ids, **changed},
                                          owner.key))
    info = await api.call(f"{prefix}/info", ids, key=owner.key)
    assert info.data["rule_name"] == "Renamed" and info.data["status"] == "enabled"

    check(f"{prefix}/delete", await _post(api, f"{prefix}/delete", ids, owner.key))
    gone = await api.call(f"{prefix}/info", ids, key=owner.key)
    assert gone.status == 400 and gone.code == "ResourceNotFound"
    again = await api.call(f"{prefix}/delete", ids, key=owner.key)
    assert again.code == "ResourceNotFound"


async def test_writes_are_audited_and_bump_the_channel_version(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)

    async def version() -> int:
        async with api.runtime.db.connect() as conn:
            return int((await conn.execute(select(channel.c.noise_version).where(
                channel.c.channel_id == channel_id))).scalar_one())

    before = await version()
    created = await api.call("/channel/inhibit/rule/create", {"channel_id": channel_id,
                                                              **INHIBIT}, key=owner.key)
    rule_id = created.data["rule_id"]
    await api.call("/channel/inhibit/rule/disable", {"channel_id": channel_id,
                                                     "rule_id": rule_id}, key=owner.key)
    assert await version() == before + 2
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.account_id == owner.account_id))).all()
    operations = {r.operation for r in rows}
    assert {"channel.inhibit.rule.create", "channel.inhibit.rule.disable"} <= operations
    assert any(rule_id in r.target_ids for r in rows
               if r.operation == "channel.inhibit.rule.disable")


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/channel/inhibit/rule/create",
     {**INHIBIT, "target_filters": [[cond("a", "x")], [cond("b", "ok", "/a(/")]]},
     "target_filters[1][0].vals[1]"),
    ("/channel/inhibit/rule/create", {**INHIBIT, "source_filters": [[cond("a")]]},
     "source_filters[0][0].vals"),
    ("/channel/inhibit/rule/create", {**INHIBIT, "source_filters": []}, "source_filters"),
    ("/channel/inhibit/rule/create", {**INHIBIT, "equals": ["labels."]}, "equals[0]"),
    ("/channel/inhibit/rule/create",
     {**INHIBIT, "source_filters": [[cond("a", "x")] * 10_000]}, "source_filters[0]"),
    ("/channel/inhibit/rule/create",
     {**INHIBIT, "source_filters": [[cond("a", "x")]] * 10_000}, "source_filters"),
    ("/channel/silence/rule/create", {**SILENCE, "filters": [[cond("a", "cidr:1.2.3/99")]]},
     "filters[0][0].vals[0]"),
    ("/channel/silence/rule/create", {"rule_name": "x", "filters": SILENCE["filters"]},
     "time_filter"),
    ("/channel/silence/rule/create",
     {"rule_name": "x", "filters": SILENCE["filters"],
      "time_filters": [{"start": "09:00", "end": "25:00"}]}, "time_filters[0].end"),
    ("/channel/silence/rule/create",
     {**SILENCE, "time_filter": {"start_time": 5, "end_time": 4}}, "time_filter.end_time"),
    ("/channel/unsubscribe/rule/create", {**DROP, "filters": [[cond("a", "num:gt:x")]]},
     "filters[0][0].vals[0]"),
    ("/channel/unsubscribe/rule/create", {**DROP, "filters": [[cond("a", "x", oper="EQ")]]},
     "filters[0][0].oper"),
])
async def test_bad_input_is_a_400_naming_the_path_and_writes_nothing(
    api: Api, owner: Person, path: str, body: dict[str, Any], field: str
) -> None:
    channel_id = await _channel(api, owner)
    reply = await api.call(path, {"channel_id": channel_id, **body}, key=owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert field in reply.message
    assert await _rules(api) == 0


async def test_update_with_a_bad_filter_changes_nothing(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    created = await api.call("/channel/unsubscribe/rule/create",
                             {"channel_id": channel_id, **DROP}, key=owner.key)
    ids = {"channel_id": channel_id, "rule_id": created.data["rule_id"]}
    bad = await api.call("/channel/unsubscribe/rule/update",
                         {**ids, "rule_name": "new", "filters": [[cond("a")]]}, key=owner.key)
    assert bad.code == "InvalidParameter"
    info = await api.call("/channel/unsubscribe/rule/info", ids, key=owner.key)
    assert info.data["rule_name"] == DROP["rule_name"]
    assert info.data["filters"] == DROP["filters"]


async def test_unicode_labels_and_values_round_trip(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    filters = [[cond("labels.région", "é-ouest", "/数据库.*/"), cond("labels.k8s.io/app", "ü*")]]
    created = await api.call("/channel/unsubscribe/rule/create",
                             {"channel_id": channel_id, "rule_name": "Ünïcode 规则",
                              "filters": filters}, key=owner.key)
    assert created.status == 200, created.body
    info = await api.call("/channel/unsubscribe/rule/info",
                          {"channel_id": channel_id, "rule_id": created.data["rule_id"]},
                          key=owner.key)
    assert info.data["filters"] == filters and info.data["rule_name"] == "Ünïcode 规则"


async def test_other_accounts_rules_and_channels_are_not_found(
    api: Api, owner: Person, other_owner: Person
) -> None:
    channel_id = await _channel(api, owner)
    created = await api.call("/channel/inhibit/rule/create", {"channel_id": channel_id,
                                                              **INHIBIT}, key=owner.key)
    ids = {"channel_id": channel_id, "rule_id": created.data["rule_id"]}
    theirs = await _channel(api, other_owner, "Theirs")
    for path in ("info", "disable", "enable", "delete"):
        reply = await api.call(f"/channel/inhibit/rule/{path}", ids, key=other_owner.key)
        assert reply.code == "ResourceNotFound", (path, reply.body)
        # their own channel with our rule id: not found either
        reply = await api.call(f"/channel/inhibit/rule/{path}",
                               {**ids, "channel_id": theirs}, key=other_owner.key)
        assert reply.code == "ResourceNotFound", (path, reply.body)
    listed = await api.call("/channel/inhibit/rule/list", {"channel_id": channel_id},
                            key=other_owner.key)
    assert listed.code == "ResourceNotFound"
    update = await api.call("/channel/inhibit/rule/update", {**ids, **INHIBIT,
                                                             "rule_name": "hijack"},
                            key=other_owner.key)
    assert update.code == "ResourceNotFound"
    info = await api.call("/channel/inhibit/rule/info", ids, key=owner.key)
    assert info.data["status"] == "enabled" and info.data["rule_name"] == INHIBIT["rule_name"]


async def test_permissions(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    created = await api.call("/channel/silence/rule/create", {"channel_id": channel_id,
                                                              **SILENCE}, key=owner.key)
    ids = {"channel_id": channel_id, "rule_id": created.data["rule_id"]}
    viewer = await new_member(api, owner, name="Viewer")  # channel_view, no channel_manage
    nobody = await new_member(api, owner, name="Nobody", builtin=None)
    listed = await api.call("/channel/silence/rule/list", {"channel_id": channel_id},
                            key=viewer.key)
    assert listed.status == 200 and len(listed.data["items"]) == 1
    for path, body in (("create", {"channel_id": channel_id, **SILENCE}), ("disable", ids),
                       ("delete", ids), ("update", {**ids, **SILENCE})):
        reply = await api.call(f"/channel/silence/rule/{path}", body, key=viewer.key)
        assert reply.status == 403, (path, reply.body)
    reply = await api.call("/channel/silence/rule/list", {"channel_id": channel_id},
                           key=nobody.key)
    assert reply.status == 403


async def test_recurring_silence_record(api: Api, owner: Person) -> None:
    channel_id = await _channel(api, owner)
    body = {"rule_name": "Nightly", "filters": SILENCE["filters"],
            "time_filters": [{"start": "00:00", "end": "24:00", "repeat": []}]}
    created = await api.call("/channel/silence/rule/create", {"channel_id": channel_id,
                                                              **body}, key=owner.key)
    assert created.status == 200, created.body
    info = await api.call("/channel/silence/rule/info",
                          {"channel_id": channel_id, "rule_id": created.data["rule_id"]},
                          key=owner.key)
    check("/channel/silence/rule/list", await _post(
        api, "/channel/silence/rule/list", {"channel_id": channel_id}, owner.key))
    assert info.data["from_incident_id"] == "0" * 24
    assert info.data["time_filters"] == [{"start": "00:00", "end": "24:00", "repeat": []}]
    assert info.data["is_effective"] is True


def _reference_example(path: str) -> dict[str, Any]:
    """The request example the reference gives for `path`."""
    body = reference()["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return dict(body["example"])


@pytest.mark.parametrize(("prefix", "body", "kept"), [
    ("/channel/inhibit/rule", INHIBIT,
     ("source_filters", "target_filters", "priority", "description", "is_directly_discard")),
    ("/channel/silence/rule", {**SILENCE, "priority": 3, "description": "d",
                               "is_directly_discard": True},
     ("time_filter", "filters", "priority", "description", "is_directly_discard")),
    ("/channel/unsubscribe/rule", {**DROP, "priority": 4, "description": "d"},
     ("filters", "priority", "description")),
])
async def test_update_with_the_reference_example_keeps_what_it_leaves_out(
    api: Api, owner: Person, prefix: str, body: dict[str, Any], kept: tuple[str, ...]
) -> None:
    """The reference's own update examples leave out most settings (source_filters and
    target_filters on inhibit rules): a partial update, the rest kept as stored."""
    channel_id = await _channel(api, owner)
    created = await api.call(f"{prefix}/create", {"channel_id": channel_id, **body},
                             key=owner.key)
    ids = {"channel_id": channel_id, "rule_id": created.data["rule_id"]}
    before = (await api.call(f"{prefix}/info", ids, key=owner.key)).data
    example = _reference_example(f"{prefix}/update")
    sent = {k: v for k, v in example.items() if k not in ("channel_id", "rule_id")}
    updated = check(f"{prefix}/update", await _post(api, f"{prefix}/update", {**example, **ids},
                                                    owner.key))
    assert updated["data"] is None or updated["data"] == {}
    after = (await api.call(f"{prefix}/info", ids, key=owner.key)).data
    for name, value in sent.items():
        assert after[name] == value, name
    for name in kept:
        if name not in sent:
            assert after[name] == before[name], name


@pytest.mark.parametrize(("prefix", "body", "field", "value"), [
    ("/channel/inhibit/rule", INHIBIT, "source_filters", []),
    ("/channel/inhibit/rule", INHIBIT, "target_filters", None),
    ("/channel/silence/rule", SILENCE, "filters", [[]]),
    ("/channel/unsubscribe/rule", DROP, "filters", []),
])
async def test_update_still_refuses_an_explicit_match_everything_filter(
    api: Api, owner: Person, prefix: str, body: dict[str, Any], field: str, value: Any
) -> None:
    channel_id = await _channel(api, owner)
    created = await api.call(f"{prefix}/create", {"channel_id": channel_id, **body},
                             key=owner.key)
    ids = {"channel_id": channel_id, "rule_id": created.data["rule_id"]}
    fields = {k: body[k] for k in ("rule_name", "equals") if k in body}
    reply = await api.call(f"{prefix}/update", {**ids, **fields, field: value}, key=owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert field in reply.message
    info = await api.call(f"{prefix}/info", ids, key=owner.key)
    assert info.data[field] == body[field]


async def test_silence_update_keeps_a_recurring_window_it_does_not_name(
    api: Api, owner: Person
) -> None:
    channel_id = await _channel(api, owner)
    recurring = [{"start": "01:00", "end": "02:00", "repeat": [1, 2]}]
    created = await api.call("/channel/silence/rule/create", {
        "channel_id": channel_id, "rule_name": "Nightly", "filters": SILENCE["filters"],
        "time_filters": recurring}, key=owner.key)
    ids = {"channel_id": channel_id, "rule_id": created.data["rule_id"]}
    reply = await api.call("/channel/silence/rule/update",
                           {**ids, "rule_name": "Nightly 2"}, key=owner.key)
    assert reply.status == 200, reply.body
    info = (await api.call("/channel/silence/rule/info", ids, key=owner.key)).data
    assert info["time_filters"] == recurring and info["filters"] == SILENCE["filters"]
    assert info["rule_name"] == "Nightly 2"
