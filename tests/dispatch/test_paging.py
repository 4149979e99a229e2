"""From an alert to a page: the escalation engine and the delivery core with real peers (an
SMTP sink and a webhook receiver on loopback), acknowledgement through the signed link, and
the escalation stopping; repeats, escalation, pause and resume moved by the fake clock."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select, update

from dutyline.db.tables.dispatch import dispatch_state
from dutyline.db.tables.notify import notify_delivery
from dutyline.db.tables.platform import account, member
from dutyline.dispatch import engine
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import (
    create_rule,
    layer,
    mail_links,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio


async def open_incident(api: Api, who: Person, rule_layers: list[dict[str, Any]],
                        name: str = "Checkout", **rule: Any) -> str:
    channel_id = await make_channel(api, who, name)
    await create_rule(api, who, rule_body(channel_id, rule_layers, **rule))
    key = await make_integration(api, who, channel_id)
    assert (await push(api, key)).status == 200
    now = int(api.runtime.clock.now())
    items = (await api.call("/incident/list", {"start_time": now - 60, "end_time": now + 60},
                            key=who.key)).data["items"]
    [found] = [i for i in items if i["channel_id"] == channel_id]
    return str(found["incident_id"])


async def deliveries(api: Api, incident_id: str) -> list[Any]:
    async with api.runtime.db.transaction() as conn:
        return list((await conn.execute(select(notify_delivery).where(
            notify_delivery.c.incident_id == incident_id).order_by(
            notify_delivery.c.created_at, notify_delivery.c.layer_idx))).all())


async def feed(api: Api, who: Person, incident_id: str) -> list[dict[str, Any]]:
    # Not checked against the reference: its `detail` is a oneOf of schemas that mostly have
    # no required field, so most details match several of them (and so none, for oneOf).
    reply = await api.call("/incident/feed", {"incident_id": incident_id, "limit": 100,
                                              "asc": True}, key=who.key)
    items: list[dict[str, Any]] = reply.data["items"]
    return items


async def advance(api: Api, clock: FakeClock, seconds: int) -> list[str]:
    clock.advance(seconds)
    return await run_jobs(api)


async def test_alert_to_email_and_signed_webhook_to_ack_by_link_to_stop(
        papi: Api, owner: Person, clock: FakeClock, smtp_sink: SmtpSink,
        receiver: Receiver) -> None:
    hook = {"type": "custom", "settings": {"url": receiver.url(), "secret": "hush"}}
    incident_id = await open_incident(papi, owner, [
        layer(person_ids=[owner.person_id], webhooks=[hook], max_times=1, notify_step=5,
              escalate_window=10),
        layer(emails=["boss@example.com"]),
    ])
    outcomes = await run_jobs(papi)
    assert "dead" not in outcomes and "retry" not in outcomes

    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["owner@acme.example"]
    assert "checkout latency high" in mail.subject and "[Critical]" in mail.subject
    assert "Acknowledge: http://dutyline.test/incident/link/" in mail.text
    assert "incident/link/" in mail.html and "<a href=" in mail.html

    [got] = receiver.take()
    assert got.headers["content-type"] == "application/json"
    expected_sig = "sha256=" + hmac.new(b"hush", got.body, hashlib.sha256).hexdigest()
    assert got.headers["x-dutyline-signature"] == expected_sig
    payload = json.loads(got.body)
    assert got.headers["idempotency-key"] == payload["event_id"]
    assert set(payload) == {"event_time", "event_type", "event_id", "incident"}
    assert payload["event_type"] == "i_assign" and payload["event_time"] == int(clock.now()) * 1000
    inc = payload["incident"]
    assert inc["incident_id"] == incident_id and inc["title"] == "checkout latency high"
    assert inc["incident_severity"] == "Critical" and inc["progress"] == "Triggered"
    assert inc["channel_name"] == "Checkout"
    assert inc["assigned_to"]["layer_idx"] == 0 and inc["assigned_to"]["type"] == "assign"
    assert {"start_time", "labels", "responders", "num", "detail_url"} <= set(inc)

    entries = await feed(papi, owner, incident_id)
    types = [e["type"] for e in entries]
    assert types.count("i_assign") == 1 and types.count("i_notify") == 2
    assign = next(e for e in entries if e["type"] == "i_assign")
    assert assign["detail"]["to"] == [owner.person_id]
    notes = [e["detail"] for e in entries if e["type"] == "i_notify"]
    assert {n["by"] for n in notes} == {"email", "webhook"}
    assert all(n["layer_idx"] == 0 and n["fire_type"] == "fire" for n in notes)
    person_note = next(n for n in notes if n["by"] == "email")
    assert person_note["persons"] == [{"person_id": owner.person_id}]

    # The per-incident delivery list.
    listed = (await papi.call("/notify/delivery/list", {"incident_id": incident_id},
                              key=owner.key)).data["items"]
    assert sorted(d["channel"] for d in listed) == ["email", "webhook"]
    assert all(d["status"] == "success" and len(d["attempts"]) == 1 for d in listed)

    # The link: GET shows a confirmation form and changes nothing (a mail scanner).
    ack_url = re.search(r"Acknowledge: (\S+)", mail.text).group(1)  # type: ignore[union-attr]
    path = ack_url.removeprefix("http://dutyline.test")
    page = await papi.raw("GET", path)
    assert page.status_code == 200 and '<form method="post"' in page.text
    info = await papi.call("/incident/info", {"incident_id": incident_id}, key=owner.key)
    assert info.data["progress"] == "Triggered"
    done = await papi.raw("POST", path)
    assert done.status_code == 200 and "acknowledged" in done.text
    info = await papi.call("/incident/info", {"incident_id": incident_id}, key=owner.key)
    assert info.data["progress"] == "Processing"
    [responder] = info.data["responders"]
    assert responder["person_id"] == owner.person_id
    assert responder["assigned_at"] == int(clock.now()) and responder["acknowledged_at"] > 0
    assert info.data["assigned_to"]["layer_idx"] == 0
    assert info.data["assigned_to"]["escalate_rule_name"] == "Default"
    acks = [e for e in await feed(papi, owner, incident_id) if e["type"] == "i_ack"]
    assert [a["creator_id"] for a in acks] == [owner.person_id]
    again = await papi.raw("POST", path)
    assert again.status_code == 409

    # The webhook hears the acknowledgement; then the escalation stops: no repeat, no next
    # layer, however long we wait.
    await run_jobs(papi)
    [acked] = receiver.take()
    assert json.loads(acked.body)["event_type"] == "i_ack"
    for _ in range(4):
        await advance(papi, clock, 300)
    assert len(await deliveries(papi, incident_id)) == 3
    assert receiver.take() == []


async def test_only_the_webhooks_that_were_paged_hear_the_ack_and_the_resolution(
        papi: Api, owner: Person, clock: FakeClock, receiver: Receiver) -> None:
    def hook(path: str) -> dict[str, Any]:
        return {"type": "custom", "settings": {"url": receiver.url(path)}}

    channel_id = await make_channel(papi, owner)
    await create_rule(papi, owner, rule_body(channel_id, [
        layer(webhooks=[hook("/first"), hook("/both")], escalate_window=5),
        layer(webhooks=[hook("/second"), hook("/both")])]))
    integration_key = await make_integration(papi, owner, channel_id)
    assert (await push(papi, integration_key)).status == 200
    await run_jobs(papi)
    [incident_id] = await _incident_ids(papi, owner)
    paged = receiver.take()
    assert sorted(r.path for r in paged) == ["/both", "/first"]
    assert {json.loads(r.body)["event_type"] for r in paged} == {"i_assign"}
    ids = {"incident_ids": [incident_id]}
    assert (await papi.call("/incident/ack", ids, key=owner.key)).status == 200
    await run_jobs(papi)
    # Layer 1 was never paged: its own webhook hears nothing; a URL of both layers, once.
    heard = receiver.take()
    assert sorted(r.path for r in heard) == ["/both", "/first"]
    assert {json.loads(r.body)["event_type"] for r in heard} == {"i_ack"}
    assert {json.loads(r.body)["person"]["person_id"] for r in heard} == {owner.person_id}

    # Resolved by the system (its alert recovered): `i_rslv`, naming no person.
    clock.advance(60)
    assert (await papi.call("/incident/unack", ids, key=owner.key)).status == 200
    await run_jobs(papi)
    receiver.take()
    assert (await push(papi, integration_key, status="Ok")).status == 200
    await run_jobs(papi)
    heard = receiver.take()
    assert sorted(r.path for r in heard) == ["/both", "/first"]
    bodies = [json.loads(r.body) for r in heard]
    assert all(b["event_type"] == "i_rslv" and "person" not in b for b in bodies)
    assert all(b["incident"]["progress"] == "Closed" for b in bodies)

    # An escalation still in its aggregation window paged nobody: nobody hears it end.
    waiting = await open_incident(papi, owner, [layer(webhooks=[hook("/late")])],
                                  name="Waiting", aggr_window=600)
    await run_jobs(papi)
    await papi.call("/incident/resolve", {"incident_ids": [waiting]}, key=owner.key)
    await advance(papi, clock, 900)
    assert receiver.take() == []


async def test_the_preset_email_links_absolutely_inside_its_body_with_the_time_zone(
        papi: Api, owner: Person, clock: FakeClock, smtp_sink: SmtpSink) -> None:
    async with papi.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == owner.account_id)
                           .values(time_zone="Asia/Shanghai"))
    channel_id = await make_channel(papi, owner)
    await create_rule(papi, owner, rule_body(channel_id, [
        layer(person_ids=[owner.person_id], emails=["boss@example.com"])]))
    key = await make_integration(papi, owner, channel_id)
    runbook = "https://runbook.example/checkout?step=1&who=<oncall>"
    assert (await push(papi, key, labels={
        "runbook_url": runbook, "grafana": "http://grafana.example/d/1",
        "trap": "javascript:alert(1)", "host": "web-1"})).status == 200
    assert "dead" not in await run_jobs(papi)
    mails = {m.rcpt_tos[0]: m for m in await smtp_sink.wait_for(2)}
    [incident_id] = await _incident_ids(papi, owner)

    for address, signed in (("owner@acme.example", True), ("boss@example.com", False)):
        links, text = mail_links(mails[address].html)
        # Every link is absolute, from the server's base URL, and shown: inside <body>.
        by_text = {link.text: link for link in links}
        assert all(link.in_body for link in links), links
        assert by_text["Open the incident"].href == (
            f"http://dutyline.test/console/incidents/{incident_id}")
        assert by_text["Open"].href.startswith("http://dutyline.test/")
        if signed:
            for action in ("Acknowledge", "Resolve", "Open"):
                assert by_text[action].href.startswith("http://dutyline.test/incident/link/")
        else:
            assert "Acknowledge" not in by_text
        # URL labels are links (escaped), other values text; only http(s) is ever a link.
        assert by_text[runbook].href == (
            "https://runbook.example/checkout?step=1&who=%3concall%3e")
        assert by_text["http://grafana.example/d/1"].href == "http://grafana.example/d/1"
        assert "javascript:alert(1)" in text and "web-1" in text
        assert all(link.href.startswith(("http://", "https://")) for link in links)
        assert len(links) == (6 if signed else 4)  # nothing else became a link
        # The start time is the account's, and says so.
        started = datetime.fromtimestamp(int(clock.now()), ZoneInfo("Asia/Shanghai"))
        assert f"{started:%Y-%m-%d %H:%M:%S} +08:00 (Asia/Shanghai)" in text


async def _incident_ids(api: Api, who: Person) -> list[str]:
    now = int(api.runtime.clock.now())
    items = (await api.call("/incident/list", {"start_time": now - 60, "end_time": now + 60},
                            key=who.key)).data["items"]
    return [str(i["incident_id"]) for i in items]


async def test_repeats_then_escalation_then_done(papi: Api, owner: Person,
                                                 clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [
        layer(emails=["first@example.com"], max_times=2, notify_step=1, escalate_window=5),
        layer(emails=["second@example.com"], max_times=0),
    ])
    await run_jobs(papi)

    async def sent() -> list[tuple[str, str, int]]:
        return [(d.address, d.fire_type, d.layer_idx) for d in await deliveries(papi, incident_id)]

    assert await sent() == [("first@example.com", "fire", 0)]
    await advance(papi, clock, 59)
    assert len(await sent()) == 1
    await advance(papi, clock, 1)
    assert (await sent())[-1] == ("first@example.com", "refire", 0)
    await advance(papi, clock, 60)
    assert len(await sent()) == 3
    await advance(papi, clock, 60)  # repeats spent: nothing until the window ends
    assert len(await sent()) == 3
    await advance(papi, clock, 119)
    assert len(await sent()) == 3
    await advance(papi, clock, 1)  # 300 s after the layer began
    assert await sent() == [("first@example.com", "fire", 0), ("first@example.com", "refire", 0),
                            ("first@example.com", "refire", 0),
                            ("second@example.com", "fire", 1)]
    await advance(papi, clock, 3600)
    assert len(await sent()) == 4
    async with papi.runtime.db.transaction() as conn:
        state = (await conn.execute(select(dispatch_state))).one()
    assert state.status == engine.DONE and state.layer_idx == 1


async def test_a_late_step_does_not_push_the_timeline_back(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [
        layer(emails=["a@example.com"], max_times=3, notify_step=1, escalate_window=10)])
    await run_jobs(papi)
    async with papi.runtime.db.transaction() as conn:
        begun = (await conn.execute(select(dispatch_state))).one()
    t0 = begun.layer_started_at
    assert begun.next_at == t0 + 60_000  # milliseconds, to the planned instant

    # The first repeat runs 30 s late; the second is still due at t0 + 120 s, not 30 s later.
    await advance(papi, clock, 90)
    assert [d.fire_type for d in await deliveries(papi, incident_id)] == ["fire", "refire"]
    async with papi.runtime.db.transaction() as conn:
        state = (await conn.execute(select(dispatch_state))).one()
    assert state.last_notified_at == t0 + 60_000 and state.next_at == t0 + 120_000
    await advance(papi, clock, 30)
    assert [d.fire_type for d in await deliveries(papi, incident_id)] == [
        "fire", "refire", "refire"]


async def test_after_an_outage_missed_repeats_are_not_sent_in_a_burst(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [
        layer(emails=["a@example.com"], max_times=5, notify_step=1, escalate_window=30)])
    await run_jobs(papi)
    # Nothing ran for ten minutes: one repeat now, then a fresh timeline from now.
    await advance(papi, clock, 600)
    assert [d.fire_type for d in await deliveries(papi, incident_id)] == ["fire", "refire"]
    async with papi.runtime.db.transaction() as conn:
        state = (await conn.execute(select(dispatch_state))).one()
    assert state.next_at == int(clock.now() * 1000) + 60_000


async def test_ack_pauses_unack_resumes_and_force_escalate_goes_on(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [
        layer(emails=["a@example.com"], max_times=3, notify_step=1, escalate_window=10),
        layer(emails=["b@example.com"]),
    ])
    await run_jobs(papi)
    ids = {"incident_ids": [incident_id]}
    assert (await papi.call("/incident/ack", ids, key=owner.key)).status == 200
    await run_jobs(papi)
    await advance(papi, clock, 3600)
    assert len(await deliveries(papi, incident_id)) == 1
    assert (await papi.call("/incident/unack", ids, key=owner.key)).status == 200
    await run_jobs(papi)  # the layer begins again at once
    got = await deliveries(papi, incident_id)
    assert [(d.address, d.fire_type) for d in got] == [("a@example.com", "fire")] * 2

    forced = await open_incident(papi, owner, [
        layer(emails=["c@example.com"], max_times=3, notify_step=1, escalate_window=2,
              force_escalate=True),
        layer(emails=["d@example.com"]),
    ], name="Forced")
    await run_jobs(papi)
    await papi.call("/incident/ack", {"incident_ids": [forced]}, key=owner.key)
    await run_jobs(papi)
    await advance(papi, clock, 60)  # acknowledged: no repeat
    assert [d.address for d in await deliveries(papi, forced)] == ["c@example.com"]
    await advance(papi, clock, 60)  # but the window ends and the next layer is paged
    assert [d.address for d in await deliveries(papi, forced)] == ["c@example.com",
                                                                  "d@example.com"]


async def test_aggregation_window_delays_and_a_close_cancels(papi: Api, owner: Person,
                                                             clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [layer(emails=["a@example.com"])],
                                      aggr_window=120)
    await run_jobs(papi)
    assert await deliveries(papi, incident_id) == []
    await advance(papi, clock, 120)
    assert len(await deliveries(papi, incident_id)) == 1

    closed = await open_incident(papi, owner, [layer(emails=["b@example.com"])],
                                 name="Closing", aggr_window=120)
    await run_jobs(papi)
    await papi.call("/incident/resolve", {"incident_ids": [closed]}, key=owner.key)
    await advance(papi, clock, 600)
    assert await deliveries(papi, closed) == []


async def test_snooze_holds_repeats_and_wake_resumes(papi: Api, owner: Person,
                                                     clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [
        layer(emails=["a@example.com"], max_times=5, notify_step=1)])
    await run_jobs(papi)
    ids = {"incident_ids": [incident_id]}
    assert (await papi.call("/incident/snooze", {**ids, "minutes": 30},
                            key=owner.key)).status == 200
    await run_jobs(papi)
    await advance(papi, clock, 600)
    assert len(await deliveries(papi, incident_id)) == 1
    assert (await papi.call("/incident/wake", ids, key=owner.key)).status == 200
    await run_jobs(papi)
    assert len(await deliveries(papi, incident_id)) == 2


async def test_a_removed_person_is_skipped_and_no_responder_is_recorded(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    gone = await new_member(papi, owner, name="Gone")
    channel_id = await make_channel(papi, owner)
    await create_rule(papi, owner, rule_body(channel_id, [
        layer(person_ids=[gone.person_id], escalate_window=1),
        layer(emails=["next@example.com"])]))
    async with papi.runtime.db.transaction() as conn:
        await conn.execute(update(member).where(member.c.member_id == gone.person_id)
                           .values(status="deleted"))
    key = await make_integration(papi, owner, channel_id)
    await push(papi, key)
    await run_jobs(papi)
    now = int(clock.now())
    [item] = (await papi.call("/incident/list", {"start_time": now - 60, "end_time": now + 60},
                              key=owner.key)).data["items"]
    incident_id = item["incident_id"]
    assert await deliveries(papi, incident_id) == []
    notes = [e["detail"] for e in await feed(papi, owner, incident_id)
             if e["type"] == "i_notify"]
    assert notes[0]["failed_reason"] == "no responder" and notes[0]["layer_idx"] == 0
    await advance(papi, clock, 60)  # the next layer still runs
    assert [d.address for d in await deliveries(papi, incident_id)] == ["next@example.com"]


async def test_a_stale_or_repeated_step_does_nothing(papi: Api, owner: Person) -> None:
    incident_id = await open_incident(papi, owner, [
        layer(emails=["a@example.com"], max_times=3, notify_step=1)])
    await run_jobs(papi)
    async with papi.runtime.db.transaction() as conn:
        state = (await conn.execute(select(dispatch_state))).one()
    # The step that ran had seq - 1: delivering its timer again changes nothing.
    for seq in (state.seq - 1, state.seq - 2, state.seq + 5):
        async with papi.runtime.db.transaction() as conn:
            await engine.step(conn, papi.runtime, incident_id=incident_id, seq=seq)
    assert len(await deliveries(papi, incident_id)) == 1
    async with papi.runtime.db.transaction() as conn:
        after = (await conn.execute(select(dispatch_state))).one()
    assert after.seq == state.seq and after.times == state.times


async def test_first_enabled_rule_by_priority_wins(papi: Api, owner: Person) -> None:
    channel_id = await make_channel(papi, owner)
    off = await create_rule(papi, owner, rule_body(channel_id, [layer(emails=["off@x.io"])],
                                                   priority=0, rule_name="off"))
    await papi.call("/channel/escalate/rule/disable", {"channel_id": channel_id,
                                                       "rule_id": off}, key=owner.key)
    await create_rule(papi, owner, rule_body(channel_id, [layer(emails=["late@x.io"])],
                                             priority=7, rule_name="late"))
    await create_rule(papi, owner, rule_body(channel_id, [layer(emails=["first@x.io"])],
                                             priority=2, rule_name="first"))
    key = await make_integration(papi, owner, channel_id)
    await push(papi, key)
    await run_jobs(papi)
    async with papi.runtime.db.transaction() as conn:
        sent = [(d.address, d.rule_name) for d in (await conn.execute(
            select(notify_delivery))).all()]
    assert sent == [("first@x.io", "first")]


async def test_reopen_and_assignment_dispatch_again(papi: Api, owner: Person,
                                                   clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [
        layer(emails=["a@example.com"], escalate_window=30), layer(emails=["b@example.com"])])
    await run_jobs(papi)
    ids = {"incident_ids": [incident_id]}
    await papi.call("/incident/resolve", ids, key=owner.key)
    await run_jobs(papi)
    clock.advance(60)
    assert (await papi.call("/incident/reopen", {**ids, "reason": "back"},
                            key=owner.key)).status == 200
    await run_jobs(papi)
    got = await deliveries(papi, incident_id)
    assert [d.address for d in got] == ["a@example.com", "a@example.com"]
    assigns = [e["detail"] for e in await feed(papi, owner, incident_id)
               if e["type"] == "i_assign" and e["creator_id"] == 0]
    assert [a["type"] for a in assigns] == ["assign", "reopen"]
    # An assignment naming the rule and a layer starts there.
    rule_id = assigns[0]["escalate_rule_id"]
    clock.advance(60)
    reply = await papi.call("/incident/assign", {"incident_id": incident_id, "assigned_to": {
        "escalate_rule_id": rule_id, "layer_idx": 1, "type": "escalate"}}, key=owner.key)
    assert reply.status == 200, reply.body
    by_hand = (await papi.call("/incident/info", {"incident_id": incident_id},
                               key=owner.key)).data["assigned_to"]
    assert (by_hand["escalate_rule_id"], by_hand["escalate_rule_name"]) == (rule_id, "Default")
    await run_jobs(papi)
    got = await deliveries(papi, incident_id)
    assert [d.address for d in got][-1] == "b@example.com" and got[-1].layer_idx == 1
    # The incident's record names the rule it is assigned to, by id and by name, whether the
    # engine or a person assigned it.
    info = (await papi.call("/incident/info", {"incident_id": incident_id},
                            key=owner.key)).data
    listed = (await papi.call("/incident/list-by-ids", {"incident_ids": [incident_id]},
                              key=owner.key)).data["items"][0]
    for record in (info, listed):
        assert record["assigned_to"]["escalate_rule_id"] == rule_id
        assert record["assigned_to"]["escalate_rule_name"] == got[-1].rule_name != ""
    assert assigns[0]["escalate_rule_name"] == got[-1].rule_name
