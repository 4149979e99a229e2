"""POST /event/push/alert/standard: keys, validation, envelope, rate limits, and the alert
semantics (update, new, recovery, events)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import pytest

from dutyline.config import Settings
from dutyline.incident.ingest.service import derive_alert_key
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push, wire
from tests.incident.ingest_support import (
    alert_event,
    alerts_of,
    count,
    events_of,
    incident,
    incidents_of,
)

pytestmark = pytest.mark.anyio

Make = Callable[..., Awaitable[Wired]]


async def test_push_answers_the_envelope_with_the_alert_key(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration()
    r = await push(capi, w.key, event(key="db-1"))
    assert r.status == 200
    assert r.body == {"request_id": r.body["request_id"], "data": {"alert_key": "db-1"}}
    assert r.headers["Service-Request-Id"] == r.body["request_id"]
    assert r.headers["X-RateLimit-Limit"]
    (a,) = await alerts_of(capi, w.integration_id)
    assert (a.alert_key, a.alert_status, a.alert_severity, a.event_cnt, a.end_time) == (
        "db-1", "Critical", "Critical", 1, 0)
    assert a.account_id == w.account.account_id and a.channel_id == w.channel_id
    assert a.incident_id


@pytest.mark.parametrize("key", [None, "", "nope", "di_" + "x" * 40, "k" * 300])
async def test_wrong_or_missing_key_is_401_and_stores_nothing(
    capi: Api, channel_with_integration: Make, key: str | None
) -> None:
    w = await channel_with_integration()
    r = await push(capi, key, event())
    assert (r.status, r.code) == (401, "Unauthorized")
    assert "integration_key" in r.message
    assert r.headers["Service-Request-Id"] == r.body["request_id"]
    assert await count(capi, alert_event) == 0
    assert await alerts_of(capi, w.integration_id) == []


async def test_deleted_integration_key_is_401_and_stores_nothing(
    capi: Api, channel_with_integration: Make, acme: Person
) -> None:
    w = await channel_with_integration()
    assert (await push(capi, w.key, event())).status == 200
    deleted = await capi.call("/integration/delete", {"integration_id": w.integration_id},
                              key=acme.key)
    assert deleted.status == 200, deleted.body
    before = await count(capi, alert_event)
    r = await push(capi, w.key, event(key="other"))
    assert (r.status, r.code) == (401, "Unauthorized")
    assert await count(capi, alert_event) == before


async def test_disabled_channel_is_a_clear_400(
    capi: Api, channel_with_integration: Make, acme: Person
) -> None:
    w = await channel_with_integration()
    off = await capi.call("/channel/disable", {"channel_id": w.channel_id}, key=acme.key)
    assert off.status == 200, off.body
    r = await push(capi, w.key, event())
    assert (r.status, r.code) == (400, "BadRequest")
    assert f"Channel {w.channel_id} is disabled" in r.message
    zh = await push(capi, w.key, event(), headers={"Accept-Language": "zh-CN"})
    assert "不接收告警" in zh.message
    assert await count(capi, alert_event) == 0


async def test_a_remembered_key_of_a_disabled_channel_stores_nothing(
    capi: Api, channel_with_integration: Make, acme: Person
) -> None:
    """The process remembers a key that pushed; the channel's state is still read with
    every push, in the transaction that would store it."""
    w = await channel_with_integration()
    assert (await push(capi, w.key, event(key="a"))).status == 200
    off = await capi.call("/channel/disable", {"channel_id": w.channel_id}, key=acme.key)
    assert off.status == 200, off.body
    before = await count(capi, alert_event)
    r = await push(capi, w.key, event(key="b"))
    assert (r.status, r.code) == (400, "BadRequest")
    assert f"Channel {w.channel_id} is disabled" in r.message
    assert await count(capi, alert_event) == before
    on = await capi.call("/channel/enable", {"channel_id": w.channel_id}, key=acme.key)
    assert on.status == 200, on.body
    assert (await push(capi, w.key, event(key="b"))).status == 200


async def test_a_remembered_key_revoked_answers_401_before_judging_the_body(
    capi: Api, channel_with_integration: Make, acme: Person
) -> None:
    w = await channel_with_integration()
    assert (await push(capi, w.key, event())).status == 200
    deleted = await capi.call("/integration/delete", {"integration_id": w.integration_id},
                              key=acme.key)
    assert deleted.status == 200, deleted.body
    before = await count(capi, alert_event)
    for body in ({"title_rule": "x"}, event(key="late"), event(key="later")):
        r = await push(capi, w.key, body)
        assert (r.status, r.code) == (401, "Unauthorized"), r.body
    assert await count(capi, alert_event) == before


async def test_deleted_channel_keys_stop_working(
    capi: Api, channel_with_integration: Make, acme: Person
) -> None:
    w = await channel_with_integration()
    gone = await capi.call("/channel/delete", {"channel_id": w.channel_id}, key=acme.key)
    assert gone.status == 200, gone.body
    r = await push(capi, w.key, event())
    assert r.status in (400, 401) and await count(capi, alert_event) == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"event_status": "Critical"}, "title_rule"),
        ({"title_rule": "x"}, "event_status"),
        ({"title_rule": "x", "event_status": "Fatal"}, "event_status"),
        ({"title_rule": "", "event_status": "Info"}, "title_rule"),
        ({"title_rule": "   ", "event_status": "Info"}, "title_rule"),
        ({"title_rule": "x" * 513, "event_status": "Info"}, "title_rule"),
        ({"title_rule": "x", "event_status": "Info", "alert_key": "k" * 256}, "alert_key"),
        ({"title_rule": "x", "event_status": "Info",
          "labels": {f"l{i}": "v" for i in range(51)}}, "labels"),
        ({"title_rule": "x", "event_status": "Info", "labels": {"a": 1}}, "labels"),
        ({"title_rule": "x", "event_status": "Info", "labels": {"": "v"}}, "labels"),
        ({"title_rule": "x", "event_status": "Info", "labels": {"k" * 129: "v"}}, "labels"),
        ({"title_rule": "x", "event_status": "Info", "labels": {"a": "v" * 2049}}, "labels"),
        ({"title_rule": "x", "event_status": "Info", "images": [{"alt": "no src"}]},
         "images[0].src"),
        ({"title_rule": "x\u0000y", "event_status": "Info"}, "title_rule"),
    ],
)
async def test_bad_bodies_are_400_naming_the_field(
    capi: Api, channel_with_integration: Make, body: dict[str, object], field: str
) -> None:
    w = await channel_with_integration()
    r = await push(capi, w.key, body)
    assert (r.status, r.code) == (400, "InvalidParameter"), r.body
    assert field in r.message
    assert await count(capi, alert_event) == 0


async def test_fifty_labels_are_fine(capi: Api, channel_with_integration: Make) -> None:
    w = await channel_with_integration()
    labels = {f"l{i}": f"{i:02d}" + "v" * 2046 for i in range(50)}
    assert (await push(capi, w.key, event(labels=labels))).status == 200
    stored = await alerts_of(capi, w.integration_id)
    assert len(stored) == 1
    assert json.loads(stored[0].labels) == labels  # every label kept, whole


async def test_content_type_json_and_size_rules_match_the_operation_layer(
    capi: Api, channel_with_integration: Make, settings: Settings
) -> None:
    w = await channel_with_integration()
    r = await push(capi, w.key, None, raw=b'{"title_rule":"x","event_status":"Info"}',
                   headers={"Content-Type": "text/plain"})
    assert (r.status, r.code) == (400, "InvalidContentType")
    r = await push(capi, w.key, None, raw=b"{not json",
                   headers={"Content-Type": "application/json"})
    assert (r.status, r.code) == (400, "InvalidContentType")
    big = b'{"title_rule":"x","event_status":"Info","description":"' + (
        b"a" * settings.max_body_bytes) + b'"}'
    r = await push(capi, w.key, None, raw=big, headers={"Content-Type": "application/json"})
    assert (r.status, r.code) == (413, "EntityTooLarge")
    r = await push(capi, "nope", None, raw=big, headers={"Content-Type": "application/json"})
    assert r.status == 413  # size is checked before anything is looked up
    assert await count(capi, alert_event) == 0


async def test_wrong_method_and_zh_messages(capi: Api, channel_with_integration: Make) -> None:
    w = await channel_with_integration()
    r = await capi.raw("GET", "/event/push/alert/standard", params={"integration_key": w.key})
    assert r.status_code == 405 and r.json()["error"]["code"] == "MethodNotAllowed"
    assert r.headers["Service-Request-Id"]
    zh = await push(capi, "nope", event(), headers={"Accept-Language": "zh-CN"})
    assert zh.message == "integration_key 缺失或无效"


async def test_rate_limited_per_integration(
    settings: Settings, clock: FakeClock
) -> None:
    limited = Settings(**{**settings.__dict__, "rate_limit_per_second": 3,
                          "rate_limit_per_minute": 1000})
    async with make_api(limited, clock=clock) as api:
        from tests.fixtures.accounts import new_account

        acme = await new_account(api, "Acme")
        a = await wire(api, acme, name="A")
        clock.advance(1.01)  # the account's own budget (3/s) is not what this test is about
        b = await wire(api, acme, name="B")
        clock.advance(1.01)
        codes = [(await push(api, a.key, event(key=f"k{i}"))).status for i in range(3)]
        assert codes == [200, 200, 200]
        r = await push(api, a.key, event(key="k9"))
        assert (r.status, r.code) == (429, "RequestTooFrequently")
        assert r.headers["Retry-After"] == "1" and r.headers["X-RateLimit-Remaining"] == "0"
        # Another integration of the same account has its own budget.
        assert (await push(api, b.key, event())).status == 200
        clock.advance(1.01)
        assert (await push(api, a.key, event(key="k9"))).status == 200
        assert len(await alerts_of(api, a.integration_id)) == 4


async def test_same_key_updates_the_active_alert(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration()
    t0 = int(clock.now())
    await push(capi, w.key, event("cpu high", "Warning", labels={"host": "a", "dc": "x"},
                                  description="first", images=[{"src": "http://i/1.png"}]))
    clock.advance(30)
    await push(capi, w.key, event("cpu very high", "Critical", labels={"host": "b"}))
    clock.advance(30)
    await push(capi, w.key, event("cpu high", "Info", description="third"))
    (a,) = await alerts_of(capi, w.integration_id)
    assert a.event_cnt == 3
    assert (a.start_time, a.last_time, a.end_time) == (t0, t0 + 60, 0)
    assert a.alert_severity == "Critical"  # the worst seen while active
    assert a.alert_status == "Info"  # the latest
    assert a.title == "cpu high" and a.description == "third"
    assert a.labels == '{"host":"b","dc":"x"}'
    assert "1.png" in a.images
    (inc,) = await incidents_of(capi, w.channel_id)
    assert (inc.alert_cnt, inc.active_alert_cnt, inc.alert_event_cnt) == (1, 1, 3)
    assert inc.incident_severity == "Critical" and inc.last_time == t0 + 60
    evs = sorted(await events_of(capi, w.integration_id), key=lambda e: e.event_id)
    assert [e.event_status for e in evs] == ["Warning", "Critical", "Info"]
    assert {e.alert_id for e in evs} == {a.alert_id}


async def test_ok_recovers_and_the_next_trigger_starts_a_new_alert(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration()
    await push(capi, w.key, event(status="Warning"))
    clock.advance(10)
    await push(capi, w.key, event(status="Ok"))
    (a,) = await alerts_of(capi, w.integration_id)
    assert (a.end_time, a.alert_status, a.alert_severity, a.event_cnt) == (
        int(clock.now()), "Ok", "Warning", 2)
    clock.advance(10)
    await push(capi, w.key, event(status="Critical"))
    first, second = await alerts_of(capi, w.integration_id)
    assert first.alert_id == a.alert_id and second.end_time == 0
    assert second.alert_severity == "Critical" and second.event_cnt == 1
    assert second.incident_id != first.incident_id  # the first incident closed meanwhile


async def test_ok_for_an_unknown_key_is_only_an_event(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration()
    r = await push(capi, w.key, event(status="Ok", key="never-fired"))
    assert r.data == {"alert_key": "never-fired"}
    assert await alerts_of(capi, w.integration_id) == []
    assert await incidents_of(capi, w.channel_id) == []
    (e,) = await events_of(capi, w.integration_id)
    assert (e.alert_id, e.event_status) == ("", "Ok")


async def test_missing_alert_key_is_derived_from_title_rule_and_labels(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration()
    one = await push(capi, w.key, event(key=None, labels={"b": "2", "a": "1"}))
    two = await push(capi, w.key, event(key=None, labels={"a": "1", "b": "2"}))
    other = await push(capi, w.key, event(key=None, labels={"a": "1", "b": "3"}))
    assert one.data == two.data != other.data
    assert one.data["alert_key"] == derive_alert_key("disk full", {"a": "1", "b": "2"})
    assert len(await alerts_of(capi, w.integration_id)) == 2


async def test_title_rule_placeholders_take_label_values(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration()
    await push(capi, w.key, event("$service::${cluster} $missing", labels={
        "service": "api", "cluster": "eu-1"}))
    (a,) = await alerts_of(capi, w.integration_id)
    assert (a.title, a.title_rule) == ("api::eu-1 $missing", "$service::${cluster} $missing")


async def test_keys_are_per_integration(capi: Api, acme: Person) -> None:
    one = await wire(capi, acme, name="One")
    two = await wire(capi, acme, name="Two")
    await push(capi, one.key, event(key="same"))
    await push(capi, two.key, event(key="same"))
    assert len(await alerts_of(capi, one.integration_id)) == 1
    assert len(await alerts_of(capi, two.integration_id)) == 1
    assert await count(capi, incident) == 2
