"""/incident/list: the time window, every filter, offset paging and the search_after_ctx cursor
(opaque, tamper-checked); /incident/list-by-ids."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dutyline.config import Settings
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.incident.lifecycle_support import assert_invalid, create, seed_channel

pytestmark = pytest.mark.anyio

T0 = 1_700_000_000


@pytest.fixture
async def capi(settings: Settings) -> Any:
    async with make_api(settings, clock=FakeClock(T0)) as client:
        yield client


async def _list(api: Api, who: Person, **body: Any) -> dict[str, Any]:
    reply = await api.call("/incident/list", {"start_time": T0 - 60, "end_time": T0 + 86_400,
                                              **body}, key=who.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


def _titles(data: dict[str, Any]) -> list[str]:
    return [i["title"] for i in data["items"]]


async def test_filters(capi: Api) -> None:
    api = capi
    clock: FakeClock = api.runtime.clock
    owner = await new_account(api, "Acme")
    other = await new_account(api, "Globex")
    helper = await new_member(api, owner, name="Helper", builtin="admin")
    payments = await seed_channel(api, owner, "Payments")
    search = await seed_channel(api, owner, "Search")
    made: dict[str, str] = {}
    specs = [
        ("p-crit", {"incident_severity": "Critical", "channel_id": payments}, owner),
        ("p-warn", {"incident_severity": "Warning", "channel_id": payments}, helper),
        ("s-info", {"incident_severity": "Info", "channel_id": search}, owner),
        ("loose Disk_full", {"incident_severity": "Critical"}, helper),
    ]
    for title, body, who in specs:
        clock.advance(60)
        made[title] = await create(api, who, title=title, **body)
    await create(api, other, title="theirs")
    await api.call("/incident/ack", {"incident_ids": [made["p-warn"]]}, key=owner.key)
    await api.call("/incident/resolve", {"incident_ids": [made["s-info"]]}, key=helper.key)
    await api.call("/incident/snooze", {"incident_ids": [made["p-crit"]], "minutes": 10},
                   key=owner.key)
    await api.call("/incident/assign", {"incident_id": made["loose Disk_full"],
                                        "assigned_to": {"person_ids": [owner.person_id]}},
                   key=owner.key)

    everything = await _list(api, owner)
    assert _titles(everything) == ["loose Disk_full", "s-info", "p-warn", "p-crit"]
    assert everything["total"] == 4 and everything["has_next_page"] is False
    assert _titles(await _list(api, owner, asc=True))[0] == "p-crit"
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"progress": "Triggered"}, ["loose Disk_full", "p-crit"]),
        ({"progress": "Processing,Closed"}, ["s-info", "p-warn"]),
        ({"incident_severity": "Critical"}, ["loose Disk_full", "p-crit"]),
        ({"incident_severity": "Warning, Info"}, ["s-info", "p-warn"]),
        ({"channel_ids": [payments]}, ["p-warn", "p-crit"]),
        ({"channel_ids": [0]}, ["loose Disk_full"]),
        ({"creator_ids": [helper.person_id]}, ["loose Disk_full", "p-warn"]),
        ({"closer_ids": [helper.person_id]}, ["s-info"]),
        ({"closer_ids": [0]}, []),
        ({"responder_ids": [owner.person_id]}, ["loose Disk_full", "p-warn"]),
        ({"incident_ids": [made["s-info"], made["p-crit"]]}, ["s-info", "p-crit"]),
        ({"query": "disk_"}, ["loose Disk_full"]),
        ({"query": "%"}, []),
        ({"is_snoozed": True}, ["p-crit"]),
        ({"is_my_channel": True}, ["s-info", "p-warn", "p-crit"]),
        ({"progress": "Triggered", "channel_ids": [payments]}, ["p-crit"]),
    ]
    for body, expected in cases:
        assert _titles(await _list(api, owner, **body)) == expected, body
    num = everything["items"][0]["num"]
    assert _titles(await _list(api, owner, nums=[num.lower()])) == ["loose Disk_full"]
    # The window: only incidents started inside [start_time, end_time).
    early = await _list(api, owner, start_time=T0, end_time=T0 + 121)
    assert _titles(early) == ["p-warn", "p-crit"]
    # Snoozes end: once the clock passes snoozed_before, the incident is no longer snoozed.
    clock.advance(601)
    assert _titles(await _list(api, owner, is_snoozed=True)) == []
    assert _titles(await _list(api, other)) == ["theirs"]


async def test_window_and_filter_validation(capi: Api) -> None:
    owner = await new_account(capi, "Acme")
    for body, name in [
        ({"end_time": T0}, "start_time"),
        ({"start_time": T0}, "end_time"),
        ({"start_time": T0, "end_time": T0}, "end_time"),
        ({"start_time": T0, "end_time": T0 + 31 * 86_400 + 1}, "end_time"),
        ({"start_time": -1, "end_time": T0}, "start_time"),
        ({"start_time": T0, "end_time": 2**63}, "end_time"),
        ({"start_time": T0, "end_time": T0 + 1, "progress": "Open"}, "progress"),
        ({"start_time": T0, "end_time": T0 + 1, "incident_severity": "Ok"},
         "incident_severity"),
        ({"start_time": T0, "end_time": T0 + 1, "limit": 101}, "limit"),
        ({"start_time": T0, "end_time": T0 + 1, "p": 101, "limit": 100}, "p"),
        ({"start_time": T0, "end_time": T0 + 1, "channel_ids": list(range(101))},
         "channel_ids"),
        ({"start_time": T0, "end_time": T0 + 1, "acker_ids": [1]}, "acker_ids"),
        ({"start_time": T0, "end_time": T0 + 1, "incident_ids": ["x"]}, "incident_ids"),
    ]:
        assert_invalid(await capi.call("/incident/list", body, key=owner.key),
                       "InvalidParameter", name)
    ok = await capi.call("/incident/list", {"start_time": T0, "end_time": T0 + 31 * 86_400},
                         key=owner.key)
    assert ok.status == 200


async def test_offset_paging_and_cursor(capi: Api) -> None:
    api = capi
    clock: FakeClock = api.runtime.clock
    owner = await new_account(api, "Acme")
    ids = []
    for i in range(7):
        if i != 3:  # two incidents share a start second: the id breaks the tie
            clock.advance(10)
        ids.append(await create(api, owner, title=f"i{i}"))
    everything = await _list(api, owner, limit=100)
    order = [i["incident_id"] for i in everything["items"]]
    assert sorted(order) == sorted(ids)

    page2 = await _list(api, owner, p=2, limit=3)
    assert [i["incident_id"] for i in page2["items"]] == order[3:6]
    assert page2["total"] == 7 and page2["has_next_page"] is True
    last = await _list(api, owner, p=3, limit=3)
    assert [i["incident_id"] for i in last["items"]] == order[6:]
    assert last["has_next_page"] is False and last["search_after_ctx"] == ""
    assert last["total"] == 7
    # A page past the end has no rows, and still the list's total.
    beyond = await _list(api, owner, p=5, limit=3)
    assert beyond["items"] == [] and beyond["total"] == 7
    assert beyond["has_next_page"] is False

    for asc in (False, True):
        expected = order if not asc else order[::-1]
        seen: list[str] = []
        cursor = ""
        while True:
            data = await _list(api, owner, limit=2, asc=asc, search_after_ctx=cursor)
            assert data["total"] == 7
            seen += [i["incident_id"] for i in data["items"]]
            if not data["has_next_page"]:
                break
            cursor = data["search_after_ctx"]
            assert cursor
        assert seen == expected, asc

    cursor = (await _list(api, owner, limit=2))["search_after_ctx"]
    body, _, mac = cursor.partition(".")
    forged = ("A" if body[0] != "A" else "B") + body[1:] + "." + mac
    for bad in [forged, body + "." + "x" * len(mac), "garbage", ".", cursor + "x", "é.é"]:
        reply = await api.call("/incident/list", {"start_time": T0 - 60,
                                                  "end_time": T0 + 86_400,
                                                  "search_after_ctx": bad}, key=owner.key)
        assert_invalid(reply, "InvalidParameter", "search_after_ctx")
    reply = await api.call("/incident/list", {"start_time": T0 - 60, "end_time": T0 + 86_400,
                                              "search_after_ctx": cursor, "asc": True},
                           key=owner.key)
    assert_invalid(reply, "InvalidParameter", "search_after_ctx")


async def test_cursor_of_another_server_key_is_refused(settings: Settings) -> None:
    async with make_api(settings, clock=FakeClock(T0)) as api:
        owner = await new_account(api, "Acme")
        for _ in range(3):
            await create(api, owner)
        cursor = (await _list(api, owner, limit=1))["search_after_ctx"]
    other_settings = dataclasses.replace(settings, secret_key="another-secret")
    async with make_api(other_settings, clock=FakeClock(T0)) as api:
        reply = await api.call("/incident/list", {"start_time": T0 - 60,
                                                  "end_time": T0 + 86_400,
                                                  "search_after_ctx": cursor}, key=owner.key)
        assert_invalid(reply, "InvalidParameter", "search_after_ctx")


async def test_list_by_ids(capi: Api) -> None:
    owner = await new_account(capi, "Acme")
    a = await create(capi, owner, title="a")
    b = await create(capi, owner, title="b")
    reply = await capi.call("/incident/list-by-ids", {"incident_ids": [b, a.upper(), "0" * 24]},
                            key=owner.key)
    assert reply.status == 200
    assert sorted(i["incident_id"] for i in reply.data["items"]) == sorted([a, b])
    assert reply.data["total"] == 2 and reply.data["has_next_page"] is False
    assert_invalid(await capi.call("/incident/list-by-ids", {"incident_ids": ["a" * 24] * 101},
                                   key=owner.key), "InvalidParameter", "incident_ids")
