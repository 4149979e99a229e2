"""Delivery: retries with backoff then failed, one delivery never holding up another, the
outbound guard on redirects, chat payloads (Slack, Feishu with signing), chat apps with no
credentials configured, the webhook history (reference schemas), and the signed links'
refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select, update

from dutyline.config import Settings
from dutyline.db.tables.notify import notify_attempt, notify_delivery
from dutyline.db.tables.platform import member
from dutyline.notify.delivery import service as delivery
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
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio


async def page(api: Api, who: Person, layers: list[dict[str, Any]], name: str = "Checkout",
               **extra: Any) -> str:
    channel_id = await make_channel(api, who, name)
    await create_rule(api, who, rule_body(channel_id, layers))
    key = await make_integration(api, who, channel_id)
    assert (await push(api, key, **extra)).status == 200
    now = int(api.runtime.clock.now())
    items = (await api.call("/incident/list", {"start_time": now - 60, "end_time": now + 60},
                            key=who.key)).data["items"]
    [found] = [i for i in items if i["channel_id"] == channel_id]
    await run_jobs(api)
    return str(found["incident_id"])


async def rows(api: Api, table: Any, incident_id: str) -> list[Any]:
    async with api.runtime.db.transaction() as conn:
        return list((await conn.execute(select(table).where(
            table.c.incident_id == incident_id))).all())


async def test_a_failing_receiver_is_retried_with_backoff_then_recorded_failed(
        papi: Api, owner: Person, clock: FakeClock, receiver: Receiver) -> None:
    receiver.status = 500
    hooks = [{"type": "custom", "settings": {"url": receiver.url("/bad")}},
             {"type": "slack", "settings": {"url": receiver.url("/good")}}]
    incident_id = await page(papi, owner, [layer(webhooks=hooks)])
    # Both were attempted once; each is its own delivery.
    first = receiver.take()
    assert sorted(r.path for r in first) == ["/bad", "/good"]
    gaps: list[int] = []
    retried: list[Any] = []
    for _ in range(delivery.MAX_ATTEMPTS - 1):
        [d] = [d for d in await rows(papi, notify_delivery, incident_id) if "bad" in d.address]
        if d.status != "pending":
            break
        due = delivery.retry_delay_s(d.attempts)
        gaps.append(due)
        clock.advance(due - 1)
        await run_jobs(papi)
        assert receiver.take() == []  # not before its time
        clock.advance(1)
        await run_jobs(papi)
        retried += [r for r in receiver.take() if r.path == "/bad"]
    assert gaps == [10, 20, 40, 80]
    assert [r.path for r in retried] == ["/bad"] * (delivery.MAX_ATTEMPTS - 1)
    keys = {r.headers["idempotency-key"] for r in [*first, *retried] if r.path == "/bad"}
    assert len(keys) == 1
    states = {d.channel: d for d in await rows(papi, notify_delivery, incident_id)}
    assert states["webhook"].status == "failed" and states["webhook"].attempts == 5
    assert states["webhook"].last_error == "HTTP 500"
    assert states["slack"].status == "failed"  # the slack receiver answered 500 too
    attempts = [a for a in await rows(papi, notify_attempt, incident_id)
                if a.channel == "webhook"]
    # Rows come back in no set order on PostgreSQL; each attempt is recorded exactly once.
    assert sorted(a.attempt for a in attempts) == [1, 2, 3, 4, 5]
    assert {a.status for a in attempts} == {"failed"} and {a.status_code for a in attempts} == {500}
    clock.advance(3600)
    await run_jobs(papi)
    assert receiver.take() == []
    feed = (await papi.call("/incident/feed", {"incident_id": incident_id, "limit": 100},
                            key=owner.key)).data["items"]
    notes = [e["detail"] for e in feed if e["type"] == "i_notify"]
    robot = next(n for n in notes if n["by"] == "webhook")
    assert robot["robots"][0]["failed_reason"] == "HTTP 500"


async def test_one_slow_or_failing_receiver_does_not_hold_up_another(
        papi: Api, owner: Person, receiver: Receiver, smtp_sink: SmtpSink) -> None:
    receiver.status = 503
    incident_id = await page(papi, owner, [layer(
        emails=["ops@example.com"],
        webhooks=[{"type": "custom", "settings": {"url": receiver.url()}}])])
    [mail] = await smtp_sink.wait_for(1)
    assert mail.rcpt_tos == ["ops@example.com"]
    states = {d.channel: d.status for d in await rows(papi, notify_delivery, incident_id)}
    assert states == {"email": "success", "webhook": "pending"}


@pytest.fixture
async def guarded_api(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock,
                      receiver: Receiver) -> AsyncIterator[Api]:
    """Private addresses refused, except the receiver's own host:port."""
    allowed = [urlsplit(receiver.base_url).netloc]
    async with make_api(settings.with_(allow_private_network=False, smtp_url=smtp_sink.url,
                                       extra={"outbound_allow_hosts": allowed}),
                        clock=clock) as client:
        yield client


async def test_a_redirect_to_a_private_address_is_refused(
        guarded_api: Api, clock: FakeClock, receiver: Receiver) -> None:
    owner = await new_account(guarded_api, "Guarded")
    receiver.redirect_to = "http://169.254.169.254/latest/meta-data/"
    incident_id = await page(guarded_api, owner, [layer(webhooks=[
        {"type": "custom", "settings": {"url": receiver.url("/redirect")}}])])
    assert [r.path for r in receiver.take()] == ["/redirect"]
    [d] = await rows(guarded_api, notify_delivery, incident_id)
    assert d.status == "failed" and d.attempts == 1
    assert "outbound guard" in d.last_error
    # A webhook straight at a private address is refused when the rule is saved
    # (tests/security/test_outbound_urls.py).


async def test_slack_and_feishu_payloads(papi: Api, owner: Person, clock: FakeClock,
                                         receiver: Receiver) -> None:
    incident_id = await page(papi, owner, [layer(webhooks=[
        {"type": "slack", "settings": {"url": receiver.url("/slack")}},
        {"type": "feishu", "settings": {"url": receiver.url("/feishu"),
                                        "sign_secret": "fs-secret"}}])])
    got = {r.path: json.loads(r.body) for r in receiver.take()}
    assert set(got["/slack"]) == {"text"}
    # The rule's (preset) template renders the text: the built-in Slack body.
    assert got["/slack"]["text"].startswith("**New incident: checkout latency high**")
    assert "- Severity: Critical" in got["/slack"]["text"]
    # Its link is absolute, from the server's base URL (a chat has no page to resolve it).
    detail = f"http://dutyline.test/console/incidents/{incident_id}"
    assert got["/slack"]["text"].endswith(f"[Details]({detail})")
    assert detail in got["/feishu"]["content"]["text"]
    fei = got["/feishu"]
    assert fei["msg_type"] == "text" and "checkout latency high" in fei["content"]["text"]
    assert fei["timestamp"] == str(int(clock.now()))
    key = f"{fei['timestamp']}\nfs-secret".encode()
    assert fei["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


async def test_dingtalk_wecom_and_teams_payloads(papi: Api, owner: Person, clock: FakeClock,
                                                 receiver: Receiver) -> None:
    await page(papi, owner, [layer(webhooks=[
        {"type": "dingtalk", "settings": {"url": receiver.url("/ding?access_token=t"),
                                          "sign_secret": "SECx"}},
        {"type": "wecom", "settings": {"url": receiver.url("/wecom")}},
        {"type": "teams", "settings": {"url": receiver.url("/teams")}}])])
    got = {r.path: r for r in receiver.take()}
    ding = json.loads(got["/ding"].body)
    assert ding == {"msgtype": "text", "text": {"content": ding["text"]["content"]}}
    assert "checkout latency high" in ding["text"]["content"]
    assert "Critical" in ding["text"]["content"]
    query = got["/ding"].query
    assert query["access_token"] == "t" and query["timestamp"] == str(int(clock.now() * 1000))
    mac = hmac.new(b"SECx", f"{query['timestamp']}\nSECx".encode(), hashlib.sha256).digest()
    assert query["sign"] == base64.b64encode(mac).decode()
    wecom = json.loads(got["/wecom"].body)
    assert wecom["msgtype"] == "text" and "checkout" in wecom["text"]["content"]
    teams = json.loads(got["/teams"].body)
    [attachment] = teams["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert "checkout" in attachment["content"]["body"][0]["text"]


async def test_chat_apps_without_credentials_are_recorded_failed_with_what_they_need(
        papi: Api, owner: Person) -> None:
    incident_id = await page(papi, owner, [layer(
        person_ids=[owner.person_id],
        by={"critical": ["feishu_app", "slack", "email"]})])
    found = await rows(papi, notify_delivery, incident_id)
    states = {d.channel: (d.status, d.attempts, d.last_error) for d in found}
    assert states["email"] == ("success", 1, "")
    # No app configured on this server: failed at once (no retry), saying what is missing.
    assert states["feishu_app"] == (
        "failed", 1, "feishu_app needs DUTYLINE_FEISHU_APP_ID and DUTYLINE_FEISHU_APP_SECRET")
    assert states["slack"] == ("failed", 1,
                               "slack needs a bot token (DUTYLINE_SLACK_BOT_TOKEN)")


async def test_webhook_history_list_and_detail(papi: Api, owner: Person, clock: FakeClock,
                                               receiver: Receiver) -> None:
    hooks = [{"type": "custom", "settings": {"url": receiver.url(f"/h{i}")}} for i in range(3)]
    incident_id = await page(papi, owner, [layer(webhooks=hooks)])
    now_ms = int(clock.now() * 1000)
    window = {"start_time": now_ms - 60_000, "end_time": now_ms + 60_000}

    async def listing(**body: Any) -> dict[str, Any]:
        response = await papi.raw("POST", "/webhook/history/list",
                                  params={"app_key": owner.key}, json={**window, **body})
        data: dict[str, Any] = check("/webhook/history/list", response)["data"]
        return data

    first = await listing(limit=2)
    assert first["total"] == 3 and len(first["items"]) == 2 and first["search_after_ctx"]
    rest = await listing(limit=2, search_after_ctx=first["search_after_ctx"])
    assert len(rest["items"]) == 1 and rest["search_after_ctx"] == ""
    items = first["items"] + rest["items"]
    assert len({i["event_id"] for i in items}) == 3
    assert {i["status"] for i in items} == {"success"} and items[0]["ref_id"] == incident_id
    assert (await listing(limit=10, status="failed"))["total"] == 0
    assert (await listing(limit=10, ref_id="0" * 24))["total"] == 0
    assert (await listing(limit=10, integration_id=5))["total"] == 0
    assert (await listing(limit=10, event_types=["i_notify"]))["total"] == 3
    assert (await listing(limit=10, status="success", ref_id=incident_id))["total"] == 3
    # Oldest first, a cursor page at a time: the same attempts in the other order.
    oldest = await listing(limit=2, asc=True)
    newest = await listing(limit=2, asc=True, search_after_ctx=oldest["search_after_ctx"])
    assert newest["search_after_ctx"] == ""
    assert ([i["event_id"] for i in oldest["items"] + newest["items"]]
            == [i["event_id"] for i in reversed(items)])

    response = await papi.raw("POST", "/webhook/history/detail", params={"app_key": owner.key},
                              json={"event_id": items[0]["event_id"]})
    detail = check("/webhook/history/detail", response)["data"]
    assert json.loads(detail["request_body"])["incident"]["incident_id"] == incident_id
    assert json.loads(detail["response_body"]) == {"ok": True}
    # Resolved when read, as the reference's detail has them: what the delivery was about.
    assert (detail["ref_title"], detail["channel_name"]) == ("checkout latency high",
                                                             "Checkout")
    # Renamed since: the name of now.
    await papi.call("/channel/update", {"channel_id": items[0]["channel_id"],
                                        "channel_name": "Payments"}, key=owner.key)
    response = await papi.raw("POST", "/webhook/history/detail", params={"app_key": owner.key},
                              json={"event_id": items[0]["event_id"]})
    assert check("/webhook/history/detail", response)["data"]["channel_name"] == "Payments"

    other = await new_account(papi, "Other")
    nope = await papi.call("/webhook/history/detail", {"event_id": items[0]["event_id"]},
                           key=other.key)
    assert nope.code == "ResourceNotFound"
    assert (await papi.call("/webhook/history/list", {**window, "limit": 10},
                            key=other.key)).data["total"] == 0
    bad = await papi.call("/webhook/history/list", {"limit": 10, "start_time": now_ms,
                                                    "end_time": now_ms}, key=owner.key)
    assert bad.code == "InvalidParameter" and "end_time" in bad.message
    bad = await papi.call("/webhook/history/list", {**window, "limit": 10,
                                                    "search_after_ctx": "@@"}, key=owner.key)
    assert bad.code == "InvalidParameter"


async def test_signed_links_refuse_tampering_expiry_and_removed_members(
        papi: Api, owner: Person, clock: FakeClock, smtp_sink: SmtpSink) -> None:
    mate = await new_member(papi, owner, name="Mate", email="mate@example.com")
    incident_id = await page(papi, owner, [layer(person_ids=[owner.person_id, mate.person_id])])
    mails = {m.rcpt_tos[0]: m for m in await smtp_sink.wait_for(2)}

    def path(mail: Any, action: str) -> str:
        url = re.search(rf"{action}: (\S+)", mail.text).group(1)  # type: ignore[union-attr]
        return str(url).removeprefix("http://dutyline.test")

    owner_ack = path(mails["owner@acme.example"], "Acknowledge")
    body, mac = owner_ack.rsplit("/", 1)[1].split(".")
    forged = base64.urlsafe_b64decode(body + "==").decode().replace(
        str(owner.person_id), str(mate.person_id))
    forged_token = base64.urlsafe_b64encode(forged.encode()).decode().rstrip("=") + "." + mac
    for bad in (f"/incident/link/{forged_token}", owner_ack[:-3] + "abc", "/incident/link/x"):
        assert (await papi.raw("POST", bad)).status_code == 404
        assert (await papi.raw("GET", bad)).status_code == 404
    # A removed member's link does nothing.
    async with papi.runtime.db.transaction() as conn:
        await conn.execute(update(member).where(member.c.member_id == mate.person_id)
                           .values(status="deleted"))
    assert (await papi.raw("POST", path(mails["mate@example.com"], "Acknowledge"))
            ).status_code == 403
    # Open shows the incident; resolve closes it as the owner.
    opened = await papi.raw("GET", path(mails["owner@acme.example"], "Open"))
    assert opened.status_code == 200 and "checkout latency high" in opened.text
    assert "<form" not in opened.text
    done = await papi.raw("POST", path(mails["owner@acme.example"], "Resolve"))
    assert done.status_code == 200
    info = (await papi.call("/incident/info", {"incident_id": incident_id},
                            key=owner.key)).data
    assert info["progress"] == "Closed" and info["closer_id"] == owner.person_id
    # Links expire.
    clock.advance(8 * 86_400)
    assert (await papi.raw("GET", owner_ack)).status_code == 404
