"""Acknowledging a voice page by keypress: the fake Twilio places the call, then performs the
callback Twilio makes when the callee presses a key during the call's <Gather> (form fields
and X-Twilio-Signature as Twilio documents). "1" acknowledges as the person called and the
escalation stops; a forged or unsigned callback, another digit, a stale link or a removed
member acknowledge nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import update

from dutyline.config import Settings
from dutyline.db.tables.platform import member
from tests.dispatch.support import (
    create_rule,
    layer,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_twilio import (
    ACCOUNT_SID,
    AUTH_TOKEN,
    FROM_NUMBER,
    FakeTwilio,
    TwilioRequest,
)
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio


@pytest.fixture
async def vapi(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock,
               fake_twilio: FakeTwilio) -> AsyncIterator[Api]:
    async with make_api(settings.with_(
            smtp_url=smtp_sink.url, base_url="http://dutyline.test",
            twilio_api_url=fake_twilio.base_url, twilio_account_sid=ACCOUNT_SID,
            twilio_auth_token=AUTH_TOKEN, twilio_from_number=FROM_NUMBER),
            clock=clock) as client:
        yield client


async def call_someone(api: Api, owner: Person, people: list[Person], fake: FakeTwilio,
                       **options: Any) -> tuple[str, dict[int, TwilioRequest]]:
    """Page `people` by voice; answers the incident and each person's call."""
    for i, who in enumerate(people):
        reply = await api.call("/member/info/reset", {"member_id": who.person_id,
                                                      "phone": f"+1 555 01{i:02d}"},
                               key=owner.key)
        assert reply.status == 200, reply.body
    channel_id = await make_channel(api, owner)
    await create_rule(api, owner, rule_body(channel_id, [layer(
        person_ids=[p.person_id for p in people], by={"critical": ["voice"]}, **options)]))
    key = await make_integration(api, owner, channel_id)
    assert (await push(api, key)).status == 200
    await run_jobs(api)
    now = int(api.runtime.clock.now())
    [incident] = (await api.call("/incident/list", {"start_time": now - 60,
                                                    "end_time": now + 60},
                                 key=owner.key)).data["items"]
    calls = {c.form["To"]: c for c in fake.take()}
    assert len(calls) == len(people)
    return str(incident["incident_id"]), {
        p.person_id: calls[f"+155501{i:02d}"] for i, p in enumerate(people)}


async def progress(api: Api, owner: Person, incident_id: str) -> str:
    info = await api.call("/incident/info", {"incident_id": incident_id}, key=owner.key)
    return str(info.data["progress"])


async def test_pressing_1_acknowledges_as_the_person_called_and_stops_the_escalation(
        vapi: Api, owner: Person, fake_twilio: FakeTwilio, clock: FakeClock) -> None:
    mate = await new_member(vapi, owner, name="Mate", email="mate@example.com")
    incident_id, calls = await call_someone(vapi, owner, [owner, mate], fake_twilio,
                                            max_times=2, notify_step=5)
    answer = await fake_twilio.press(calls[mate.person_id], "1", vapi.client)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/xml")
    assert "<Say>The incident is acknowledged. Goodbye.</Say>" in answer.text
    assert await progress(vapi, owner, incident_id) == "Processing"
    feed = (await vapi.call("/incident/feed", {"incident_id": incident_id, "limit": 100},
                            key=owner.key)).data["items"]
    assert [e["creator_id"] for e in feed if e["type"] == "i_ack"] == [mate.person_id]
    # Acknowledged: the repeat due in 5 minutes calls nobody.
    clock.advance(5 * 60)
    await run_jobs(vapi)
    assert fake_twilio.take() == []
    # The other callee pressing 1 later changes nothing.
    late = await fake_twilio.press(calls[owner.person_id], "1", vapi.client)
    assert late.status_code == 200 and "already acknowledged or closed" in late.text


async def test_forged_unsigned_or_other_digit_callbacks_acknowledge_nothing(
        vapi: Api, owner: Person, fake_twilio: FakeTwilio, clock: FakeClock) -> None:
    incident_id, calls = await call_someone(vapi, owner, [owner], fake_twilio)
    call = calls[owner.person_id]
    for signature in ("", "bm90IGEgc2lnbmF0dXJl", fake_twilio.signature("http://x/", {})):
        refused = await fake_twilio.press(call, "1", vapi.client, signature=signature)
        assert refused.status_code == 403 and "not signed by Twilio" in refused.text
    # Signed with another account's token: refused too.
    other = FakeTwilio(auth_token="someone-else")
    refused = await other.press(call, "1", vapi.client)
    assert refused.status_code == 403
    other = FakeTwilio(account_sid="AC" + "f" * 32, auth_token=AUTH_TOKEN)
    assert (await other.press(call, "1", vapi.client)).status_code == 403
    # Another key: nothing done, said so.
    wrong = await fake_twilio.press(call, "2", vapi.client)
    assert wrong.status_code == 200 and "Nothing was done" in wrong.text
    assert await progress(vapi, owner, incident_id) == "Triggered"
    # A correctly signed callback for a tampered link token: not found.
    action = str(call.form["Twiml"]).split('action="', 1)[1].split('"', 1)[0]
    tampered = call.form["Twiml"].replace(action, action[:-4] + "AAAA")
    forged_call = TwilioRequest(call.kind, call.path, call.headers,
                                {**call.form, "Twiml": tampered}, call.sid)
    gone = await fake_twilio.press(forged_call, "1", vapi.client)
    assert gone.status_code == 404
    assert await progress(vapi, owner, incident_id) == "Triggered"
    # The link inside expires with the page's other links (7 days).
    clock.advance(8 * 86_400)
    late = await fake_twilio.press(call, "1", vapi.client)
    assert late.status_code == 404 and await progress(vapi, owner, incident_id) == "Triggered"


async def test_a_removed_member_cannot_acknowledge_by_keypress(
        vapi: Api, owner: Person, fake_twilio: FakeTwilio) -> None:
    mate = await new_member(vapi, owner, name="Mate", email="mate@example.com")
    incident_id, calls = await call_someone(vapi, owner, [mate], fake_twilio)
    async with vapi.runtime.db.transaction() as conn:
        await conn.execute(update(member).where(member.c.member_id == mate.person_id)
                           .values(status="deleted"))
    answer = await fake_twilio.press(calls[mate.person_id], "1", vapi.client)
    assert answer.status_code == 200 and "no longer a member" in answer.text
    assert await progress(vapi, owner, incident_id) == "Triggered"


async def test_without_twilio_credentials_a_callback_is_refused(
        api: Api, owner: Person, fake_twilio: FakeTwilio) -> None:
    call = TwilioRequest("Calls", "/", {}, {
        "To": "+15550100", "From": FROM_NUMBER,
        "Twiml": '<Response><Gather numDigits="1" method="POST" '
                 'action="http://dutyline.test/incident/voice/x.y"><Say>x</Say></Gather>'
                 '</Response>'}, "CA1")
    refused = await fake_twilio.press(call, "1", api.client)
    assert refused.status_code == 403
