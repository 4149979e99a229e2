"""Subscriber notifications: the job emails every confirmed subscriber (batched), each email
with its own unsubscribe link, through a real SMTP sink on loopback."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import insert, select

from dutyline.config import Settings
from dutyline.db.tables.status_page import status_subscriber
from dutyline.db.tables.work import job
from dutyline.kit import mail
from dutyline.status_page import notify, tokens
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.smtp import SmtpSink, smtp_sink  # noqa: F401  (the fixture)
from tests.status_page.admin_helpers import Page, make_incident, make_page, ok

pytestmark = pytest.mark.anyio
NOW = 1_700_000_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
async def api(settings: Settings, smtp_sink: SmtpSink,  # noqa: F811
              clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings.with_(smtp_url=smtp_sink.url), clock=clock) as client:
        yield client


async def run_jobs(api: Api) -> list[str]:
    """Run every due job to its outcome, including the successors they enqueue."""
    worker = Worker(api.runtime, worker_id="test")
    outcomes: list[str] = []
    while claimed := await worker.claim(10):
        outcomes.extend([await worker.execute(j) for j in claimed])
    return outcomes


async def subscribe(api: Api, who: Person, page: Page, *recipients: Any) -> None:
    rows = [r if isinstance(r, dict) else {"recipient": r} for r in recipients]
    reply = await ok(api, "/status-page/subscriber/import", {
        "page_id": page.page_id, "method": "email", "subscribers": rows}, who.key)
    assert reply["imported"] == len(rows)


async def pending_jobs(api: Api) -> list[Any]:
    async with api.runtime.db.transaction() as conn:
        return list((await conn.execute(select(job).where(
            job.c.kind == notify.NOTIFY_JOB, job.c.status == "pending"))).all())


async def test_confirmed_subscribers_get_one_email_each_with_their_own_unsubscribe_link(
        api: Api, owner: Person, smtp_sink: SmtpSink) -> None:  # noqa: F811
    page = await make_page(api, owner)
    c0, c1 = page.components
    await subscribe(api, owner, page, "alice@example.com", "bob@example.com",
                    {"recipient": "c0-fan@example.com", "component_ids": [c0]},
                    {"recipient": "c1-fan@example.com", "component_ids": [c1]})
    async with api.runtime.db.transaction() as conn:
        for email, status in (("pending@example.com", "pending"),
                              ("gone@example.com", "unsubscribed")):
            await conn.execute(insert(status_subscriber).values(
                subscriber_id=email[:4].ljust(24, "0"), page_id=page.page_id,
                account_id=owner.account_id, email=email, status=status,
                created_at=NOW, updated_at=NOW))
    await make_incident(api, owner, page, title="Login <b>broken</b>",
                        notify_subscribers=True, updates=[{
                            "description": "We are looking into it.",
                            "component_changes": [{"component_id": c0,
                                                   "status": "degraded"}]}])
    assert smtp_sink.messages == []  # nothing is sent inside the request
    assert await run_jobs(api) == ["done"]
    messages = await smtp_sink.wait_for(3)
    assert sorted(m.rcpt_tos[0] for m in messages) == [
        "alice@example.com", "bob@example.com", "c0-fan@example.com"]

    async with api.runtime.db.transaction() as conn:
        ids = {r.email: r.subscriber_id for r in await conn.execute(select(status_subscriber))}
    base = api.runtime.settings.base_url
    for message in messages:
        recipient = message.rcpt_tos[0]
        assert message.subject == "[Acme Status] New: Login <b>broken</b> (investigating)"
        assert "We are looking into it." in message.text
        assert f"{base}/status/{page.url_name}" in message.text
        assert "Login &lt;b&gt;broken&lt;/b&gt;" in message.html
        link = re.search(r"Unsubscribe: (\S+)", message.text)
        assert link is not None
        url = urlsplit(link.group(1))
        assert f"{url.scheme}://{url.netloc}{url.path}" == (
            f"{base}/status/{page.url_name}/unsubscribe")
        token = parse_qs(url.query)["token"][0]
        assert token == tokens.unsubscribe_token("test-secret-key", ids[recipient])
        assert link.group(1).replace("&", "&amp;") in message.html
    assert len({parse_qs(urlsplit(re.search(r"Unsubscribe: (\S+)", m.text).group(1)).query)[
        "token"][0] for m in messages}) == 3  # type: ignore[union-attr]


async def test_timeline_updates_notify_and_batches_hand_over(
        api: Api, owner: Person, smtp_sink: SmtpSink,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notify, "BATCH", 2)
    page = await make_page(api, owner)
    recipients = [f"user{i}@example.com" for i in range(5)]
    await subscribe(api, owner, page, *recipients)
    change_id = await make_incident(api, owner, page)
    assert await run_jobs(api) == []  # created without notify_subscribers
    await ok(api, "/status-page/change/timeline/create", {
        "page_id": page.page_id, "change_id": change_id, "status": "identified",
        "description": "Found it", "notify_subscribers": True}, owner.key)
    # Five subscribers in batches of two: three jobs, each mailing its own batch.
    assert await run_jobs(api) == ["done", "done", "done"]
    messages = await smtp_sink.wait_for(5)
    assert sorted(m.rcpt_tos[0] for m in messages) == recipients
    assert all(m.subject == "[Acme Status] Update: API errors (identified)" for m in messages)
    assert all("Found it" in m.text for m in messages)


async def test_a_failed_send_hands_over_without_mailing_anyone_twice(
        api: Api, owner: Person, smtp_sink: SmtpSink, clock: FakeClock,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    page = await make_page(api, owner)
    recipients = [f"user{i}@example.com" for i in range(4)]
    await subscribe(api, owner, page, *recipients)
    async with api.runtime.db.transaction() as conn:
        order = [r.email for r in await conn.execute(
            select(status_subscriber.c.email).order_by(status_subscriber.c.subscriber_id))]
    flaky = order[2]
    real_send = mail.send_mail
    failures = {"left": 1}

    async def send(settings: Settings, *, to: str, **kw: Any) -> None:
        if to == flaky and failures["left"]:
            failures["left"] -= 1
            raise mail.MailError("relay said no")
        await real_send(settings, to=to, **kw)

    monkeypatch.setattr(mail, "send_mail", send)
    await make_incident(api, owner, page, notify_subscribers=True)
    assert await run_jobs(api) == ["done"]
    messages = await smtp_sink.wait_for(2)
    assert [m.rcpt_tos[0] for m in messages] == order[:2]
    [successor] = await pending_jobs(api)
    assert successor.run_at > NOW * 1000  # backs off before retrying
    assert await run_jobs(api) == []  # not due yet
    clock.advance(notify.RETRY_BASE_S)
    assert await run_jobs(api) == ["done"]
    messages = await smtp_sink.wait_for(4)
    assert [m.rcpt_tos[0] for m in messages] == order


async def test_nothing_is_sent_for_a_deleted_event_or_without_mail(
        api: Api, owner: Person, smtp_sink: SmtpSink, settings: Settings,  # noqa: F811
        clock: FakeClock) -> None:
    page = await make_page(api, owner)
    await subscribe(api, owner, page, "alice@example.com")
    change_id = await make_incident(api, owner, page, notify_subscribers=True)
    await ok(api, "/status-page/change/delete", {"page_id": page.page_id,
                                                 "change_id": change_id}, owner.key)
    assert await run_jobs(api) == ["done"]
    assert smtp_sink.messages == []

    async with make_api(settings, clock=clock) as unmailed:  # no DUTYLINE_SMTP_URL
        await make_incident(unmailed, owner, page, notify_subscribers=True)
        assert await run_jobs(unmailed) == ["done"]
        assert await pending_jobs(unmailed) == []
    assert smtp_sink.messages == []
