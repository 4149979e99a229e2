"""The whole page, end to end, on each database: an alert pushed to
`POST /event/push/alert/standard` opens an incident; its channel's escalation rule pages
whoever a schedule has on call, with the rule's template, by that person's own preference
for the severity (SMS, voice and e-mail) and a signed webhook; the page arrives in the fake
Twilio, the SMTP sink and the webhook receiver; the person acknowledges through the signed
link in the e-mail (GET shows the page, POST confirms); and the escalation stops: no
repeat, no next layer, however far the clock moves."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.notify import notify_delivery
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import (
    create_rule,
    mail_links,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, FROM_NUMBER, FakeTwilio
from tests.fixtures.paging import NOW
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio
DAY = 86_400


@pytest.fixture
async def eapi(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock,
               fake_twilio: FakeTwilio) -> AsyncIterator[Api]:
    async with make_api(settings.with_(
            smtp_url=smtp_sink.url, base_url="http://dutyline.test",
            twilio_api_url=fake_twilio.base_url, twilio_account_sid=ACCOUNT_SID,
            twilio_auth_token=AUTH_TOKEN, twilio_from_number=FROM_NUMBER),
            clock=clock) as client:
        yield client


async def ok(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    reply = await api.call(path, body, key=key)
    assert reply.status == 200, reply.body
    return reply.data


# The incident in a webhook body: these fields of the incident record (reference
# IncidentInfo), as /incident/info gives them.
WEBHOOK_INCIDENT_FIELDS = (
    "incident_id", "title", "description", "impact", "root_cause", "resolution",
    "incident_severity", "incident_status", "progress", "created_at", "updated_at",
    "start_time", "last_time", "end_time", "ack_time", "close_time", "snoozed_before",
    "labels", "fields", "responders", "alert_cnt", "channel_id", "channel_name", "num",
    "detail_url", "assigned_to")


def webhook_incident(info: dict[str, Any]) -> dict[str, Any]:
    return {k: info[k] for k in WEBHOOK_INCIDENT_FIELDS}


async def delivery_count(api: Api, incident_id: str) -> int:
    async with api.runtime.db.transaction() as conn:
        return len((await conn.execute(select(notify_delivery.c.delivery_id).where(
            notify_delivery.c.incident_id == incident_id))).all())


async def test_alert_to_sms_voice_email_and_webhook_to_ack_by_link_to_stop(
        eapi: Api, owner: Person, clock: FakeClock, smtp_sink: SmtpSink,
        receiver: Receiver, fake_twilio: FakeTwilio) -> None:
    # The on-call person: a phone, and SMS + voice + e-mail for Critical incidents.
    oncall = await new_member(eapi, owner, name="Oncall", email="oncall@example.com")
    bystander = await new_member(eapi, owner, name="Bystander", email="by@example.com")
    await ok(eapi, "/member/info/reset", {"member_id": oncall.person_id,
                                          "phone": "+1 415 555 0123"}, oncall.key)
    await ok(eapi, "/member/notify/reset", {"critical": ["sms", "voice", "email"],
                                            "warning": ["email"]}, oncall.key)
    # A schedule with the on-call person on duty now (the bystander is in another group).
    schedule_id = (await ok(eapi, "/schedule/create", {
        "schedule_name": "Primary", "time_zone": "UTC", "layers": [{
            "layer_name": "Primary", "mode": 0, "rotation_unit": "day", "rotation_value": 7,
            "handoff_time": 0, "enable_time": NOW - DAY,
            "groups": [{"group_name": "A", "members": [{"role_id": 0,
                                                        "person_ids": [oncall.person_id]}]},
                       {"group_name": "B", "members": [{"role_id": 0,
                                                        "person_ids": [bystander.person_id]}]}],
        }]}, owner.key))["schedule_id"]
    # A template of our own for SMS and e-mail.
    template_id = (await ok(eapi, "/template/create", {
        "template_name": "Pager", "sms": "PAGE {{.IncidentSeverity}}: {{.Title}}",
        "email": "<HTML><Body><p>Handle <b>{{.Title}}</b> now</p></BODY>\n</HTML>\n"},
        owner.key))["template_id"]
    channel_id = await make_channel(eapi, owner)
    hook = {"type": "custom", "settings": {"url": receiver.url("/pager"), "secret": "hush"}}
    await create_rule(eapi, owner, {
        **rule_body(channel_id, [
            {"target": {"schedule_to_role_ids": {str(schedule_id): [0]},
                        "by": {"follow_preference": True}, "webhooks": [hook]},
             "max_times": 2, "notify_step": 5, "escalate_window": 15},
            {"target": {"emails": ["boss@example.com"], "by": {"critical": ["email"]}}},
        ]), "template_id": template_id})
    integration_key = await make_integration(eapi, owner, channel_id)

    # The alert.
    pushed = await push(eapi, integration_key, title="checkout down", status="Critical",
                        alert_key="co")
    assert pushed.status == 200 and pushed.body.get("error") is None
    outcomes = await run_jobs(eapi)
    assert "dead" not in outcomes and "retry" not in outcomes
    items = (await ok(eapi, "/incident/list", {"start_time": NOW - 60, "end_time": NOW + 60},
                      owner.key))["items"]
    [incident] = [i for i in items if i["channel_id"] == channel_id]
    incident_id = incident["incident_id"]
    assert incident["title"] == "checkout down"

    # The page arrives everywhere: the fake Twilio (SMS with the template, a call)...
    got = {r.kind: r for r in fake_twilio.take()}
    assert set(got) == {"Messages", "Calls"}
    assert got["Messages"].form["To"] == got["Calls"].form["To"] == "+14155550123"
    assert got["Messages"].form["Body"].startswith("PAGE Critical: checkout down\nAck: ")
    assert "checkout down" in got["Calls"].form["Twiml"]
    # ... the SMTP sink (the template's HTML, the person's signed links) ...
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["oncall@example.com"]
    assert "<p>Handle <b>checkout down</b> now</p>" in mail.html
    # The person's links: absolute, and inside the template's own <body>.
    links, _ = mail_links(mail.html)
    assert [link.text for link in links] == ["Acknowledge", "Resolve", "Open"]
    assert all(link.in_body and link.href.startswith("http://dutyline.test/incident/link/")
               for link in links)
    # ... and the webhook receiver (signed).
    [hooked] = receiver.take()
    assert hooked.path == "/pager"
    assert hooked.headers["x-dutyline-signature"] == "sha256=" + hmac.new(
        b"hush", hooked.body, hashlib.sha256).hexdigest()
    payload = json.loads(hooked.body)
    assert payload["incident"]["incident_id"] == incident_id
    assert payload["incident"]["assigned_to"]["layer_idx"] == 0
    entries = (await ok(eapi, "/incident/feed", {"incident_id": incident_id, "limit": 100},
                        owner.key))["items"]
    assign = next(e for e in entries if e["type"] == "i_assign")
    assert assign["detail"]["to"] == [oncall.person_id]
    assert {e["detail"]["by"] for e in entries if e["type"] == "i_notify"} == {
        "sms", "voice", "email", "webhook"}
    pages = await delivery_count(eapi, incident_id)
    assert pages == 4

    # Acknowledge through the link in the e-mail: GET shows a confirmation, POST confirms.
    ack_url = re.search(r"Acknowledge: (\S+)", mail.text).group(1)  # type: ignore[union-attr]
    path = ack_url.removeprefix("http://dutyline.test")
    shown = await eapi.raw("GET", path)
    assert shown.status_code == 200 and '<form method="post"' in shown.text
    assert (await ok(eapi, "/incident/info", {"incident_id": incident_id},
                     owner.key))["progress"] == "Triggered"
    confirmed = await eapi.raw("POST", path)
    assert confirmed.status_code == 200
    info = await ok(eapi, "/incident/info", {"incident_id": incident_id}, owner.key)
    assert info["progress"] == "Processing"
    acks = [e for e in (await ok(eapi, "/incident/feed", {"incident_id": incident_id,
                                                          "limit": 100}, owner.key))["items"]
            if e["type"] == "i_ack"]
    assert [a["creator_id"] for a in acks] == [oncall.person_id]

    # The webhook that heard the page hears the acknowledgement: the page's shape, as
    # `i_ack`, naming who acknowledged, signed like the page.
    await run_jobs(eapi)
    [acked] = receiver.take()
    assert acked.path == "/pager"
    assert acked.headers["x-dutyline-signature"] == "sha256=" + hmac.new(
        b"hush", acked.body, hashlib.sha256).hexdigest()
    ack_body = json.loads(acked.body)
    assert acked.headers["idempotency-key"] == ack_body["event_id"] != payload["event_id"]
    assert ack_body == {
        "event_time": int(clock.now()) * 1000, "event_type": "i_ack",
        "event_id": ack_body["event_id"],
        "person": {"person_id": oncall.person_id, "person_name": "Oncall",
                   "email": "oncall@example.com"},
        "incident": webhook_incident(info)}
    assert ack_body["incident"]["detail_url"] == (
        f"http://dutyline.test/console/incidents/{incident_id}")

    # The escalation stops: past every repeat and the escalation window, nothing more.
    for _ in range(6):
        clock.advance(300)
        await run_jobs(eapi)
    assert await delivery_count(eapi, incident_id) == pages + 1
    assert fake_twilio.take() == [] and receiver.take() == []
    assert len(smtp_sink.messages) == 1

    # Resolving is heard too (`i_rslv`), by the member who resolved.
    await ok(eapi, "/incident/resolve", {"incident_ids": [incident_id]}, owner.key)
    await run_jobs(eapi)
    [resolved] = receiver.take()
    closed = await ok(eapi, "/incident/info", {"incident_id": incident_id}, owner.key)
    assert closed["progress"] == "Closed"
    rslv_body = json.loads(resolved.body)
    assert rslv_body == {
        "event_time": int(clock.now()) * 1000, "event_type": "i_rslv",
        "event_id": rslv_body["event_id"],
        "person": {"person_id": owner.person_id, "person_name": "Acme Owner",
                   "email": "owner@acme.example"},
        "incident": webhook_incident(closed)}
    assert fake_twilio.take() == [] and len(smtp_sink.messages) == 1
