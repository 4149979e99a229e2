"""/alert/list, /alert/info, /alert/event/list: filters, records, scoping, permissions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push, wire

pytestmark = pytest.mark.anyio

Make = Callable[..., Awaitable[Wired]]


def window(clock: FakeClock, **extra: object) -> dict[str, object]:
    now = int(clock.now())
    return {"start_time": now - 3600, "end_time": now + 3600, **extra}


async def seeded(capi: Api, clock: FakeClock, make: Make) -> tuple[Wired, Wired]:
    one = await make(name="One")
    two = await make(name="Two")
    await push(capi, one.key, event("cpu", "Critical", key="cpu", labels={"h": "a"}))
    clock.advance(1)
    await push(capi, one.key, event("mem", "Warning", key="mem"))
    clock.advance(1)
    await push(capi, one.key, event("mem", "Ok", key="mem"))
    clock.advance(1)
    await push(capi, two.key, event("disk", "Info", key="disk"))
    return one, two


async def test_list_filters_and_pages(
    capi: Api, clock: FakeClock, acme: Person, channel_with_integration: Make
) -> None:
    one, two = await seeded(capi, clock, channel_with_integration)
    everything = await capi.call("/alert/list", window(clock), key=acme.key)
    assert everything.data["total"] == 3
    assert [a["alert_key"] for a in everything.data["items"]] == ["disk", "mem", "cpu"]

    async def keys(**f: object) -> list[str]:
        r = await capi.call("/alert/list", window(clock, **f), key=acme.key)
        return sorted(a["alert_key"] for a in r.data["items"])

    assert await keys(channel_ids=[one.channel_id]) == ["cpu", "mem"]
    assert await keys(integration_ids=[two.integration_id]) == ["disk"]
    assert await keys(alert_severity="Critical,Info") == ["cpu", "disk"]
    assert await keys(is_active=True) == ["cpu", "disk"]
    assert await keys(is_active=False) == ["mem"]
    assert await keys(alert_keys=["mem"]) == ["mem"]
    assert await keys(ever_muted=False) == ["cpu", "disk", "mem"]
    page = await capi.call("/alert/list", window(clock, limit=2, asc=True), key=acme.key)
    assert page.data["has_next_page"] is True and len(page.data["items"]) == 2
    nxt = await capi.call("/alert/list", window(
        clock, limit=2, asc=True, search_after_ctx=page.data["search_after_ctx"]), key=acme.key)
    assert [a["alert_key"] for a in nxt.data["items"]] == ["disk"]
    assert nxt.data["has_next_page"] is False and nxt.data["search_after_ctx"] == ""
    old = {"start_time": 1, "end_time": 1000}
    assert (await capi.call("/alert/list", old, key=acme.key)).data["total"] == 0


async def test_info_is_the_reference_record(
    capi: Api, clock: FakeClock, acme: Person, channel_with_integration: Make
) -> None:
    one, _ = await seeded(capi, clock, channel_with_integration)
    listed = await capi.call("/alert/list", window(clock, alert_keys=["cpu"]), key=acme.key)
    alert_id = listed.data["items"][0]["alert_id"]
    info = (await capi.call("/alert/info", {"alert_id": alert_id}, key=acme.key)).data
    assert info["alert_id"] == alert_id and info["channel_name"] == "One"
    assert info["integration_name"] == "One std" and info["channel_status"] == "enabled"
    assert info["integration_id"] == info["data_source_id"] == one.integration_id
    assert info["labels"] == {"h": "a"} and info["event_cnt"] == 1
    assert info["incident"]["progress"] == "Triggered" and info["incident"]["title"] == "cpu"
    assert info == listed.data["items"][0]


async def test_event_list_in_arrival_order(
    capi: Api, clock: FakeClock, acme: Person, channel_with_integration: Make
) -> None:
    w = await channel_with_integration()
    for status in ("Warning", "Critical", "Critical", "Ok"):
        await push(capi, w.key, event(status=status, labels={"s": status}))
    listed = await capi.call("/alert/list", window(clock), key=acme.key)
    alert_id = listed.data["items"][0]["alert_id"]
    r = await capi.call("/alert/event/list", {"alert_id": alert_id}, key=acme.key)
    assert [e["event_status"] for e in r.data["items"]] == [
        "Warning", "Critical", "Critical", "Ok"]
    assert r.data["items"][0]["labels"] == {"s": "Warning"}
    assert {e["alert_key"] for e in r.data["items"]} == {"k1"}
    page = await capi.call("/alert/event/list", {"alert_id": alert_id, "p": 2, "limit": 3},
                           key=acme.key)
    assert [e["event_status"] for e in page.data["items"]] == ["Ok"]
    assert page.data["total"] == 4


async def test_other_accounts_alerts_are_not_found(
    capi: Api, clock: FakeClock, acme: Person, channel_with_integration: Make
) -> None:
    await seeded(capi, clock, channel_with_integration)
    listed = await capi.call("/alert/list", window(clock), key=acme.key)
    alert_id = listed.data["items"][0]["alert_id"]
    globex = await new_account(capi, "Globex")
    assert (await capi.call("/alert/list", window(clock), key=globex.key)).data["total"] == 0
    for path in ("/alert/info", "/alert/event/list"):
        r = await capi.call(path, {"alert_id": alert_id}, key=globex.key)
        assert (r.status, r.code) == (400, "ResourceNotFound")
        assert alert_id in r.message
    r = await capi.call("/alert/list", window(clock, alert_ids=[alert_id]), key=globex.key)
    assert r.data["total"] == 0


async def test_permission_is_channel_view(capi: Api, clock: FakeClock, acme: Person) -> None:
    member = await new_member(capi, acme, name="Reader")  # built-in Member: channel view
    nobody = await new_member(capi, acme, name="Nobody", builtin=None)
    assert (await capi.call("/alert/list", window(clock), key=member.key)).status == 200
    r = await capi.call("/alert/list", window(clock), key=nobody.key)
    assert (r.status, r.code) == (403, "AccessDenied")
    assert (await capi.call("/alert/list", window(clock), key=None)).status == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"start_time": 100, "end_time": 50}, "end_time"),
        ({"start_time": 0, "end_time": 32 * 86400}, "end_time"),
        ({"end_time": 5}, "start_time"),
        ({"start_time": 0, "end_time": 5, "alert_severity": "Fatal"}, "alert_severity"),
        ({"start_time": 0, "end_time": 5, "limit": 101}, "limit"),
        ({"start_time": 0, "end_time": 5, "search_after_ctx": "!!"}, "search_after_ctx"),
        ({"start_time": 0, "end_time": 5, "channel_ids": [0]}, "channel_ids"),
    ],
)
async def test_bad_list_requests(
    capi: Api, acme: Person, body: dict[str, object], field: str
) -> None:
    r = await capi.call("/alert/list", body, key=acme.key)
    assert (r.status, r.code) == (400, "InvalidParameter"), r.body
    assert field in r.message


async def test_zh_time_span_message(capi: Api, acme: Person) -> None:
    r = await capi.call("/alert/list", {"start_time": 0, "end_time": 40 * 86400},
                        key=acme.key, headers={"Accept-Language": "zh-CN"})
    assert "31 天" in r.message


async def test_wire_helper_works_on_the_plain_api(api: Api, owner: Person) -> None:
    w = await wire(api, owner)
    assert (await push(api, w.key, event())).status == 200
