"""A close is a close, however it happens (incident/state): whoever heard of an incident
hears that it closed, and every close ends the incident's active alerts the same way.

- An incident merged away (/incident/merge), or emptied by an alert merge (/alert/merge),
  closes: the escalation webhook that paged it and a notification rule that tells of closes
  hear `i_rslv` for it, as they would for a resolve (a real webhook receiver on loopback).
- A person's resolve and the system's auto-resolve end the active alerts with one query:
  recovered (`Ok`, ended), and no longer inhibit sources (no `inhibit_source` row left)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

import dutyline.incident.ingest.tasks  # noqa: F401  (registers the auto-resolve timer)
from dutyline.db.tables.incident import alert
from dutyline.db.tables.incident_noise import inhibit_source
from tests.dispatch.notify_rule_support import create_notify_rule, notify_rule
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import (
    create_rule,
    layer,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired
from tests.incident.lifecycle_support import events_of

pytestmark = pytest.mark.anyio


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, reply.body
    return reply.data


def hook(receiver: Receiver, path: str) -> dict[str, Any]:
    return {"type": "custom", "settings": {"url": receiver.url(path)}}


def heard(receiver: Receiver) -> list[tuple[str, str, str, str]]:
    """(path, event_type, incident_id, progress) of each request received, sorted."""
    bodies = [(r.path, json.loads(r.body)) for r in receiver.take()]
    return sorted((path, b["event_type"], b["incident"]["incident_id"],
                   b["incident"]["progress"]) for path, b in bodies)


async def incident_of_alert(api: Api, who: Person, title: str) -> str:
    now = int(api.runtime.clock.now())
    items = (await ok(api, "/incident/list", {"start_time": now - 600, "end_time": now + 60},
                      who))["items"]
    [found] = [i for i in items if i["title"] == title]
    return str(found["incident_id"])


async def test_a_merged_away_incident_is_closed_for_everyone_who_heard_of_it(
        papi: Api, clock: FakeClock, receiver: Receiver) -> None:
    acme = await new_account(papi, "Acme")
    channel_id = await make_channel(papi, acme)
    await create_rule(papi, acme, rule_body(channel_id, [
        layer(webhooks=[hook(receiver, "/page")])]))
    await create_notify_rule(papi, acme, notify_rule(
        channel_id, rule_name="Closes", events=["i_rslv"],
        target={"webhooks": [hook(receiver, "/told")]}))
    key = await make_integration(papi, acme, channel_id)
    # Two incidents opened by alerts and one by hand, in the channel: all three paged.
    for title, alert_key in (("api down", "k1"), ("db down", "k2")):
        assert (await push(papi, key, title=title, alert_key=alert_key)).status == 200
    api_down = await incident_of_alert(papi, acme, "api down")
    db_down = await incident_of_alert(papi, acme, "db down")
    target = (await ok(papi, "/incident/create", {
        "incident_severity": "Critical", "title": "outage", "channel_id": channel_id},
        acme))["incident_id"]
    assert "dead" not in await run_jobs(papi)
    assert heard(receiver) == sorted(("/page", "i_assign", i, "Triggered")
                                     for i in (api_down, db_down, target))

    # Merged away: closed, and both the paged webhook and the rule hear it, by the merger.
    clock.advance(60)
    await ok(papi, "/incident/merge", {"source_incident_ids": [api_down],
                                       "target_incident_id": target}, acme)
    assert "dead" not in await run_jobs(papi)
    assert heard(receiver) == [("/page", "i_rslv", api_down, "Closed"),
                               ("/told", "i_rslv", api_down, "Closed")]
    (closed,) = [e for e in await events_of(papi, api_down) if e["kind"] == "resolved"]
    assert closed["person_id"] == acme.person_id
    assert closed["payload"]["reason"] == "merged"
    assert closed["payload"]["merged_into"] == target

    # Emptied by an alert merge (its only alert moved): closed, heard the same way.
    clock.advance(60)
    alerts = (await ok(papi, "/incident/alert/list", {"incident_id": db_down}, acme))["items"]
    await ok(papi, "/alert/merge", {"incident_id": target,
                                    "alert_ids": [a["alert_id"] for a in alerts]}, acme)
    assert "dead" not in await run_jobs(papi)
    assert heard(receiver) == [("/page", "i_rslv", db_down, "Closed"),
                               ("/told", "i_rslv", db_down, "Closed")]

    # The target took both incidents' alerts and stays open: nobody hears it close.
    info = await ok(papi, "/incident/info", {"incident_id": target}, acme)
    assert (info["progress"], info["active_alert_cnt"]) == ("Triggered", 2)


NODE_DOWN = {"title_rule": "node down", "event_status": "Critical", "alert_key": "node",
             "labels": {"alertname": "NodeDown", "host": "db-1"}}


async def _source_incident(capi: Api, w: Wired) -> tuple[str, str]:
    """An incident whose alert is an inhibit rule's source: (incident_id, alert_id)."""
    reply = await capi.call("/channel/inhibit/rule/create", {
        "channel_id": w.channel_id, "rule_name": "node down hides services",
        "source_filters": [[{"key": "labels.alertname", "oper": "IN", "vals": ["NodeDown"]}]],
        "target_filters": [[{"key": "labels.alertname", "oper": "IN",
                             "vals": ["ServiceDown"]}]],
        "equals": ["labels.host"]}, key=w.account.key)
    assert reply.status == 200, reply.body
    pushed = await capi.client.post("/event/push/alert/standard",
                                    params={"integration_key": w.key}, json=NODE_DOWN)
    assert pushed.status_code == 200, pushed.text
    async with capi.runtime.db.transaction(write=False) as conn:
        (row,) = (await conn.execute(select(alert))).all()
        assert len((await conn.execute(select(inhibit_source))).all()) == 1
    return str(row.incident_id), str(row.alert_id)


@pytest.mark.parametrize("closer", ["resolve", "auto_resolve"])
async def test_every_close_ends_the_alerts_and_their_inhibit_sources(
        capi: Api, clock: FakeClock, channel_with_integration: Any, closer: str) -> None:
    w = await channel_with_integration(auto_resolve_timeout=300)
    incident_id, alert_id = await _source_incident(capi, w)
    if closer == "resolve":
        await ok(capi, "/incident/resolve", {"incident_ids": [incident_id]}, w.account)
    else:
        clock.advance(301)
        assert "dead" not in await run_jobs(capi)
    async with capi.runtime.db.transaction(write=False) as conn:
        (row,) = (await conn.execute(select(alert).where(alert.c.alert_id == alert_id))).all()
        assert (row.end_time, row.alert_status) == (int(clock.now()), "Ok")
        assert (await conn.execute(select(inhibit_source))).all() == []
    info = await ok(capi, "/incident/info", {"incident_id": incident_id}, w.account)
    assert (info["progress"], info["active_alert_cnt"]) == ("Closed", 0)
    (closed,) = [e for e in await events_of(capi, incident_id) if e["kind"] == "resolved"]
    assert closed["payload"] == {
        "channel_id": w.channel_id, "progress": "Closed", "recovered_alerts": 1,
        "reason": "resolved" if closer == "resolve" else "auto_resolve_timeout"}
