"""A page that cannot be sent is never silent: the channels the settings cannot send by are
named at start-up with what to set, a refused or failed delivery is in the incident's feed
and logged with its reason, saving a rule, schedule or contact that cannot be delivered
answers `warnings`, and a test notification tells a member, channel by channel, whether
they are reached."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from dutyline.config import Settings
from dutyline.notify.delivery import tasks, trial
from dutyline.notify.delivery.adapters import needs
from tests.api.test_reference_schemas import check
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
EVERY_VARIABLE = {name: "x1" for need in needs.CONFIGURABLE for name in need.variables}


async def checked(api: Api, path: str, body: dict[str, Any], key: str) -> dict[str, Any]:
    """The answer's body, validated against the reference's schema of the operation."""
    response = await api.raw("POST", path, params={"app_key": key}, json=body)
    assert response.status_code == 200, response.text
    return check(path, response)


# -- start-up ------------------------------------------------------------------------------


def test_startup_names_each_channel_that_cannot_send_and_the_variables_to_set() -> None:
    lines = needs.startup_lines(Settings.from_env({}))
    text = "\n".join(lines)
    assert "e-mail is not configured: set DUTYLINE_SMTP_URL" in text
    assert ("SMS and voice calls is not configured: set DUTYLINE_TWILIO_ACCOUNT_SID, "
            "DUTYLINE_TWILIO_AUTH_TOKEN and DUTYLINE_TWILIO_FROM_NUMBER") in text
    assert "DUTYLINE_TELEGRAM_BOT_TOKEN" in text
    assert "set DUTYLINE_ALLOW_PRIVATE_NETWORK=true" in text
    # One line each for e-mail, phones and Telegram; the chat apps none of which is
    # configured share one; and the private-network refusal.
    assert len(lines) == len(needs.PEOPLE_MEANS) + 2
    [apps] = [line for line in lines if "chat apps" in line]
    assert apps == ("delivery: chat apps not configured: Slack, Feishu, DingTalk, WeCom and "
                    "Zoom (set DUTYLINE_SLACK_*, DUTYLINE_FEISHU_*, DUTYLINE_DINGTALK_*, "
                    "DUTYLINE_WECOM_*, DUTYLINE_ZOOM_*; docs/paging.md)")
    assert all(line.startswith("delivery: ") for line in lines)


def test_startup_names_how_each_configured_channel_sends() -> None:
    settings = Settings.from_env({
        "DUTYLINE_SMTP_URL": "smtp://mailer:s3cret@127.0.0.1:1025?starttls=off&from=p@x.test",
        "DUTYLINE_TWILIO_ACCOUNT_SID": "AC1", "DUTYLINE_TWILIO_AUTH_TOKEN": "t0ken",
        "DUTYLINE_TWILIO_FROM_NUMBER": "+15550100", "DUTYLINE_SLACK_BOT_TOKEN": "xoxb-1"})
    lines = needs.startup_lines(settings)
    assert "delivery: e-mail: via smtp://***@127.0.0.1:1025 (STARTTLS off), from p@x.test" \
        in lines
    assert "delivery: SMS and voice calls: via https://api.twilio.com, from +15550100" in lines
    assert "delivery: the Slack app: via https://slack.com/api" in lines
    [apps] = [line for line in lines if "chat apps" in line]
    assert "Slack" not in apps and apps.startswith("delivery: chat apps not configured: "
                                                   "Feishu, DingTalk, WeCom and Zoom (")
    assert not any(secret in "\n".join(lines) for secret in ("s3cret", "t0ken", "xoxb-1"))
    implicit = Settings.from_env({"DUTYLINE_SMTP_URL": "smtps://relay.example:465"})
    assert ("delivery: e-mail: via smtps://relay.example:465 (TLS), from dutyline@127.0.0.1"
            in needs.startup_lines(implicit))


def test_the_variables_named_are_the_ones_the_settings_read() -> None:
    """Setting exactly the variables the lines name silences them: no line names a
    variable the server would not read."""
    settings = Settings.from_env({**EVERY_VARIABLE, "DUTYLINE_WECOM_AGENT_ID": "7",
                                  "DUTYLINE_ALLOW_PRIVATE_NETWORK": "true"})
    assert not any("not configured" in line or "refused" in line
                   for line in needs.startup_lines(settings))
    only_smtp = Settings.from_env({"DUTYLINE_SMTP_URL": "smtp://127.0.0.1:25"})
    assert not any("SMTP" in line for line in needs.startup_lines(only_smtp))


# -- the incident's feed and the log -------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append(("info", event, fields))

    def warning(self, event: str, **fields: Any) -> None:
        self.lines.append(("warning", event, fields))

    def exception(self, event: str, **fields: Any) -> None:
        self.lines.append(("error", event, fields))


@pytest.fixture
async def bare_api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    """The server as `make serve` starts it: no SMTP, private addresses refused."""
    async with make_api(settings.with_(allow_private_network=False, smtp_url=None),
                        clock=clock) as client:
        yield client


async def test_an_unsent_page_is_in_the_feed_with_its_reason_and_logged_as_a_warning(
        bare_api: Api, settings: Settings, clock: FakeClock, receiver: Receiver,
        monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = Recorder()
    monkeypatch.setattr(tasks, "log", recorded)
    # The rule was saved while private addresses were allowed (a loopback webhook is refused
    # when saved otherwise); the operator has turned the switch off since.
    async with make_api(settings.with_(allow_private_network=True), clock=clock) as opened:
        owner = await new_account(opened, "Quiet")
        channel_id = await make_channel(opened, owner, "Checkout")
        await create_rule(opened, owner, rule_body(channel_id, [layer(
            person_ids=[owner.person_id], by={"critical": ["email"], "warning": ["email"],
                                              "info": ["email"]},
            webhooks=[{"type": "custom", "settings": {"url": receiver.url("/hook")}}])]))
        integration_key = await make_integration(opened, owner, channel_id)
    assert (await push(bare_api, integration_key)).status == 200
    now = int(clock.now())
    items = (await bare_api.call("/incident/list", {"start_time": now - 60,
                                                    "end_time": now + 60},
                                 key=owner.key)).data["items"]
    [incident_id] = [i["incident_id"] for i in items if i["channel_id"] == channel_id]
    await run_jobs(bare_api)
    assert receiver.take() == []  # refused before any connection
    feed = await checked(bare_api, "/incident/feed", {"incident_id": incident_id, "limit": 100},
                         owner.key)
    notes = [e["detail"] for e in feed["data"]["items"] if e["type"] == "i_notify"]
    by = {n["by"]: n for n in notes}
    assert by["email"]["status"] == "failed"
    [person] = by["email"]["persons"]
    assert person["person_id"] == owner.person_id
    assert "DUTYLINE_SMTP_URL" in person["failed_reason"]
    [robot] = by["webhook"]["robots"]
    assert robot["failed_reason"].startswith("refused by the outbound guard: ")
    assert "loopback" in robot["failed_reason"]
    failed = {f["channel"]: (level, f) for level, event, f in recorded.lines
              if event == "notify.delivery.failed"}
    assert set(failed) == {"email", "webhook"}
    assert all(level == "warning" for level, _ in failed.values())
    assert "DUTYLINE_SMTP_URL" in failed["email"][1]["reason"]
    assert failed["email"][1]["person_id"] == owner.person_id
    assert failed["webhook"][1]["incident_id"] == incident_id
    assert "outbound guard" in failed["webhook"][1]["reason"]


# -- warnings when saved -------------------------------------------------------------------


async def test_a_rule_that_cannot_be_delivered_is_saved_with_warnings(bare_api: Api) -> None:
    """(A webhook URL the guard refuses is not saved at all: tests/security/outbound.)"""
    owner = await new_account(bare_api, "Rules")
    channel_id = await make_channel(bare_api, owner, "Payments")
    body = rule_body(channel_id, [layer(
        person_ids=[owner.person_id],
        by={"critical": ["sms", "email"], "warning": ["email"], "info": ["slack_app"]},
        emails=["ops@example.com"],
        webhooks=[{"type": "custom", "settings": {"url": "https://hooks.example.com/x"}},
                  {"type": "feishu_app", "settings": {"chat_ids": ["oc_1"]}}])])
    data = (await checked(bare_api, "/channel/escalate/rule/create", body, owner.key))["data"]
    warned = {(w["field"], w["message"].split(":")[0]) for w in data["warnings"]}
    t = "layers[0].target"
    assert warned == {
        (f"{t}.by.critical", "sms"), (f"{t}.by.critical", "email"),
        (f"{t}.by.warning", "email"), (f"{t}.by.info", "slack_app"),
        (f"{t}.emails", "e-mail is not configured"),
        (f"{t}.webhooks[1].type", "the Feishu app is not configured"),
    }
    # Saved all the same.
    info = await bare_api.call("/channel/escalate/rule/info",
                               {"channel_id": channel_id, "rule_id": data["rule_id"]},
                               key=owner.key)
    assert info.status == 200 and len(info.data["layers"][0]["target"]["webhooks"]) == 2
    updated = await bare_api.call("/channel/escalate/rule/update",
                                  {**body, "rule_id": data["rule_id"]}, key=owner.key)
    assert updated.status == 200
    assert {w["field"] for w in updated.data["warnings"]} == {f for f, _ in warned}


async def test_a_rule_the_settings_can_deliver_answers_no_warnings(
        papi: Api, owner: Person, receiver: Receiver) -> None:
    channel_id = await make_channel(papi, owner, "Web")
    body = rule_body(channel_id, [layer(
        person_ids=[owner.person_id], emails=["ops@example.com"],
        webhooks=[{"type": "custom", "settings": {"url": receiver.url("/hook")}}])])
    created = await checked(papi, "/channel/escalate/rule/create", body, owner.key)
    assert set(created["data"]) == {"rule_id", "rule_name"}
    rule_id = await create_rule(papi, owner, body)
    updated = await checked(papi, "/channel/escalate/rule/update",
                            {**body, "rule_id": rule_id}, owner.key)
    assert updated["data"] == {}


async def test_a_schedule_notifying_by_unconfigured_channels_is_saved_with_warnings(
        bare_api: Api) -> None:
    owner = await new_account(bare_api, "Shifts")
    body = {"schedule_name": "Primary", "layers": [], "notify": {
        "by": {"follow_preference": False, "personal_channels": ["email", "telegram"]},
        "webhooks": [{"type": "dingtalk_app", "settings": {"chat_ids": ["c1"]}}]}}
    data = (await checked(bare_api, "/schedule/create", body, owner.key))["data"]
    assert [w["field"] for w in data["warnings"]] == [
        "notify.by.personal_channels[0]", "notify.by.personal_channels[1]",
        "notify.webhooks[0].type"]
    assert "DUTYLINE_TELEGRAM_BOT_TOKEN" in data["warnings"][1]["message"]
    updated = await checked(bare_api, "/schedule/update",
                            {**body, "schedule_id": data["schedule_id"]}, owner.key)
    assert len(updated["data"]["warnings"]) == 3
    quiet = await checked(bare_api, "/schedule/update",
                          {"schedule_id": data["schedule_id"], "description": "x"}, owner.key)
    assert quiet["data"] == {}


async def test_a_contact_nothing_can_page_is_saved_with_warnings(bare_api: Api) -> None:
    owner = await new_account(bare_api, "Contacts")
    data = (await checked(bare_api, "/member/info/reset", {
        "member_id": owner.person_id, "phone": "555 0100", "country_code": "+1"},
        owner.key))["data"]
    [warning] = data["warnings"]
    assert warning["field"] == "phone" and "DUTYLINE_TWILIO_ACCOUNT_SID" in warning["message"]
    prefs = await bare_api.call("/member/notify/reset", {
        "im": {"slack": "U123"}, "critical": ["voice", "email"]}, key=owner.key)
    assert prefs.status == 200
    assert [w["field"] for w in prefs.data["warnings"]] == [
        "critical[0]", "critical[1]", "im.slack"]
    # Saved all the same.
    info = await bare_api.call("/member/notify/info", {}, key=owner.key)
    assert info.data["critical"] == ["voice", "email"] and info.data["im"] == {"slack": "U123"}


async def test_a_contact_the_settings_can_page_answers_no_warnings(
        papi: Api, owner: Person) -> None:
    reset = await checked(papi, "/member/info/reset", {
        "member_id": owner.person_id, "email": "me@acme.example"}, owner.key)
    assert reset["data"] == {}


# -- the test notification -----------------------------------------------------------------


@pytest.fixture
async def tapi(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock, receiver: Receiver,
               fake_twilio: FakeTwilio) -> AsyncIterator[Api]:
    """E-mail to the SMTP sink, SMS and voice to the fake Twilio, the server's Telegram bot
    to the receiver; private addresses refused but for the receiver and the fake Twilio."""
    allowed = [urlsplit(receiver.base_url).netloc, urlsplit(fake_twilio.base_url).netloc]
    async with make_api(settings.with_(
            smtp_url=smtp_sink.url, allow_private_network=False,
            twilio_api_url=fake_twilio.base_url, twilio_account_sid=ACCOUNT_SID,
            twilio_auth_token=AUTH_TOKEN, twilio_from_number=FROM_NUMBER,
            telegram_api_url=receiver.url("/tg"), telegram_bot_token=BOT_TOKEN,
            extra={"outbound_allow_hosts": allowed}), clock=clock) as client:
        yield client


async def test_a_test_notification_reaches_the_member_by_each_channel(
        tapi: Api, owner: Person, smtp_sink: SmtpSink, fake_twilio: FakeTwilio,
        receiver: Receiver) -> None:
    await tapi.call("/member/info/reset", {"member_id": owner.person_id, "phone": "555 0100",
                                           "country_code": "+1"}, key=owner.key)
    await tapi.call("/member/notify/reset", {"im": {"telegram": "424242", "slack": "U1"}},
                    key=owner.key)
    reply = await tapi.call("/member/notify/test", {}, key=owner.key)
    assert reply.status == 200, reply.body
    results = {r["channel"]: r for r in reply.data["results"]}
    assert reply.data["member_id"] == owner.person_id
    # Voice is not called unless chosen or asked for.
    assert set(results) == {"email", "sms", "telegram", "slack"}
    assert {c: r["status"] for c, r in results.items()} == {
        "email": "sent", "sms": "sent", "telegram": "sent", "slack": "skipped"}
    assert "DUTYLINE_SLACK_BOT_TOKEN" in results["slack"]["reason"]
    assert results["sms"]["address"] != "+15550100"  # masked, as on member records
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["owner@acme.example"] and "test notification" in mail.subject
    [sms] = fake_twilio.take()
    assert sms.kind == "Messages" and sms.form["To"] == "+15550100"
    assert "test notification" in sms.form["Body"]
    [tg] = receiver.take()
    assert tg.path == f"/tg/bot{BOT_TOKEN}/sendMessage" and b"424242" in tg.body


async def test_a_test_notification_says_why_a_channel_failed_or_was_skipped(
        tapi: Api, owner: Person, receiver: Receiver, fake_twilio: FakeTwilio) -> None:
    receiver.status = 500
    await tapi.call("/member/notify/reset", {"im": {"telegram": "424242"}}, key=owner.key)
    reply = await tapi.call("/member/notify/test",
                            {"channels": ["telegram", "voice", "zoom"]}, key=owner.key)
    assert reply.status == 200, reply.body
    assert reply.data["results"] == [
        {"channel": "telegram", "status": "failed", "reason": "HTTP 500",
         "address": "424242"},
        {"channel": "voice", "status": "skipped", "reason": "the member has no phone number"},
        {"channel": "zoom", "status": "skipped", "reason": reply.data["results"][2]["reason"]},
    ]
    assert "DUTYLINE_ZOOM_CLIENT_ID" in reply.data["results"][2]["reason"]
    assert fake_twilio.take() == []
    bad = await tapi.call("/member/notify/test", {"channels": ["pigeon"]}, key=owner.key)
    assert bad.status == 400 and bad.body["error"]["code"] == "InvalidParameter"
    assert "channels[0]" in bad.body["error"]["message"]


async def test_testing_another_member_needs_member_management(
        tapi: Api, owner: Person, smtp_sink: SmtpSink, clock: FakeClock) -> None:
    member = await new_member(tapi, owner, name="Plain", email="plain@acme.example")
    denied = await tapi.call("/member/notify/test", {"member_id": owner.person_id},
                             key=member.key)
    assert denied.status == 403
    own = await tapi.call("/member/notify/test", {"channels": ["email"]}, key=member.key)
    assert own.data["results"][0]["status"] == "sent"
    clock.advance(trial.COOLDOWN_S)  # a member's channel is tested once a minute at most
    by_owner = await tapi.call("/member/notify/test",
                               {"member_id": member.person_id, "channels": ["email"]},
                               key=owner.key)
    assert by_owner.data == {"member_id": member.person_id, "results": [
        {"channel": "email", "status": "sent", "address": "plain@acme.example"}]}
    assert [m.rcpt_tos for m in await smtp_sink.wait_for(2)] == [
        ["plain@acme.example"], ["plain@acme.example"]]
    other = await new_account(tapi, "Elsewhere")
    across = await tapi.call("/member/notify/test", {"member_id": other.person_id},
                             key=owner.key)
    assert across.code == "ResourceNotFound"


async def test_a_test_notification_is_audited_and_described(tapi: Api, owner: Person) -> None:
    await tapi.call("/member/notify/test", {"channels": ["email"]}, key=owner.key)
    now = int(tapi.runtime.clock.now())
    audit = await tapi.call("/audit/search", {"start_time": now - 3600, "end_time": now + 3600},
                            key=owner.key)
    assert [d["target_ids"] for d in audit.data["docs"]
            if d["operation"] == "member.notify.test"] == [[str(owner.person_id)]]
    doc = (await tapi.client.get("/openapi.json")).json()
    assert "/member/notify/test" in doc["paths"]
