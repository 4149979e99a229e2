"""Email subscription from the public page, end to end with a real SMTP peer: subscribe ->
confirmation mail -> confirm button -> confirmed; unsubscribe (button and RFC 8058 one-click)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.status_page import status_subscriber
from dutyline.db.tables.work import job
from dutyline.status_page import tokens
from dutyline.status_page.public.routes import COOKIE
from dutyline.status_page.public.subscribe import CONFIRM_MAIL_JOB, RESEND_AFTER_S
from dutyline.work.registry import registry
from dutyline.work.worker import Worker
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.server import free_port
from tests.fixtures.smtp import SmtpSink
from tests.status_page.public_seed import Seeded, parse_html, seed_page

pytestmark = pytest.mark.anyio

ORIGIN = {"Origin": "http://dutyline.test"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
async def sapi(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock) -> AsyncIterator[Api]:
    mail_settings = settings.with_(smtp_url=smtp_sink.url, base_url="https://status.example.com")
    async with make_api(mail_settings, clock=clock) as api:
        yield api


@pytest.fixture
async def page(sapi: Api, clock: FakeClock) -> Seeded:
    return await seed_page(sapi.runtime.db, now_s=int(clock.now()))


async def run_jobs(api: Api) -> list[str]:
    worker = Worker(api.runtime, registry=registry, worker_id="test-worker")
    return [await worker.execute(j) for j in await worker.claim(10)]


async def subscribers(api: Api) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list((await conn.execute(select(status_subscriber))).all())


async def jobs(api: Api) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list((await conn.execute(
            select(job).where(job.c.kind == CONFIRM_MAIL_JOB).order_by(job.c.id))).all())


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def link(text: str, kind: str) -> str:
    match = re.search(rf"https://status\.example\.com/status/acme/{kind}\?token=[\w%-]+", text)
    assert match, text
    return match.group(0)


async def subscribe(api: Api, email: str, **headers: str) -> Any:
    return await api.raw("POST", "/status/acme/subscribe", data={"email": email},
                         headers={**ORIGIN, **headers})


async def test_subscribe_confirm_unsubscribe(
    sapi: Api, page: Seeded, smtp_sink: SmtpSink
) -> None:
    doc = parse_html((await sapi.raw("GET", "/status/acme")).text)
    form = doc.find("form")
    assert form.attrs["action"] == "/status/acme/subscribe" and form.attrs["method"] == "post"
    assert doc.find("label").attrs["for"] == doc.find("input").attrs["id"]

    r = await subscribe(sapi, "  Ann@Example.COM ")
    assert r.status_code == 200, r.text
    assert "Check your inbox" in r.text
    [row] = await subscribers(sapi)
    assert (row.email, row.status, row.source) == ("ann@example.com", "pending", "web")
    assert re.fullmatch(r"[0-9a-f]{64}", row.confirm_token_hash)
    assert row.unsubscribe_token_hash == tokens.unsubscribe_token_hash(
        "test-secret-key", row.subscriber_id)
    assert smtp_sink.messages == []  # sent by the durable job, not inline

    assert await run_jobs(sapi) == ["done"]
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["ann@example.com"]
    assert mail.subject == "Confirm your subscription to Acme Cloud status updates"
    confirm_url = link(mail.text, "confirm")
    unsubscribe_url = link(mail.text, "unsubscribe")
    assert confirm_url.replace("&", "&amp;") in mail.html and unsubscribe_url in mail.html
    assert str(mail.message["List-Unsubscribe"]).strip() == f"<{unsubscribe_url}>"
    assert mail.message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"

    # Tokens are stored hashed: neither the row nor the job's payload holds a working token.
    confirm_token = urlsplit(confirm_url).query.removeprefix("token=")
    [queued] = await jobs(sapi)
    assert confirm_token not in queued.payload and confirm_token not in json.dumps(
        [str(v) for v in row])
    assert row.confirm_token_hash == tokens.token_hash(confirm_token)

    # Opening the link (or a mail scanner prefetching it) only shows a button.
    r = await sapi.raw("GET", path_of(confirm_url))
    assert r.status_code == 200 and "Confirm subscription" in r.text
    assert (await subscribers(sapi))[0].status == "pending"
    button = parse_html(r.text).find("form")
    assert button.attrs["action"] == "/status/acme/confirm"
    hidden = button.find("input", name="token")
    r = await sapi.raw("POST", button.attrs["action"], data={"token": hidden.attrs["value"]},
                       headers=ORIGIN)
    assert r.status_code == 200 and "You are subscribed" in r.text
    [row] = await subscribers(sapi)
    assert row.status == "confirmed" and row.confirm_token_hash == ""
    # Used once.
    assert (await sapi.raw("GET", path_of(confirm_url))).status_code == 404

    r = await sapi.raw("GET", path_of(unsubscribe_url))
    assert r.status_code == 200 and "Press the button" in r.text
    assert (await subscribers(sapi))[0].status == "confirmed"
    button = parse_html(r.text).find("form")
    r = await sapi.raw("POST", button.attrs["action"],
                       data={"token": button.find("input", name="token").attrs["value"]})
    assert r.status_code == 200 and "You are unsubscribed" in r.text
    assert (await subscribers(sapi))[0].status == "unsubscribed"
    r = await sapi.raw("GET", path_of(unsubscribe_url))
    assert r.status_code == 200 and "You are unsubscribed" in r.text


async def test_one_click_unsubscribe(sapi: Api, page: Seeded, smtp_sink: SmtpSink) -> None:
    await subscribe(sapi, "bob@example.com")
    await run_jobs(sapi)
    [mail] = await smtp_sink.wait_for(1)
    url = str(mail.message["List-Unsubscribe"]).strip()[1:-1]
    # RFC 8058: the mailbox provider POSTs to the header's URL, from its own servers.
    r = await sapi.raw("POST", path_of(url), data={"List-Unsubscribe": "One-Click"})
    assert r.status_code == 200
    assert (await subscribers(sapi))[0].status == "unsubscribed"


async def test_cross_site_posts_are_refused(sapi: Api, page: Seeded) -> None:
    r = await subscribe(sapi, "eve@example.com", Origin="https://evil.example")
    assert r.status_code == 403
    r = await sapi.raw("POST", "/status/acme/subscribe", data={"email": "eve@example.com"},
                       headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    # The configured public address is this server's origin too (behind a proxy).
    r = await subscribe(sapi, "eve@example.com", Origin="https://status.example.com")
    assert r.status_code == 200
    assert [s.email for s in await subscribers(sapi)] == ["eve@example.com"]


@pytest.mark.parametrize("email", ["", "nope", "a@b", "a b@example.com", "x@y.z,w@v.u",
                                   "<a@example.com>", "a" * 250 + "@example.com"])
async def test_invalid_addresses(sapi: Api, page: Seeded, email: str) -> None:
    r = await subscribe(sapi, email)
    assert r.status_code == 400 and "valid email address" in r.text
    assert await subscribers(sapi) == []


async def test_form_must_be_form_encoded(sapi: Api, page: Seeded) -> None:
    r = await sapi.raw("POST", "/status/acme/subscribe", json={"email": "a@example.com"},
                       headers=ORIGIN)
    assert r.status_code == 400
    r = await sapi.raw("POST", "/status/acme/subscribe", headers=ORIGIN,
                       content=b"email=" + b"a" * 5000,
                       )
    assert r.status_code == 400  # no content type: refused before reading


async def test_repeat_requests_do_not_flood_a_mailbox(
    sapi: Api, page: Seeded, smtp_sink: SmtpSink, clock: FakeClock
) -> None:
    await subscribe(sapi, "cat@example.com")
    await subscribe(sapi, "cat@example.com")
    assert len(await jobs(sapi)) == 1
    await run_jobs(sapi)
    [first] = await smtp_sink.wait_for(1)
    clock.advance(RESEND_AFTER_S)
    r = await subscribe(sapi, "cat@example.com")
    assert r.status_code == 200
    assert len(await jobs(sapi)) == 2
    await run_jobs(sapi)
    _, second = await smtp_sink.wait_for(2)
    # The newer link replaced the older one.
    old, new = link(first.text, "confirm"), link(second.text, "confirm")
    assert old != new
    assert (await sapi.raw("GET", path_of(old))).status_code == 404
    assert (await sapi.raw("GET", path_of(new))).status_code == 200
    # Same answer for a confirmed address, and no mail.
    await sapi.raw("POST", "/status/acme/confirm", data={"token": path_of(new).split("=")[1]},
                   headers=ORIGIN)
    clock.advance(RESEND_AFTER_S)
    r = await subscribe(sapi, "cat@example.com")
    assert r.status_code == 200 and "Check your inbox" in r.text
    assert len(await jobs(sapi)) == 2
    assert (await subscribers(sapi))[0].status == "confirmed"


async def test_superseded_mail_is_not_sent(
    sapi: Api, page: Seeded, smtp_sink: SmtpSink, clock: FakeClock
) -> None:
    await subscribe(sapi, "dan@example.com")
    clock.advance(RESEND_AFTER_S)
    await subscribe(sapi, "dan@example.com")
    assert await run_jobs(sapi) == ["done", "done"]
    [mail] = await smtp_sink.wait_for(1)
    assert (await sapi.raw("GET", path_of(link(mail.text, "confirm")))).status_code == 200
    assert len(smtp_sink.messages) == 1


async def test_resubscribe_after_unsubscribe(
    sapi: Api, page: Seeded, smtp_sink: SmtpSink
) -> None:
    await subscribe(sapi, "eli@example.com")
    await run_jobs(sapi)
    [mail] = await smtp_sink.wait_for(1)
    await sapi.raw("POST", path_of(link(mail.text, "unsubscribe")))
    assert (await subscribers(sapi))[0].status == "unsubscribed"
    await subscribe(sapi, "eli@example.com")
    [row] = await subscribers(sapi)
    assert row.status == "pending"
    await run_jobs(sapi)
    _, again = await smtp_sink.wait_for(2)
    # Same subscriber, so the same unsubscribe link; a fresh confirmation link.
    assert link(again.text, "unsubscribe") == link(mail.text, "unsubscribe")
    token = path_of(link(again.text, "confirm")).split("=")[1]
    r = await sapi.raw("POST", "/status/acme/confirm", data={"token": token}, headers=ORIGIN)
    assert r.status_code == 200
    assert (await subscribers(sapi))[0].status == "confirmed"


async def test_links_of_one_page_do_not_work_on_another(
    sapi: Api, page: Seeded, smtp_sink: SmtpSink, clock: FakeClock
) -> None:
    await seed_page(sapi.runtime.db, now_s=int(clock.now()), url_name="other")
    await subscribe(sapi, "fay@example.com")
    await run_jobs(sapi)
    [mail] = await smtp_sink.wait_for(1)
    for kind in ("confirm", "unsubscribe"):
        wrong = path_of(link(mail.text, kind)).replace("/status/acme/", "/status/other/")
        assert (await sapi.raw("GET", wrong)).status_code == 404
        assert (await sapi.raw("POST", wrong, headers=ORIGIN)).status_code == 404
    assert (await sapi.raw("GET", "/status/acme/confirm?token=forged")).status_code == 404
    assert (await sapi.raw("POST", "/status/acme/unsubscribe", data={"token": ""})
            ).status_code == 404


async def test_rate_limited_per_page_and_address(
    settings: Settings, smtp_sink: SmtpSink, clock: FakeClock
) -> None:
    limited = settings.with_(smtp_url=smtp_sink.url, rate_limit_per_second=2,
                             rate_limit_per_minute=1000)
    async with make_api(limited, clock=clock) as api:
        await seed_page(api.runtime.db, now_s=int(clock.now()))
        await seed_page(api.runtime.db, now_s=int(clock.now()), url_name="other")
        codes = [(await subscribe(api, f"u{i}@example.com")).status_code for i in range(3)]
        assert codes == [200, 200, 429]
        r = await subscribe(api, "u9@example.com")
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert r.headers["x-ratelimit-limit"] == "2"
        r = await api.raw("POST", "/status/other/subscribe", data={"email": "u3@example.com"},
                          headers=ORIGIN)
        assert r.status_code == 200
        clock.advance(1.5)
        assert (await subscribe(api, "u4@example.com")).status_code == 200


async def test_without_smtp_there_is_no_form(api: Api) -> None:
    await seed_page(api.runtime.db, now_s=int(api.runtime.clock.now()))
    r = await api.raw("GET", "/status/acme")
    assert "subscribe" not in r.text.lower().replace("unsubscribe", "")
    r = await subscribe(api, "a@example.com")
    assert r.status_code == 503 and "does not send email" in r.text


async def test_internal_page_subscription_needs_the_login(
    sapi: Api, clock: FakeClock
) -> None:
    seeded = await seed_page(sapi.runtime.db, now_s=int(clock.now()), url_name="ops",
                             page_type="internal")
    r = await sapi.raw("POST", "/status/ops/subscribe", data={"email": "a@example.com"},
                       headers=ORIGIN)
    assert r.status_code == 401
    r = await sapi.raw("GET", "/status/ops", params={"token": seeded.access_token})
    # The public address is https, so the cookie is Secure (httpx here speaks plain http and
    # would not send it back: hand it over as a browser on https would).
    assert "Secure" in r.headers["set-cookie"]
    sapi.client.cookies.set(COOKIE, seeded.access_token, path="/status/ops")
    r = await sapi.raw("POST", "/status/ops/subscribe", data={"email": "a@example.com"},
                       headers=ORIGIN)
    assert r.status_code == 200


async def test_relay_down_means_the_job_retries(
    settings: Settings, clock: FakeClock, smtp_sink: SmtpSink
) -> None:
    down = settings.with_(smtp_url=f"smtp://127.0.0.1:{free_port()}?starttls=off&timeout=5")
    async with make_api(down, clock=clock) as api:
        await seed_page(api.runtime.db, now_s=int(clock.now()))
        assert (await subscribe(api, "gus@example.com")).status_code == 200
        assert await run_jobs(api) == ["retry"]
        [queued] = await jobs(api)
        assert queued.status == "pending" and "MailError" in queued.last_error
