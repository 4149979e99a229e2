"""Telegram, Zoom, SMS and voice against real protocol peers on loopback: a Telegram bot API
receiver, a Zoom incoming-webhook receiver and a fake Twilio-compatible server. Each asserts
the exact request a peer gets (path, headers, body or form fields), written from the
platforms' published protocols; and follow_preference choosing channels per severity."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any
from xml.etree import ElementTree

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.notify import notify_attempt, notify_delivery
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
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, FROM_NUMBER, FakeTwilio
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio
BOT_TOKEN = "123456:ABC-server-bot"


@pytest.fixture
async def capi(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock, receiver: Receiver,
               fake_twilio: FakeTwilio) -> AsyncIterator[Api]:
    """The app with SMS/voice going to the fake Twilio and the server's Telegram bot to the
    receiver (its bot API base URL)."""
    async with make_api(settings.with_(
            smtp_url=smtp_sink.url, base_url="http://dutyline.test",
            twilio_api_url=fake_twilio.base_url, twilio_account_sid=ACCOUNT_SID,
            twilio_auth_token=AUTH_TOKEN, twilio_from_number=FROM_NUMBER,
            telegram_api_url=receiver.url("/tg"), telegram_bot_token=BOT_TOKEN),
            clock=clock) as client:
        yield client


async def page(api: Api, who: Person, layers: list[dict[str, Any]], *, name: str = "Checkout",
               status: str = "Critical") -> str:
    channel_id = await make_channel(api, who, name)
    await create_rule(api, who, rule_body(channel_id, layers))
    key = await make_integration(api, who, channel_id)
    assert (await push(api, key, status=status)).status == 200
    now = int(api.runtime.clock.now())
    items = (await api.call("/incident/list", {"start_time": now - 60, "end_time": now + 60},
                            key=who.key)).data["items"]
    [found] = [i for i in items if i["channel_id"] == channel_id]
    await run_jobs(api)
    return str(found["incident_id"])


async def deliveries(api: Api, incident_id: str) -> dict[str, Any]:
    async with api.runtime.db.transaction() as conn:
        rows = (await conn.execute(select(notify_delivery).where(
            notify_delivery.c.incident_id == incident_id))).all()
    return {r.channel: r for r in rows}


async def ok(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    reply = await api.call(path, body, key=key)
    assert reply.status == 200, reply.body
    return reply.data


async def test_telegram_group_target_posts_send_message_with_its_bot(
        capi: Api, owner: Person, receiver: Receiver) -> None:
    hook = {"type": "telegram", "settings": {"url": receiver.url("/api"),
                                             "token": "987:group-bot", "chat_id": "-100200"}}
    incident_id = await page(capi, owner, [layer(webhooks=[hook])])
    [got] = receiver.take()
    assert got.path == "/api/bot987:group-bot/sendMessage"
    assert got.headers["content-type"] == "application/json"
    body = json.loads(got.body)
    assert set(body) == {"chat_id", "text"} and body["chat_id"] == -100200
    assert "checkout latency high" in body["text"]
    assert body["text"].endswith(f"\nhttp://dutyline.test/console/incidents/{incident_id}")
    [d] = (await deliveries(capi, incident_id)).values()
    assert d.channel == "telegram" and d.status == "success"
    # The bot token is a secret: sealed in the rule, masked in the history.
    rules = (await capi.call("/channel/escalate/rule/list", {"channel_id": d.channel_id},
                             key=owner.key)).data["items"]
    assert "token" not in rules[0]["layers"][0]["target"]["webhooks"][0]["settings"]
    async with capi.runtime.db.transaction() as conn:
        [attempt] = (await conn.execute(select(notify_attempt).where(
            notify_attempt.c.incident_id == incident_id))).all()
    assert attempt.endpoint.endswith("/api/bot******/sendMessage")
    assert "group-bot" not in attempt.endpoint


async def test_a_telegram_target_needs_a_chat_id(capi: Api, owner: Person,
                                                 receiver: Receiver) -> None:
    channel_id = await make_channel(capi, owner)
    reply = await capi.call("/channel/escalate/rule/create", rule_body(channel_id, [layer(
        webhooks=[{"type": "telegram", "settings": {"url": receiver.url("/api"),
                                                    "token": "1:x"}}])]), key=owner.key)
    assert reply.code == "InvalidParameter"
    assert "layers[0].target.webhooks[0].settings.chat_id" in reply.message


async def test_zoom_incoming_webhook_full_format_with_verification_token(
        capi: Api, owner: Person, receiver: Receiver) -> None:
    hook = {"type": "zoom", "settings": {"url": receiver.url("/chat/webhooks/incomingwebhook/E1"),
                                         "token": "zoom-verify"}}
    incident_id = await page(capi, owner, [layer(webhooks=[hook])])
    [got] = receiver.take()
    assert got.path == "/chat/webhooks/incomingwebhook/E1" and got.query == {"format": "full"}
    assert got.headers["authorization"] == "zoom-verify"
    body = json.loads(got.body)
    assert set(body) == {"content"} and set(body["content"]) == {"head", "body"}
    assert set(body["content"]["head"]) == {"text"} and body["content"]["head"]["text"]
    [message] = body["content"]["body"]
    assert message["type"] == "message" and set(message) == {"type", "text"}
    assert "checkout latency high" in got.body.decode()
    assert (await deliveries(capi, incident_id))["zoom"].status == "success"


async def test_follow_preference_pages_by_sms_voice_email_and_telegram_for_critical(
        capi: Api, owner: Person, fake_twilio: FakeTwilio, smtp_sink: SmtpSink,
        receiver: Receiver) -> None:
    await ok(capi, "/member/info/reset", {"member_id": owner.person_id, "phone": "555 0100",
                                          "country_code": "+1"}, owner.key)
    await ok(capi, "/member/notify/reset", {
        "im": {"telegram": "424242"}, "critical": ["sms", "voice", "email", "telegram"],
        "warning": ["email"]}, owner.key)
    incident_id = await page(capi, owner, [layer(person_ids=[owner.person_id])])

    got = {r.kind: r for r in fake_twilio.take()}
    assert set(got) == {"Messages", "Calls"}
    sms, call = got["Messages"], got["Calls"]
    assert sms.path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"
    assert call.path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Calls.json"
    auth = "Basic " + base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
    assert sms.headers["authorization"] == auth and call.headers["authorization"] == auth
    assert sms.headers["content-type"] == "application/x-www-form-urlencoded"
    assert set(sms.form) == {"To", "From", "Body"} and set(call.form) == {"To", "From", "Twiml"}
    assert sms.form["To"] == call.form["To"] == "+15550100"
    assert sms.form["From"] == call.form["From"] == FROM_NUMBER
    assert "Ack: http://dutyline.test/incident/link/" in sms.form["Body"]
    # The call reads the page out inside a one-digit <Gather> whose action is the signed
    # keypress callback (tests/dispatch/test_voice_ack.py presses it).
    [gather, goodbye] = list(ElementTree.fromstring(call.form["Twiml"]))
    assert gather.tag == "Gather" and goodbye.tag == "Say"
    assert (gather.attrib["numDigits"], gather.attrib["method"]) == ("1", "POST")
    assert gather.attrib["action"].startswith("http://dutyline.test/incident/voice/")
    [said] = list(gather)
    assert said.tag == "Say" and said.attrib == {"loop": "2"}
    assert "checkout latency high" in str(said.text) and "Press 1" in str(said.text)

    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["owner@acme.example"]
    [tg] = receiver.take()
    assert tg.path == f"/tg/bot{BOT_TOKEN}/sendMessage"
    tg_body = json.loads(tg.body)
    assert tg_body["chat_id"] == 424242 and "Acknowledge: http://dutyline.test/" in tg_body["text"]

    states = {c: d.status for c, d in (await deliveries(capi, incident_id)).items()}
    assert states == {"sms": "success", "voice": "success", "email": "success",
                      "telegram": "success"}
    feed = (await capi.call("/incident/feed", {"incident_id": incident_id, "limit": 100},
                            key=owner.key)).data["items"]
    msg_ids = {e["detail"]["by"]: e["detail"]["msg_id"] for e in feed if e["type"] == "i_notify"}
    assert msg_ids["sms"] == sms.sid and msg_ids["voice"] == call.sid

    # A Warning follows the warning list: e-mail only, no phone.
    incident_id = await page(capi, owner, [layer(person_ids=[owner.person_id])],
                             name="Search", status="Warning")
    assert set(await deliveries(capi, incident_id)) == {"email"}
    assert fake_twilio.take() == []


async def test_sms_without_a_phone_or_with_bad_credentials_fails_without_retrying(
        capi: Api, owner: Person, fake_twilio: FakeTwilio, settings: Settings,
        clock: FakeClock, smtp_sink: SmtpSink) -> None:
    await ok(capi, "/member/notify/reset", {"critical": ["sms"]}, owner.key)
    incident_id = await page(capi, owner, [layer(person_ids=[owner.person_id])])
    sms = (await deliveries(capi, incident_id))["sms"]
    assert (sms.status, sms.attempts) == ("failed", 1)
    assert sms.last_error == "the recipient has no phone number"
    await ok(capi, "/member/info/reset", {"member_id": owner.person_id,
                                          "phone": "+44 20 7946 0000"}, owner.key)
    async with make_api(settings.with_(
            twilio_api_url=fake_twilio.base_url, twilio_account_sid=ACCOUNT_SID,
            twilio_auth_token="wrong", twilio_from_number=FROM_NUMBER,
            smtp_url=smtp_sink.url), clock=clock) as wrong:
        incident_id = await page(wrong, owner, [layer(person_ids=[owner.person_id])],
                                 name="Wrong")
        sms = (await deliveries(wrong, incident_id))["sms"]
    assert (sms.status, sms.attempts, sms.last_error) == ("failed", 1, "HTTP 401")
    assert fake_twilio.refused == 1 and fake_twilio.take() == []


async def test_a_gateway_error_is_retried_and_then_delivered(
        capi: Api, owner: Person, fake_twilio: FakeTwilio, clock: FakeClock) -> None:
    await ok(capi, "/member/info/reset", {"member_id": owner.person_id,
                                          "phone": "+33 1 23 45 67 89"}, owner.key)
    await ok(capi, "/member/notify/reset", {"critical": ["sms"]}, owner.key)
    fake_twilio.fail_next = 1
    incident_id = await page(capi, owner, [layer(person_ids=[owner.person_id])])
    assert fake_twilio.take() == []
    assert (await deliveries(capi, incident_id))["sms"].status == "pending"
    clock.advance(10)
    await run_jobs(capi)
    [sms] = fake_twilio.take()
    assert sms.form["To"] == "+33123456789"
    d = (await deliveries(capi, incident_id))["sms"]
    assert (d.status, d.attempts) == ("success", 2)


async def test_member_notify_info_and_reset(capi: Api, owner: Person) -> None:
    mate = await new_member(capi, owner, name="Mate")
    info = await ok(capi, "/member/notify/info", {}, mate.key)
    assert info["member_id"] == mate.person_id and info["im"] == {}
    assert (info["critical"], info["warning"], info["info"]) == (["email"],) * 3
    assert info["updated_at"] == 0
    await ok(capi, "/member/notify/reset", {"critical": ["voice", "sms", "voice"],
                                            "im": {"telegram": " 77 "}}, mate.key)
    info = await ok(capi, "/member/notify/info", {"member_id": mate.person_id}, owner.key)
    assert info["critical"] == ["voice", "sms"] and info["warning"] == ["email"]
    assert info["im"] == {"telegram": "77"} and info["updated_at"] > 0
    # Omitted fields stay; an empty list means the default again.
    await ok(capi, "/member/notify/reset", {"critical": []}, mate.key)
    info = await ok(capi, "/member/notify/info", {}, mate.key)
    assert info["critical"] == ["email"] and info["im"] == {"telegram": "77"}

    bad = await capi.call("/member/notify/reset", {"warning": ["email", "pigeon"]}, key=mate.key)
    assert bad.code == "InvalidParameter" and "warning[1]" in bad.message
    bad = await capi.call("/member/notify/reset", {"im": {"icq": "1"}}, key=mate.key)
    assert bad.code == "InvalidParameter" and "im.icq" in bad.message
    # A plain member neither reads nor sets someone else's; the owner (account_manage) may.
    denied = await capi.call("/member/notify/info", {"member_id": owner.person_id},
                             key=mate.key)
    assert denied.code == "AccessDenied"
    denied = await capi.call("/member/notify/reset", {"member_id": owner.person_id,
                                                      "critical": ["sms"]}, key=mate.key)
    assert denied.code == "AccessDenied"
    await ok(capi, "/member/notify/reset", {"member_id": mate.person_id, "info": ["sms"]},
             owner.key)
    assert (await ok(capi, "/member/notify/info", {}, mate.key))["info"] == ["sms"]
    # Another account's member: not found.
    other = await new_account(capi, "Other")
    nope = await capi.call("/member/notify/info", {"member_id": mate.person_id}, key=other.key)
    assert nope.code == "ResourceNotFound"


async def test_member_info_reset(capi: Api, owner: Person) -> None:
    mate = await new_member(capi, owner, name="Mate", email="mate@example.com")
    await ok(capi, "/member/info/reset", {"member_id": mate.person_id, "member_name": "Mate B",
                                          "phone": "+1 555 0199", "time_zone": "Europe/Paris",
                                          "locale": "en-US"}, mate.key)
    [item] = (await ok(capi, "/person/infos", {"person_ids": [mate.person_id]},
                       owner.key))["items"]
    assert item["person_name"] == "Mate B" and item["phone"] == "+1 555 0199"
    assert item["time_zone"] == "Europe/Paris" and item["email"] == "mate@example.com"
    taken = await capi.call("/member/info/reset", {"member_id": mate.person_id,
                                                   "email": "OWNER@acme.example"}, key=mate.key)
    assert taken.code == "InvalidParameter" and "email" in taken.message
    bad = await capi.call("/member/info/reset", {"member_id": mate.person_id,
                                                 "time_zone": "Mars/Olympus"}, key=mate.key)
    assert bad.code == "InvalidParameter" and "time_zone" in bad.message
    bad = await capi.call("/member/info/reset", {"member_id": mate.person_id, "email": "",
                                                 "phone": ""}, key=mate.key)
    assert bad.code == "InvalidParameter"
    denied = await capi.call("/member/info/reset", {"member_id": owner.person_id,
                                                    "member_name": "Hijack"}, key=mate.key)
    assert denied.code == "AccessDenied"
    await ok(capi, "/member/info/reset", {"member_id": mate.person_id,
                                          "email": "mate.b@example.com"}, owner.key)
    other = await new_account(capi, "Other")
    nope = await capi.call("/member/info/reset", {"member_id": mate.person_id,
                                                  "member_name": "Nope"}, key=other.key)
    assert nope.code == "ResourceNotFound"


def test_settings_read_the_twilio_and_telegram_variables_and_hide_the_secrets() -> None:
    s = Settings.from_env({
        "DUTYLINE_TWILIO_API_URL": "http://127.0.0.1:9100/", "DUTYLINE_TWILIO_ACCOUNT_SID": "AC1",
        "DUTYLINE_TWILIO_AUTH_TOKEN": "tw-secret", "DUTYLINE_TWILIO_FROM_NUMBER": "+15005550006",
        "DUTYLINE_TELEGRAM_BOT_TOKEN": "tg-secret"})
    assert (s.twilio_api_url, s.twilio_account_sid, s.twilio_auth_token) == (
        "http://127.0.0.1:9100", "AC1", "tw-secret")
    assert s.twilio_from_number == "+15005550006" and s.telegram_bot_token == "tg-secret"
    assert s.telegram_api_url == "https://api.telegram.org"
    assert "tw-secret" not in repr(s) and "tg-secret" not in repr(s)
    default = Settings.from_env({})
    assert default.twilio_api_url == "https://api.twilio.com" and default.twilio_auth_token is None
