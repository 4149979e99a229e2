"""Channel notification rules at work, on each database: an incident event a rule tells of,
on an incident its filters match, reaches the rule's targets through the delivery jobs (a
webhook receiver and an SMTP sink on loopback, each payload checked whole), recorded as
deliveries and in the incident feed, once per rule and event; a rule whose filters do not
match, a disabled rule, and a rule of other events send nothing; escalation pages beside
them as before."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.incident import incident_event
from dutyline.db.tables.work import job
from dutyline.dispatch.notify_rule import send
from dutyline.incident.events import load_event
from tests.dispatch.notify_rule_support import (
    create_notify_rule,
    deliveries_of,
    notify_rule,
)
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import (
    create_rule,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.dispatch.test_end_to_end import webhook_incident
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio
OWNER = {"person_id": 0, "person_name": "Acme Owner", "email": "owner@acme.example"}


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, reply.body
    return reply.data


async def incident_of(api: Api, who: Person, channel_id: int) -> dict[str, Any]:
    now = int(api.runtime.clock.now())
    items = (await ok(api, "/incident/list", {"start_time": now - 600, "end_time": now + 60},
                      who))["items"]
    [incident] = [i for i in items if i["channel_id"] == channel_id]
    return await ok(api, "/incident/info", {"incident_id": incident["incident_id"]}, who)


def hook(receiver: Receiver, path: str, **settings: Any) -> dict[str, Any]:
    return {"type": "custom", "settings": {"url": receiver.url(path), **settings}}


def signed(received: Any, secret: str) -> bool:
    return received.headers["x-dutyline-signature"] == "sha256=" + hmac.new(
        secret.encode(), received.body, hashlib.sha256).hexdigest()


async def test_a_matching_rule_tells_its_targets_of_each_event_it_names_once(
        papi: Api, owner: Person, clock: FakeClock, smtp_sink: SmtpSink,
        receiver: Receiver) -> None:
    channel_id = await make_channel(papi, owner)
    critical_checkout = [[{"key": "severity", "oper": "IN", "vals": ["Critical"]},
                          {"key": "labels.service", "oper": "IN", "vals": ["checkout"]}]]
    told = await create_notify_rule(papi, owner, notify_rule(
        channel_id, rule_name="Watchers", events=["i_new", "i_ack", "i_rslv"],
        filters=critical_checkout,
        target={"emails": ["watch@example.com"], "by": {},
                "webhooks": [hook(receiver, "/notify", secret="hush")]}))
    await create_notify_rule(papi, owner, notify_rule(
        channel_id, rule_name="Info only",
        filters=[[{"key": "severity", "oper": "IN", "vals": ["Info"]}]],
        target={"webhooks": [hook(receiver, "/unmatched")]}))
    disabled = await create_notify_rule(papi, owner, notify_rule(
        channel_id, rule_name="Off", target={"webhooks": [hook(receiver, "/disabled")]}))
    await ok(papi, "/channel/notify/rule/disable",
             {"channel_id": channel_id, "rule_id": disabled}, owner)
    await create_notify_rule(papi, owner, notify_rule(
        channel_id, rule_name="Acks", events=["i_ack"],
        target={"webhooks": [hook(receiver, "/acks")]}))
    integration_key = await make_integration(papi, owner, channel_id)

    # A new incident: the matching rule of `i_new`, and only it, tells its targets.
    pushed = await push(papi, integration_key, title="checkout down", status="Critical",
                        labels={"service": "checkout"})
    assert pushed.status == 200, pushed.body
    assert "dead" not in await run_jobs(papi)
    info = await incident_of(papi, owner, channel_id)
    [got] = receiver.take()
    assert got.path == "/notify" and signed(got, "hush")
    body = json.loads(got.body)
    assert body == {"event_time": int(clock.now()) * 1000, "event_type": "i_new",
                    "event_id": body["event_id"], "incident": webhook_incident(info)}
    assert got.headers["idempotency-key"] == body["event_id"]
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["watch@example.com"]
    assert mail.subject == f"[Critical] checkout down (#{info['num']})"
    assert mail.text.replace("\r\n", "\n") == (
        f"[Critical] checkout down (#{info['num']})\nChannel: Checkout\n"
        "Progress: Triggered\n\nservice: checkout\n\n"
        f"Open: http://dutyline.test/console/incidents/{info['incident_id']}\n")
    # Recorded like escalation's pages: deliveries and the feed's `i_notify`.
    rows = await deliveries_of(papi, info["incident_id"])
    assert sorted((r.channel, r.address, r.rule_id, r.rule_name, r.status) for r in rows) == [
        ("email", "watch@example.com", told, "Watchers", "success"),
        ("webhook", receiver.url("/notify"), told, "Watchers", "success")]
    feed = (await ok(papi, "/incident/feed", {"incident_id": info["incident_id"],
                                               "limit": 100}, owner))["items"]
    notified = [e["detail"] for e in feed if e["type"] == "i_notify"]
    assert sorted((d["by"], d["escalate_rule_id"], d["escalate_rule_name"], d["status"])
                  for d in notified) == [("email", told, "Watchers", "success"),
                                         ("webhook", told, "Watchers", "success")]

    # The event's job run again (a worker that committed and then lost its lease): nothing
    # more is sent.
    async with papi.runtime.db.transaction(write=True) as conn:
        created_id = (await conn.execute(select(incident_event.c.id).where(
            incident_event.c.incident_id == info["incident_id"],
            incident_event.c.kind == "created"))).scalar_one()
        event = await load_event(conn, created_id)
        assert event is not None
        assert await send.on_event(conn, papi.runtime, event) == 0
    assert len(await deliveries_of(papi, info["incident_id"])) == 2

    # Acknowledged: the rules of `i_ack` tell of it, naming who acknowledged.
    clock.advance(60)
    await ok(papi, "/incident/ack", {"incident_ids": [info["incident_id"]]}, owner)
    await run_jobs(papi)
    acked = await ok(papi, "/incident/info", {"incident_id": info["incident_id"]}, owner)
    by_path = {r.path: r for r in receiver.take()}
    assert set(by_path) == {"/notify", "/acks"}
    person = {**OWNER, "person_id": owner.person_id}
    for path in ("/notify", "/acks"):
        body = json.loads(by_path[path].body)
        assert body == {"event_time": int(clock.now()) * 1000, "event_type": "i_ack",
                        "event_id": body["event_id"], "person": person,
                        "incident": webhook_incident(acked)}
    [_, ack_mail] = await smtp_sink.wait_for(2)
    assert ack_mail.subject == (
        f"Acknowledged by Acme Owner: [Critical] checkout down (#{info['num']})")
    assert "Progress: Processing" in ack_mail.text

    # Resolved: only the rule of `i_rslv`.
    await ok(papi, "/incident/resolve", {"incident_ids": [info["incident_id"]]}, owner)
    await run_jobs(papi)
    [resolved] = receiver.take()
    assert resolved.path == "/notify"
    assert json.loads(resolved.body)["event_type"] == "i_rslv"
    [*_, rslv_mail] = await smtp_sink.wait_for(3)
    assert rslv_mail.subject.startswith("Resolved by Acme Owner: [Critical] checkout down")
    assert len(await deliveries_of(papi, info["incident_id"])) == 2 + 3 + 2


async def test_a_rule_reaches_persons_by_their_preference_beside_escalation(
        papi: Api, owner: Person, smtp_sink: SmtpSink, receiver: Receiver) -> None:
    watcher = await new_member(papi, owner, name="Watcher", email="watcher@example.com")
    channel_id = await make_channel(papi, owner)
    await create_rule(papi, owner, rule_body(channel_id, [
        {"target": {"webhooks": [hook(receiver, "/page")]}}]))
    rule_id = await create_notify_rule(papi, owner, notify_rule(
        channel_id, target={"person_ids": [watcher.person_id],
                            "by": {"follow_preference": True}}))
    integration_key = await make_integration(papi, owner, channel_id)
    await push(papi, integration_key, title="disk full", status="Warning")
    await run_jobs(papi)
    info = await incident_of(papi, owner, channel_id)
    # The escalation pages as before...
    [page] = receiver.take()
    assert page.path == "/page" and json.loads(page.body)["event_type"] == "i_assign"
    # ... and the rule tells the watcher, by e-mail (no preference saved), with their own
    # signed links.
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["watcher@example.com"]
    assert mail.subject == f"[Warning] disk full (#{info['num']})"
    assert "Acknowledge: http://dutyline.test/incident/link/" in mail.text
    rows = [r for r in await deliveries_of(papi, info["incident_id"]) if r.rule_id == rule_id]
    assert [(r.channel, r.person_id, r.status) for r in rows] == [
        ("email", watcher.person_id, "success")]
    # The watcher is told, not assigned: the responders are escalation's alone.
    assert watcher.person_id not in [r["person_id"] for r in info["responders"]]


async def test_without_enabled_rules_no_event_job_is_queued(
        papi: Api, owner: Person, receiver: Receiver) -> None:
    channel_id = await make_channel(papi, owner)
    other_channel = await make_channel(papi, owner, "Elsewhere")
    rule_id = await create_notify_rule(papi, owner, notify_rule(
        other_channel, target={"webhooks": [hook(receiver, "/notify")]}))
    integration_key = await make_integration(papi, owner, channel_id)

    async def queued() -> int:
        async with papi.runtime.db.transaction() as conn:
            return len((await conn.execute(select(job.c.id).where(
                job.c.kind == "incident_event.notify_rule"))).all())

    await push(papi, integration_key, title="one", alert_key="a1")
    assert await queued() == 0  # a rule of another channel only
    await ok(papi, "/channel/notify/rule/disable",
             {"channel_id": other_channel, "rule_id": rule_id}, owner)
    other_key = await make_integration(papi, owner, other_channel)
    await push(papi, other_key, title="two", alert_key="a2")
    assert await queued() == 0  # a disabled rule only
    await ok(papi, "/channel/notify/rule/enable",
             {"channel_id": other_channel, "rule_id": rule_id}, owner)
    await push(papi, other_key, title="three", alert_key="a3")
    assert await queued() == 1
    await run_jobs(papi)
    [got] = receiver.take()
    assert json.loads(got.body)["incident"]["title"] == "three"


async def test_a_team_and_a_chat_robot_hear_of_an_acknowledgement_only(
        papi: Api, owner: Person, smtp_sink: SmtpSink, receiver: Receiver) -> None:
    member = await new_member(papi, owner, name="Teammate", email="mate@example.com")
    team_id = (await ok(papi, "/team/upsert", {"team_name": "SRE",
                                                "person_ids": [member.person_id]},
                        owner))["team_id"]
    channel_id = await make_channel(papi, owner)
    rule_id = await create_notify_rule(papi, owner, notify_rule(
        channel_id, events=["i_ack"],
        target={"team_ids": [team_id], "by": {"warning": ["email"]},
                "webhooks": [{"type": "slack", "settings": {"url": receiver.url("/slack")}}]}))
    integration_key = await make_integration(papi, owner, channel_id)
    await push(papi, integration_key, title="disk full", status="Warning")
    await run_jobs(papi)
    assert receiver.take() == [] and smtp_sink.messages == []  # opened: not an `i_ack`
    info = await incident_of(papi, owner, channel_id)

    await ok(papi, "/incident/ack", {"incident_ids": [info["incident_id"]]}, owner)
    await run_jobs(papi)
    [robot] = receiver.take()
    assert robot.path == "/slack"
    assert json.loads(robot.body) == {"text": (
        f"Acknowledged by Acme Owner\n[Warning] disk full (#{info['num']})\n"
        "Channel: Checkout\nProgress: Processing\n\n"
        f"Open: http://dutyline.test/console/incidents/{info['incident_id']}\n")}
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["mate@example.com"]
    assert mail.subject == f"Acknowledged by Acme Owner: [Warning] disk full (#{info['num']})"
    rows = await deliveries_of(papi, info["incident_id"])
    assert sorted((r.channel, r.person_id, r.rule_id, r.status) for r in rows) == [
        ("email", member.person_id, rule_id, "success"), ("slack", 0, rule_id, "success")]


async def test_a_resolution_by_the_alerts_recovery_is_told_too(
        papi: Api, owner: Person, receiver: Receiver) -> None:
    channel_id = await make_channel(papi, owner)
    await create_notify_rule(papi, owner, notify_rule(
        channel_id, events=["i_rslv"], target={"webhooks": [hook(receiver, "/rslv")]}))
    integration_key = await make_integration(papi, owner, channel_id)
    await push(papi, integration_key, title="queue stuck", status="Critical", alert_key="q")
    await run_jobs(papi)
    assert receiver.take() == []
    await push(papi, integration_key, title="queue stuck", status="Ok", alert_key="q")
    await run_jobs(papi)
    info = await incident_of(papi, owner, channel_id)
    assert info["progress"] == "Closed"
    [got] = receiver.take()
    body = json.loads(got.body)
    # Nobody acted: no `person`.
    assert (body["event_type"], "person" in body, body["incident"]["progress"]) == (
        "i_rslv", False, "Closed")
