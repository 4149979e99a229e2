"""Change events: POST /event/push/change/standard (keys, body, one change per change_key,
its times), /change/list (every field's JSON type, filters, paging, visibility, permission)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from sqlalchemy import func, select

from dutyline.config import Settings
from dutyline.db.tables.incident_change import change_event, change_record
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.incident.change_support import (
    ChangeWire,
    change,
    change_integration,
    push_change,
    wire_changes,
)
from tests.incident.conftest import event, push, wire

pytestmark = pytest.mark.anyio


async def _count(api: Api, table: Any) -> int:
    async with api.runtime.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


async def _listed(api: Api, who: Person, **body: Any) -> dict[str, Any]:
    reply = await api.call("/change/list", body, key=who.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


@pytest.fixture
async def deploys(capi: Api, acme: Person) -> ChangeWire:
    return await wire_changes(capi, acme)


def assert_item_types(item: dict[str, Any]) -> None:
    """The JSON types a client decoding with Go's encoding/json needs (decisions §10)."""
    for name in ("change_id", "title", "description", "type", "status", "change_key", "link"):
        assert type(item[name]) is str, name
    for name in ("channel_id", "creator_id", "start_time", "end_time", "integration_id",
                 "event_cnt", "created_at", "updated_at"):
        assert type(item[name]) is int, name
    assert isinstance(item["labels"], dict)
    assert all(type(k) is str and type(v) is str for k, v in item["labels"].items())
    assert item["change_id"].isdigit()


# --- the push ------------------------------------------------------------------------------

async def test_push_answers_the_change_id_as_a_string_and_stores_the_change(
    capi: Api, clock: FakeClock, acme: Person, deploys: ChangeWire
) -> None:
    r = await push_change(capi, deploys.key, change(
        description="rolling", type="deployment", link="https://ci.example/runs/7",
        labels={"service": "api", "env": "prod"}))
    assert r.status == 200, r.body
    assert set(r.body) == {"request_id", "data"}
    assert r.headers["Service-Request-Id"] == r.body["request_id"]
    assert r.headers["X-RateLimit-Limit"]
    data = r.body["data"]
    assert set(data) == {"change_id", "change_key"}
    assert type(data["change_id"]) is str and data["change_id"].isdigit()
    assert data["change_key"] == "deploy-1"

    (item,) = (await _listed(capi, acme))["items"]
    assert_item_types(item)
    t = int(clock.now())
    assert item == {
        "change_id": data["change_id"], "title": "Deploy api v42", "description": "rolling",
        "type": "deployment", "status": "Processing", "channel_id": deploys.channel_id,
        "creator_id": 0, "start_time": t, "end_time": 0,
        "labels": {"service": "api", "env": "prod"}, "change_key": "deploy-1",
        "link": "https://ci.example/runs/7", "integration_id": deploys.integration_id,
        "event_cnt": 1, "created_at": t, "updated_at": t,
        "change_status": "Processing", "channel_name": "Payments",
    }


async def test_pushes_with_one_change_key_update_one_change(
    capi: Api, clock: FakeClock, acme: Person, deploys: ChangeWire
) -> None:
    first = await push_change(capi, deploys.key, change(status="Planned"))
    started = int(clock.now())
    clock.advance(300)
    second = await push_change(capi, deploys.key, change(status="Processing", title="v42b"))
    clock.advance(600)
    done = await push_change(capi, deploys.key, change(status="Done", title="v42b"))
    assert first.data["change_id"] == second.data["change_id"] == done.data["change_id"]
    (item,) = (await _listed(capi, acme))["items"]
    assert (item["title"], item["status"], item["event_cnt"]) == ("v42b", "Done", 3)
    assert (item["start_time"], item["end_time"]) == (started, int(clock.now()))
    assert item["updated_at"] == int(clock.now())
    assert await _count(capi, change_record) == 1
    assert await _count(capi, change_event) == 3
    # Finished once: a repeated Done keeps the end; another key is another change.
    clock.advance(60)
    await push_change(capi, deploys.key, change(status="Done", title="v42b"))
    other = await push_change(capi, deploys.key, change(key="deploy-2"))
    assert other.data["change_id"] != done.data["change_id"]
    items = {i["change_key"]: i for i in (await _listed(capi, acme))["items"]}
    assert items["deploy-1"]["end_time"] == int(clock.now()) - 60
    assert items["deploy-2"]["end_time"] == 0


async def test_times_the_push_states_win(capi: Api, acme: Person, deploys: ChangeWire,
                                         clock: FakeClock) -> None:
    t = int(clock.now())
    await push_change(capi, deploys.key, change(status="Done", start_time=t - 900,
                                                end_time=t - 300))
    (item,) = (await _listed(capi, acme))["items"]
    assert (item["start_time"], item["end_time"]) == (t - 900, t - 300)
    # Only an end, earlier than the first push: the start follows it.
    await push_change(capi, deploys.key, change(key="late", status="Done", end_time=t - 60))
    late = next(i for i in (await _listed(capi, acme))["items"] if i["change_key"] == "late")
    assert (late["start_time"], late["end_time"]) == (t - 60, t - 60)


@pytest.mark.parametrize("key", [None, "", "nope", "ik_" + "x" * 40, "k" * 300])
async def test_wrong_or_missing_key_is_401_and_stores_nothing(
    capi: Api, deploys: ChangeWire, key: str | None
) -> None:
    r = await push_change(capi, key, change())
    assert (r.status, r.code) == (401, "Unauthorized")
    assert "integration_key" in r.message
    assert r.headers["Service-Request-Id"] == r.body["request_id"]
    assert await _count(capi, change_record) == 0
    assert await _count(capi, change_event) == 0


async def test_keys_push_their_own_kind_only(capi: Api, acme: Person,
                                             deploys: ChangeWire) -> None:
    alerts = await wire(capi, acme, name="Alerts")
    r = await push_change(capi, alerts.key, change())
    assert (r.status, r.code) == (401, "Unauthorized")
    assert await _count(capi, change_record) == 0
    r = await push(capi, deploys.key, event())
    assert (r.status, r.code) == (401, "Unauthorized")
    # Each still works on its own path.
    assert (await push(capi, alerts.key, event())).status == 200
    assert (await push_change(capi, deploys.key, change())).status == 200


async def test_deleted_integration_key_is_401(capi: Api, acme: Person,
                                              deploys: ChangeWire) -> None:
    assert (await push_change(capi, deploys.key, change())).status == 200
    deleted = await capi.call("/integration/delete",
                              {"integration_id": deploys.integration_id}, key=acme.key)
    assert deleted.status == 200, deleted.body
    r = await push_change(capi, deploys.key, change(status="Done"))
    assert (r.status, r.code) == (401, "Unauthorized")
    assert await _count(capi, change_event) == 1
    (item,) = (await _listed(capi, acme))["items"]
    assert item["status"] == "Processing"


async def test_disabled_channel_is_a_400_and_stores_nothing(
    capi: Api, acme: Person, deploys: ChangeWire
) -> None:
    off = await capi.call("/channel/disable", {"channel_id": deploys.channel_id},
                          key=acme.key)
    assert off.status == 200, off.body
    r = await push_change(capi, deploys.key, change())
    assert (r.status, r.code) == (400, "BadRequest")
    assert str(deploys.channel_id) in r.message
    assert await _count(capi, change_record) == 0


@pytest.mark.parametrize(("body", "field"), [
    ({"change_key": "k", "change_status": "Done"}, "title"),
    (change(title=""), "title"),
    (change(title="   "), "title"),
    (change(key=""), "change_key"),
    ({"title": "t", "change_status": "Done"}, "change_key"),
    (change(status="Finished"), "change_status"),
    (change(type="rollout"), "type"),
    (change(start_time=1_700_000_000_000), "start_time"),
    (change(end_time="soon"), "end_time"),
    (change(start_time=2000, end_time=1000), "end_time"),
    (change(labels={"a": 1}), "labels"),
    (change(title=7), "title"),
])
async def test_bad_bodies_are_400_naming_the_field(
    capi: Api, deploys: ChangeWire, body: dict[str, Any], field: str
) -> None:
    r = await push_change(capi, deploys.key, body)
    assert (r.status, r.code) == (400, "InvalidParameter"), r.body
    assert field in r.message
    assert await _count(capi, change_record) == 0


async def test_a_body_that_is_not_json_is_refused(capi: Api, deploys: ChangeWire) -> None:
    r = await push_change(capi, deploys.key, None, raw=b"{not json",
                          headers={"content-type": "application/json"})
    assert (r.status, r.code) == (400, "InvalidContentType")
    r = await push_change(capi, deploys.key, None, raw=b"{}",
                          headers={"content-type": "text/plain"})
    assert (r.status, r.code) == (400, "InvalidContentType")


# --- /change/list --------------------------------------------------------------------------

async def test_list_filters_and_pages(capi: Api, clock: FakeClock, acme: Person,
                                      deploys: ChangeWire) -> None:
    t = int(clock.now())
    other = await wire_changes(capi, acme, name="Search")
    ids = {}
    for n, (wired, kind, start) in enumerate([
        (deploys, "deployment", t - 3000), (deploys, "config", t - 2000),
        (other, "feature_flag", t - 1000),
    ]):
        r = await push_change(capi, wired.key, change(key=f"c{n}", type=kind,
                                                      start_time=start))
        ids[f"c{n}"] = r.data["change_id"]

    def keys(data: dict[str, Any]) -> list[str]:
        return [i["change_key"] for i in data["items"]]

    everything = await _listed(capi, acme)
    assert (keys(everything), everything["total"]) == (["c2", "c1", "c0"], 3)
    assert type(everything["total"]) is int
    for item in everything["items"]:
        assert_item_types(item)
    assert keys(await _listed(capi, acme, channel_ids=[deploys.channel_id])) == ["c1", "c0"]
    assert keys(await _listed(capi, acme, change_ids=[ids["c0"], ids["c2"]])) == ["c2", "c0"]
    assert keys(await _listed(capi, acme, type="config")) == ["c1"]
    assert keys(await _listed(capi, acme, start_time=t - 2500)) == ["c2", "c1"]
    assert keys(await _listed(capi, acme, end_time=t - 2000)) == ["c1", "c0"]
    assert keys(await _listed(capi, acme, start_time=t - 2500, end_time=t - 1500)) == ["c1"]
    page = await _listed(capi, acme, p=2, limit=2)
    assert (keys(page), page["total"]) == (["c0"], 3)
    # An id that is no number names no change.
    assert await _listed(capi, acme, change_ids=["abc"]) == {"total": 0, "items": []}


@pytest.mark.parametrize(("body", "field"), [
    ({"change_ids": [1]}, "change_ids"),
    ({"channel_ids": ["1"]}, "channel_ids"),
    ({"channel_ids": [0]}, "channel_ids"),
    ({"start_time": "yesterday"}, "start_time"),
    ({"start_time": 1.5}, "start_time"),
    ({"start_time": 200, "end_time": 100}, "end_time"),
    ({"limit": 101}, "limit"),
    ({"p": 0}, "p"),
])
async def test_list_refuses_wrong_types(capi: Api, acme: Person, body: dict[str, Any],
                                        field: str) -> None:
    r = await capi.call("/change/list", body, key=acme.key)
    assert (r.status, r.code) == (400, "InvalidParameter"), r.body
    assert field in r.message


async def test_list_defaults_to_twenty(capi: Api, acme: Person, deploys: ChangeWire) -> None:
    for n in range(21):
        assert (await push_change(capi, deploys.key, change(key=f"k{n}"))).status == 200
    data = await _listed(capi, acme)
    assert (len(data["items"]), data["total"]) == (20, 21)


async def test_other_accounts_see_nothing_of_the_changes(
    capi: Api, acme: Person, deploys: ChangeWire
) -> None:
    r = await push_change(capi, deploys.key, change())
    globex = await new_account(capi, "Globex")
    assert await _listed(capi, globex) == {"total": 0, "items": []}
    assert await _listed(capi, globex, change_ids=[r.data["change_id"]]) == {
        "total": 0, "items": []}
    assert await _listed(capi, globex, channel_ids=[deploys.channel_id]) == {
        "total": 0, "items": []}
    # Another account's channel cannot take a change integration either.
    made = await capi.call("/integration/create", {
        "channel_id": deploys.channel_id, "integration_name": "x",
        "integration_type": "change"}, key=globex.key)
    assert (made.status, made.code) == (400, "ResourceNotFound")


async def test_list_needs_a_read_permission(capi: Api, acme: Person,
                                            deploys: ChangeWire) -> None:
    await push_change(capi, deploys.key, change())
    nobody = await new_member(capi, acme, name="Nobody", builtin=None)
    r = await capi.call("/change/list", {}, key=nobody.key)
    assert (r.status, r.code) == (403, "AccessDenied")
    member = await new_member(capi, acme, name="Reader")  # built-in Member: channel view
    assert (await _listed(capi, member))["total"] == 1


async def test_changes_of_a_private_channel_are_hidden_from_outsiders(
    capi: Api, acme: Person
) -> None:
    team = await capi.call("/team/upsert", {"team_name": "Core", "person_ids": []},
                           key=acme.key)
    assert team.status == 200, team.body
    private = await wire_changes(capi, acme, name="Secret", team_id=team.data["team_id"],
                                 is_private=True)
    public = await wire_changes(capi, acme, name="Open")
    hidden = await push_change(capi, private.key, change(key="hidden"))
    await push_change(capi, public.key, change(key="shown"))
    outsider = await new_member(capi, acme, name="Otto")
    data = await _listed(capi, outsider)
    assert [i["change_key"] for i in data["items"]] == ["shown"]
    assert data["total"] == 1
    assert (await _listed(capi, outsider, change_ids=[hidden.data["change_id"]]))["total"] == 0
    assert (await _listed(capi, acme))["total"] == 2


async def test_integration_type_is_listed_and_checked(capi: Api, acme: Person,
                                                      deploys: ChangeWire) -> None:
    info = await capi.call("/integration/info", {"integration_id": deploys.integration_id},
                           key=acme.key)
    assert info.data["integration_type"] == "change"
    bad = await capi.call("/integration/create", {
        "channel_id": deploys.channel_id, "integration_name": "y",
        "integration_type": "email"}, key=acme.key)
    assert (bad.status, bad.code) == (400, "InvalidParameter")
    assert "integration_type" in bad.message
    second = await change_integration(capi, acme, deploys.channel_id, name="Flags")
    assert second.key != deploys.key


async def test_concurrent_first_pushes_of_one_key_make_one_change(
    capi: Api, acme: Person, deploys: ChangeWire
) -> None:
    replies: list[Any] = []

    async def one(n: int) -> None:
        replies.append(await push_change(capi, deploys.key, change(key="same", title=f"t{n}")))

    async with anyio.create_task_group() as tg:
        for n in range(8):
            tg.start_soon(one, n)
    assert [r.status for r in replies] == [200] * 8, [r.body for r in replies]
    assert len({r.data["change_id"] for r in replies}) == 1
    (item,) = (await _listed(capi, acme))["items"]
    assert item["event_cnt"] == 8
    assert await _count(capi, change_event) == 8


async def test_pushes_are_rate_limited_per_integration(settings: Settings,
                                                       clock: FakeClock) -> None:
    limited = Settings(**{**settings.__dict__, "rate_limit_per_second": 3,
                          "rate_limit_per_minute": 1000})
    async with make_api(limited, clock=clock) as api:
        acme = await new_account(api, "Acme")
        a = await wire_changes(api, acme, name="A")
        clock.advance(1.01)  # the account's own budget (3/s) is not what this test is about
        b = await wire_changes(api, acme, name="B")
        clock.advance(1.01)
        codes = [(await push_change(api, a.key, change(key=f"k{i}"))).status for i in range(3)]
        assert codes == [200, 200, 200]
        r = await push_change(api, a.key, change(key="k9"))
        assert (r.status, r.code) == (429, "RequestTooFrequently")
        assert r.headers["Retry-After"] == "1" and r.headers["X-RateLimit-Remaining"] == "0"
        assert (await push_change(api, b.key, change())).status == 200
        assert await _count(api, change_record) == 4
