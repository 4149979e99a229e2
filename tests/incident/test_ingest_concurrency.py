"""Concurrent pushes of one alert_key make one alert and one incident (in-process on both
databases, and across two real server processes), and a 200 survives a SIGKILL."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import httpx
import pytest

from dutyline.db.tables.incident import alert, alert_event, incident
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.server import running_server
from tests.incident.conftest import PUSH_PATH, event, push, wire
from tests.incident.ingest_support import alerts_of, count, incidents_of

pytestmark = pytest.mark.anyio

N = 24


async def test_concurrent_pushes_of_one_key_in_process(api: Api, owner: Person) -> None:
    w = await wire(api, owner, group={"method": "p", "equals": [["svc"]]})
    bodies = [event(key="same", status=("Warning", "Critical", "Info")[i % 3],
                    labels={"svc": "s", "i": str(i)}) for i in range(N)]
    replies = await asyncio.gather(*(push(api, w.key, b) for b in bodies))
    assert [r.status for r in replies] == [200] * N
    (a,) = await alerts_of(api, w.integration_id)
    assert (a.event_cnt, a.alert_severity, a.end_time) == (N, "Critical", 0)
    (inc,) = await incidents_of(api, w.channel_id)
    assert (inc.alert_cnt, inc.active_alert_cnt, inc.alert_event_cnt) == (1, 1, N)
    assert inc.incident_severity == "Critical"


async def test_concurrent_new_keys_of_one_group_share_one_incident(
    api: Api, owner: Person
) -> None:
    w = await wire(api, owner, group={"method": "p", "equals": [["svc"]]})
    replies = await asyncio.gather(*(
        push(api, w.key, event(key=f"k{i}", labels={"svc": "s"})) for i in range(N)))
    assert {r.status for r in replies} == {200}
    (inc,) = await incidents_of(api, w.channel_id)
    assert (inc.alert_cnt, inc.active_alert_cnt, inc.alert_event_cnt) == (N, N, N)


def _post_all(base_urls: list[str], key: str, bodies: list[dict[str, Any]]) -> list[int]:
    async def run() -> list[int]:
        async with httpx.AsyncClient(timeout=30.0, trust_env=False) as client:
            replies = await asyncio.gather(*(
                client.post(base_urls[i % len(base_urls)] + PUSH_PATH,
                            params={"integration_key": key}, json=b)
                for i, b in enumerate(bodies)))
        return [r.status_code for r in replies]

    return asyncio.run(run())


async def test_two_server_processes_make_one_alert_and_one_incident(
    api: Api, owner: Person, database_url: str
) -> None:
    w = await wire(api, owner, group={"method": "p", "equals": [["svc"]]})
    env = {"DUTYLINE_DATABASE_URL": database_url, "DUTYLINE_RATE_LIMIT_PER_SECOND": "0",
           "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0"}
    same = [event(key="same", labels={"svc": "s"}) for _ in range(N)]
    fresh = [event(key=f"new{i}", labels={"svc": "t"}) for i in range(N)]
    with running_server(env) as one, running_server(env) as two:
        urls = [one.base_url, two.base_url]
        statuses = await asyncio.to_thread(_post_all, urls, w.key, same + fresh)
    assert statuses == [200] * (2 * N)
    alerts = await alerts_of(api, w.integration_id)
    same_alerts = [a for a in alerts if a.alert_key == "same"]
    assert len(same_alerts) == 1 and same_alerts[0].event_cnt == N
    incs = await incidents_of(api, w.channel_id)
    assert sorted(i.alert_cnt for i in incs) == [1, N]
    assert sorted(i.alert_event_cnt for i in incs) == [N, N]
    assert await count(api, alert_event) == 2 * N


async def test_an_answered_push_survives_a_sigkill(
    api: Api, owner: Person, database_url: str
) -> None:
    w = await wire(api, owner)
    env = {"DUTYLINE_DATABASE_URL": database_url}
    with running_server(env) as server:
        with server.client() as client:
            r = client.post(PUSH_PATH, params={"integration_key": w.key},
                            json=event(key="durable", labels={"x": "y"}))
        server.process.send_signal(signal.SIGKILL)  # right after the 200, no shutdown
        server.process.wait(15)
        assert r.status_code == 200 and r.json()["data"] == {"alert_key": "durable"}
    now = int(api.runtime.clock.now())
    with running_server(env) as again, again.client() as client:
        listed = client.post("/alert/list", params={"app_key": owner.key}, json={
            "start_time": now - 3600, "end_time": now + 3600}).json()
    (a,) = await alerts_of(api, w.integration_id)
    assert a.alert_key == "durable" and a.incident_id
    assert await count(api, incident, incident.c.incident_id == a.incident_id) == 1
    assert await count(api, alert, alert.c.alert_key == "durable") == 1
    assert [i["alert_key"] for i in listed["data"]["items"]] == ["durable"]
    assert listed["data"]["items"][0]["incident"]["progress"] == "Triggered"


def _post_each(base_url: str, key: str, bodies: list[dict[str, Any]]) -> list[int]:
    with httpx.Client(base_url=base_url, timeout=30.0, trust_env=False) as client:
        return [client.post(PUSH_PATH, params={"integration_key": key}, json=b).status_code
                for b in bodies]


async def test_a_key_revoked_in_one_process_stops_at_once_in_another(
    api: Api, owner: Person, database_url: str
) -> None:
    """Each process remembers the keys that pushed through it; a key deleted through any
    process stores nothing from its next push on, in every process."""
    w = await wire(api, owner)
    env = {"DUTYLINE_DATABASE_URL": database_url}
    with running_server(env) as one, running_server(env) as two:
        assert await asyncio.to_thread(_post_each, one.base_url, w.key,
                                       [event(key="a"), event(key="b")]) == [200, 200]
        with two.client() as client:
            deleted = client.post("/integration/delete",
                                  params={"app_key": owner.key},
                                  json={"integration_id": w.integration_id})
        assert deleted.status_code == 200, deleted.text
        before = await count(api, alert_event)
        assert await asyncio.to_thread(_post_each, one.base_url, w.key,
                                       [event(key="c"), event(key="a")]) == [401, 401]
    assert await count(api, alert_event) == before
