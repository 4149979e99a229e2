"""Invitations and password resets by e-mail, with one-time links, through the SMTP sink."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.web import console_session
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, set_password, signed_in
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio

EMAIL = "owner@acme.example"
PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase"


@pytest.fixture
def settings(settings: Settings, smtp_sink: SmtpSink) -> Settings:
    return settings.with_(smtp_url=smtp_sink.url, base_url="http://on-call.example")


async def _run_jobs(api: Api) -> list[str]:
    worker = Worker(api.runtime, worker_id="test")
    outcomes: list[str] = []
    while claimed := await worker.claim(10):
        outcomes += [await worker.execute(job) for job in claimed]
    return outcomes


def _link(text: str, kind: str) -> str:
    found = re.search(rf"http://on-call\.example(/console/{kind}/[A-Za-z0-9_-]+)", text)
    assert found, text
    return found[1]


async def _forgot(b: Browser, email: str) -> str:
    await b.get("/console/forgot")
    answer = await b.post("/console/forgot", {"email": email})
    assert answer.status_code == 200
    return answer.text


async def test_a_reset_link_by_mail_changes_the_password_and_ends_sessions(
        api: Api, owner: Person, anonymous: Browser, smtp_sink: SmtpSink) -> None:
    await set_password(api, owner, PASSWORD)
    elsewhere = await signed_in(api, owner)
    known = await _forgot(anonymous, EMAIL.upper())
    unknown = await _forgot(anonymous, "nobody@acme.example")
    sent = "If an account uses this address"
    assert sent in known and sent in unknown
    assert await _run_jobs(api) == ["done"]  # one mail: none for the unknown address
    [message] = await smtp_sink.wait_for(1)
    assert message.rcpt_tos == [EMAIL]
    assert "Reset" in message.subject
    path = _link(message.text, "reset")

    page = await anonymous.get(path)
    assert page.status_code == 200
    short = await anonymous.post(path, {"password": "short", "password_again": "short"})
    assert short.status_code == 400
    done = await anonymous.post(path, {"password": NEW_PASSWORD,
                                       "password_again": NEW_PASSWORD})
    assert done.status_code == 303
    assert done.headers["location"] == "/console/sign-in"
    assert (await anonymous.get(path)).status_code == 404  # once
    assert (await elsewhere.get("/console/incidents")).status_code == 303  # signed out

    b = browser(api)
    await b.get("/console/sign-in")
    old = await b.post("/console/sign-in", {"email": EMAIL, "password": PASSWORD})
    assert old.status_code == 401
    new = await b.post("/console/sign-in", {"email": EMAIL, "password": NEW_PASSWORD})
    assert new.status_code == 303
    await b.aclose()
    await elsewhere.aclose()


async def test_a_reset_link_expires_after_an_hour(
        api: Api, owner: Person, anonymous: Browser, smtp_sink: SmtpSink,
        clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    await _forgot(anonymous, EMAIL)
    await _run_jobs(api)
    [message] = await smtp_sink.wait_for(1)
    clock.advance(3601)
    assert (await anonymous.get(_link(message.text, "reset"))).status_code == 404


async def test_no_reset_mail_for_a_member_without_a_password(
        api: Api, owner: Person, anonymous: Browser, smtp_sink: SmtpSink) -> None:
    await _forgot(anonymous, EMAIL)
    assert await _run_jobs(api) == []
    assert smtp_sink.messages == []


async def test_an_invitation_mails_a_welcome_link(
        api: Api, owner: Person, console: Browser, smtp_sink: SmtpSink) -> None:
    member = await new_member(api, owner, name="Newcomer", email="newcomer@acme.example")
    answer = await console.post(f"/console/members/{member.person_id}/invite")
    assert answer.status_code == 303
    assert await _run_jobs(api) == ["done"]
    [message] = await smtp_sink.wait_for(1)
    assert message.rcpt_tos == ["newcomer@acme.example"]
    path = _link(message.text, "welcome")
    newcomer = browser(api)
    page = await newcomer.get(path)
    assert "Welcome, Newcomer" in page.text
    done = await newcomer.post(path, {"password": NEW_PASSWORD,
                                      "password_again": NEW_PASSWORD})
    assert done.status_code == 303
    async with api.runtime.db.transaction(write=False) as conn:
        rows = list(await conn.execute(select(console_session.c.member_id)))
    assert (member.person_id,) in [tuple(r) for r in rows]
    await newcomer.aclose()


async def test_only_account_managers_invite(api: Api, owner: Person,
                                            smtp_sink: SmtpSink) -> None:
    plain = await new_member(api, owner, name="Plain", builtin="member")
    other = await new_member(api, owner, name="Other", email="other@acme.example")
    b = await signed_in(api, plain)
    refused = await b.post(f"/console/members/{other.person_id}/invite")
    assert refused.status_code == 403
    assert await _run_jobs(api) == []
    await b.aclose()
