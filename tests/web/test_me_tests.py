"""The Me page's "Send me a test" buttons: a real e-mail to the SMTP sink, each channel's
outcome shown in place (htmx) or as a message (no JavaScript), and the per-member cooldown
the API's /member/notify/test shares, on the fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.platform import audit_log
from dutyline.notify.delivery import trial
from tests.dispatch.receiver import Receiver, receiver  # noqa: F401  (the fixture)
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio

ME = "/console/me"
HTMX = {"HX-Request": "true"}
BOT_TOKEN = "123456:ABC-server-bot"


@pytest.fixture
async def api(settings: Settings, clock: FakeClock, smtp_sink: SmtpSink,
              receiver: Receiver) -> AsyncIterator[Api]:  # noqa: F811
    """E-mail to the SMTP sink, the server's Telegram bot to the receiver."""
    async with make_api(settings.with_(
            smtp_url=smtp_sink.url, telegram_api_url=receiver.url("/tg"),
            telegram_bot_token=BOT_TOKEN), clock=clock) as client:
        yield client


async def _test(console: Browser, channel: str, *, in_place: bool = True) -> str:
    answer = await console.post(ME + "/test", {"channel": channel},
                                headers=HTMX if in_place else None)
    if not in_place:
        assert answer.status_code == 303, answer.text
        return (await console.get(ME)).text
    assert answer.status_code == 200, answer.text
    return answer.text


async def test_the_button_sends_a_real_email_and_shows_it_sent(
        api: Api, owner: Person, console: Browser, smtp_sink: SmtpSink) -> None:
    page = (await console.get(ME)).text
    assert 'hx-post="/console/me/test" hx-target="#result-email"' in page
    shown = await _test(console, "email")
    assert shown == ('<span class="test-sent">Test by E-mail: sent to owner@acme.example.'
                     '</span>')
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["owner@acme.example"]
    assert mail.subject == trial.SUBJECT and "Acme Owner" in mail.text
    async with api.runtime.db.transaction(write=False) as conn:
        rows = list(await conn.execute(
            select(audit_log.c.operation, audit_log.c.credential, audit_log.c.target_ids)
            .where(audit_log.c.member_id == owner.person_id)))
    assert [tuple(r) for r in rows] == [
        ("member.notify.test", "session", f'["{owner.person_id}"]')]


async def test_without_javascript_the_outcome_comes_back_as_a_message(
        console: Browser, smtp_sink: SmtpSink) -> None:
    page = await _test(console, "email", in_place=False)
    assert "Test by E-mail: sent to owner@acme.example." in page
    assert len(await smtp_sink.wait_for(1)) == 1


async def test_a_channel_that_cannot_be_used_says_why(
        api: Api, owner: Person, console: Browser, receiver: Receiver) -> None:  # noqa: F811
    no_phone = await _test(console, "sms")
    assert "test-skipped" in no_phone
    assert ("Test by SMS: not sent: SMS is not set up on this server; ask your "
            "administrator.") in no_phone
    assert "DUTYLINE_" not in no_phone
    no_handle = await _test(console, "telegram", in_place=False)
    assert ('<p class="flash flash-error" role="status">Test by Telegram: not sent: the '
            "member has no telegram handle") in no_handle
    # With a handle, the bot's send is tried; the receiver's refusal is the reason.
    await console.post(ME + "/contacts", {"im.telegram": "424242"})
    receiver.status = 500
    failed = await _test(console, "telegram")
    assert failed == '<span class="test-failed">Test by Telegram: failed: HTTP 500.</span>'
    assert [r.path for r in receiver.take()] == [f"/tg/bot{BOT_TOKEN}/sendMessage"]


async def test_the_cooldown_refuses_a_second_test_on_the_console_and_the_api(
        api: Api, owner: Person, console: Browser, clock: FakeClock,
        smtp_sink: SmtpSink) -> None:
    await _test(console, "email")
    clock.advance(trial.COOLDOWN_S - 1)
    again = await _test(console, "email")
    assert again == ('<span class="test-failed">Not sent: Too many requests; retry after 1 '
                     'seconds.</span>')
    refused = await console.post(ME + "/test", {"channel": "email"})
    assert refused.status_code == 429
    assert "retry after 1 seconds" in refused.text and "<h1>Acme Owner</h1>" in refused.text
    by_api = await api.call("/member/notify/test", {"channels": ["email"]}, key=owner.key)
    assert by_api.status == 429 and by_api.code == "RequestTooFrequently"

    clock.advance(1)
    assert (await api.call("/member/notify/test", {"channels": ["email"]}, key=owner.key)
            ).data["results"][0]["status"] == "sent"
    # The API's test starts the window over for the console.
    assert "Too many requests" in await _test(console, "email")
    assert len(await smtp_sink.wait_for(2)) == 2
    # Refused tests are not audited; the two sent ones are.
    async with api.runtime.db.transaction(write=False) as conn:
        ops = list(await conn.execute(select(audit_log.c.credential)
                                      .where(audit_log.c.operation == "member.notify.test")))
    assert sorted(r.credential for r in ops) == ["app_key", "session"]


async def test_the_cooldown_is_per_channel_and_counts_only_what_was_tried(
        api: Api, owner: Person, console: Browser, clock: FakeClock,
        receiver: Receiver) -> None:  # noqa: F811
    await _test(console, "email")
    # Telegram has no handle yet: skipped, and not counted.
    assert "not sent: the member has no telegram handle" in await _test(console, "telegram")
    await console.post(ME + "/contacts", {"im.telegram": "424242"})
    # A request with one channel cooling and another to try: the other is sent, the
    # cooling one answered with its wait.
    mixed = await api.call("/member/notify/test", {"channels": ["email", "telegram"]},
                           key=owner.key)
    assert mixed.status == 200
    assert mixed.data["results"] == [
        {"channel": "email", "status": "skipped",
         "reason": "tested less than 60 s ago: try again in 60 s"},
        {"channel": "telegram", "status": "sent", "address": "424242"}]
    assert len(receiver.take()) == 1
    clock.advance(30)
    both = await api.call("/member/notify/test", {"channels": ["email", "telegram"]},
                          key=owner.key)
    assert both.status == 429 and "retry after 30 seconds" in both.body["error"]["message"]
    assert receiver.take() == []
