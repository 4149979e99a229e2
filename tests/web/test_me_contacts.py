"""The Me page's contacts and notification preferences: saved through the API's own
services (what the API then answers), audited as the session, errors by their fields with
what was typed kept, the services' warnings by the contact, CSRF, escaping, labels."""

from __future__ import annotations

import re

import pytest
from markupsafe import escape
from sqlalchemy import select

from dutyline.db.tables.platform import audit_log
from dutyline.kit.channels import IM_PLATFORMS, PERSONAL_CHANNELS
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.console import Browser

pytestmark = pytest.mark.anyio

ME = "/console/me"
HOSTILE = '"><script>alert(1)</script>'


async def _api(api: Api, path: str, body: dict[str, object], owner: Person) -> dict[str, object]:
    reply = await api.call(path, body, key=owner.key)
    assert reply.status == 200, reply.body
    data: dict[str, object] = reply.data
    return data


async def _audit(api: Api, owner: Person) -> list[tuple[str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.credential)
                                  .where(audit_log.c.member_id == owner.person_id)
                                  .order_by(audit_log.c.id))
    return [(r.operation, r.credential) for r in rows]


async def _outcomes(api: Api, owner: Person) -> list[tuple[str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.outcome)
                                  .where(audit_log.c.member_id == owner.person_id)
                                  .order_by(audit_log.c.id))
    return [(r.operation, r.outcome) for r in rows]


def _field(page: str, name: str) -> str:
    found = re.search(rf'<input id="f-{re.escape(name)}"[^>]*>', page)
    assert found, name
    return found[0]


async def test_contacts_saved_on_the_page_are_what_the_api_answers(
        api: Api, owner: Person, console: Browser) -> None:
    page = await console.get(ME)
    assert page.status_code == 200
    assert 'value="owner@acme.example"' in _field(page.text, "email")
    done = await console.post(ME + "/contacts", {
        "email": "Me@Acme.example", "country_code": "+44", "phone": "20 7946 0000",
        "im.slack": "U012AB3CD", "im.telegram": "", "im.zoom": ""})
    assert done.status_code == 303 and done.headers["location"] == ME + "#contacts"

    info = await _api(api, "/member/info", {}, owner)
    assert (info["email"], info["country_code"]) == ("me@acme.example", "+44")
    assert info["phone"].endswith("0000") and "*" in info["phone"]  # type: ignore[attr-defined]
    notify = await _api(api, "/member/notify/info", {}, owner)
    assert notify["im"] == {"slack": "U012AB3CD"}
    # One audit row for the save (one transaction), named after its first write.
    assert await _audit(api, owner) == [("member.info.reset", "session")]

    shown = await console.get(ME)
    assert "Your contacts are saved." in shown.text
    # The person's own phone is edited as saved, not masked.
    assert 'value="20 7946 0000"' in _field(shown.text, "phone")
    assert 'value="U012AB3CD"' in _field(shown.text, "im.slack")

    # Saving the same again writes nothing (and notes no audit entry).
    again = await console.post(ME + "/contacts", {
        "email": "me@acme.example", "country_code": "+44", "phone": "20 7946 0000",
        "im.slack": "U012AB3CD"})
    assert again.status_code == 303
    assert "Nothing changed." in (await console.get(ME)).text
    assert len(await _audit(api, owner)) == 1
    # A handle alone goes through the preferences' service only.
    await console.post(ME + "/contacts", {"im.slack": ""})
    assert (await _api(api, "/member/notify/info", {}, owner))["im"] == {}
    assert (await _audit(api, owner))[1:] == [("member.notify.reset", "session")]


async def test_an_invalid_contact_is_refused_by_its_field_with_the_input_kept(
        api: Api, owner: Person, console: Browser) -> None:
    await console.get(ME)
    bad_email = await console.post(ME + "/contacts", {
        "email": "not an address", "phone": "", "im.slack": "U1"})
    assert bad_email.status_code == 400
    email = _field(bad_email.text, "email")
    assert 'value="not an address"' in email and 'aria-invalid="true"' in email
    assert 'aria-describedby="e-email w-email"' in email  # the error, then the warning
    assert re.search(r'<p class="field-error" id="e-email">[^<]*invalid', bad_email.text)
    # The other typed values are kept too.
    assert 'value="U1"' in _field(bad_email.text, "im.slack")

    bad_phone = await console.post(ME + "/contacts", {"phone": "call me maybe"})
    assert bad_phone.status_code == 400
    phone = _field(bad_phone.text, "phone")
    assert 'value="call me maybe"' in phone
    assert 'aria-describedby="e-phone h-phone"' in phone
    assert 'id="e-phone"' in bad_phone.text and 'id="e-email"' not in bad_phone.text

    # Neither was saved, nor the handle sent with the refused e-mail.
    info = await _api(api, "/member/info", {}, owner)
    assert (info["email"], info.get("phone")) == ("owner@acme.example", None)
    assert (await _api(api, "/member/notify/info", {}, owner))["im"] == {}
    # Each refusal is recorded with its outcome, as the API records one.
    assert await _outcomes(api, owner) == [("member.info.reset", "InvalidParameter")] * 2


async def test_a_contact_past_its_limit_is_refused_by_its_field_as_the_api_refuses_it(
        api: Api, owner: Person, console: Browser) -> None:
    """The page declares no limit: the member and preference services refuse what the API
    refuses, and the page shows it by the field that carried it."""
    await console.get(ME)
    long_email = "e" * 250 + "@acme.example"
    refused = await console.post(ME + "/contacts", {"email": long_email})
    assert refused.status_code == 400
    assert re.search(r'id="e-email">must be at most 255 characters<', refused.text)
    long_handle = "U" * 129
    refused = await console.post(ME + "/contacts", {"im.slack": long_handle})
    assert refused.status_code == 400
    assert re.search(r'id="e-im.slack">must be at most 128 characters<', refused.text)
    assert f'value="{long_handle}"' in _field(refused.text, "im.slack")
    api_says = await api.call("/member/notify/reset", {"im": {"slack": long_handle}},
                              key=owner.key)
    assert (api_says.status, api_says.code) == (400, "InvalidParameter")
    assert (await _api(api, "/member/notify/info", {}, owner))["im"] == {}


async def test_a_contact_this_server_cannot_use_is_saved_with_the_apis_warning(
        api: Api, owner: Person, console: Browser) -> None:
    """The test server sends no e-mail and no SMS: each contact is saved, and the page shows
    by it the warning the API's save answers."""
    by_api = await _api(api, "/member/info/reset", {
        "member_id": owner.person_id, "phone": "+1 555 0100"}, owner)
    [phone_warning] = by_api["warnings"]  # type: ignore[misc]
    handles = await _api(api, "/member/notify/reset", {"im": {"telegram": "4242"}}, owner)
    [telegram_warning] = handles["warnings"]  # type: ignore[misc]
    await console.post(ME + "/contacts", {"phone": "+1 555 0199"})

    page = (await console.get(ME)).text
    phone = re.search(r'<p class="field-warning" id="w-phone">(.*?)</p>', page)
    # The API's warning names the server's setting; the page says it in a person's words.
    assert "DUTYLINE_TWILIO" in phone_warning["message"]
    assert phone and ("SMS is not set up on this server; ask your administrator."
                      in phone[1])
    assert "w-phone" in _field(page, "phone")
    telegram = re.search(r'id="w-im.telegram">(.*?)</p>', page)
    assert telegram and ("Telegram is not set up on this server; ask your administrator."
                         in telegram[1])
    assert telegram_warning["field"] == "im.telegram"
    assert "E-mail is not set up on this server; ask your administrator." in page
    assert "DUTYLINE_" not in page
    assert 'id="w-email"' in page  # no SMTP either
    assert 'id="w-im.slack"' not in page  # no handle, nothing to warn about


async def test_preferences_saved_on_the_page_are_what_the_api_answers(
        api: Api, owner: Person, console: Browser) -> None:
    page = (await console.get(ME)).text
    # Every channel a person can be paged by is offered, under each severity.
    for severity in ("critical", "warning", "info"):
        offered = re.findall(rf'name="{severity}" value="([a-z_]+)"', page)
        assert tuple(offered) == PERSONAL_CHANNELS
    # The default (none chosen: e-mail) shows as chosen.
    assert re.search(r'id="p-info-email" name="info" value="email" checked', page)

    done = await console.client.post(ME + "/notifications", data={
        "csrf_token": console.csrf_token, "critical": ["sms", "voice", "slack_app"],
        "warning": "telegram"})
    assert done.status_code == 303 and done.headers["location"] == ME + "#notifications"
    notify = await _api(api, "/member/notify/info", {}, owner)
    assert (notify["critical"], notify["warning"], notify["info"]) == (
        ["sms", "voice", "slack_app"], ["telegram"], ["email"])
    assert await _audit(api, owner) == [("member.notify.reset", "session")]

    shown = (await console.get(ME)).text
    checked = {s: re.findall(rf'name="{s}" value="([a-z_]+)" checked', shown)
               for s in ("critical", "warning", "info")}
    assert checked == {"critical": ["sms", "voice", "slack_app"], "warning": ["telegram"],
                       "info": ["email"]}
    # The severity's warning (no Twilio here) is tied to its fieldset.
    assert re.search(r'<fieldset class="channels" aria-describedby="w-critical">', shown)
    warned = re.search(r'id="w-critical">(.*?)</p>', shown, re.S)
    assert warned and ("Not set up on this server: SMS, Voice call, Slack (app). Ask your "
                       "administrator.") in warned[1]
    assert "DUTYLINE_" not in shown


async def test_a_channel_no_person_can_be_paged_by_is_refused_by_its_severity(
        api: Api, owner: Person, console: Browser) -> None:
    await console.get(ME)
    refused = await console.client.post(ME + "/notifications", data={
        "csrf_token": console.csrf_token, "critical": ["sms", "webhook"], "info": "voice"})
    assert refused.status_code == 400
    assert re.search(r'<fieldset class="channels invalid" aria-describedby="e-critical',
                     refused.text)
    assert re.search(r'id="e-critical">webhook cannot reach a person', refused.text)
    # What was chosen is kept on the page shown again, and nothing was saved.
    assert re.search(r'name="critical" value="sms" checked', refused.text)
    assert re.search(r'name="info" value="voice" checked', refused.text)
    notify = await _api(api, "/member/notify/info", {}, owner)
    assert notify["critical"] == ["email"] and notify["info"] == ["email"]


@pytest.mark.parametrize("path", ["/contacts", "/notifications", "/test"])
async def test_a_form_without_its_csrf_token_is_refused(
        api: Api, owner: Person, console: Browser, path: str) -> None:
    forged = await console.post(ME + path, {"email": "evil@example.com", "critical": "sms",
                                            "channel": "email"}, csrf=False)
    assert forged.status_code == 403
    wrong = await console.post(ME + path, {"email": "evil@example.com", "csrf_token": "0" * 64})
    assert wrong.status_code == 403
    assert (await _api(api, "/member/info", {}, owner))["email"] == "owner@acme.example"
    assert (await _api(api, "/member/notify/info", {}, owner))["critical"] == ["email"]
    assert await _audit(api, owner) == []


async def test_hostile_values_are_escaped(api: Api, owner: Person, console: Browser) -> None:
    await console.get(ME)
    saved = await console.post(ME + "/contacts", {"im.slack": HOSTILE, "country_code": "<b>"})
    assert saved.status_code == 303
    page = (await console.get(ME)).text
    assert "<script>alert(1)</script>" not in page and "<b>" not in page
    assert escape(HOSTILE) in _field(page, "im.slack")
    # A refused value comes back escaped too, as does a hostile channel name.
    refused = await console.post(ME + "/contacts", {"email": HOSTILE})
    assert refused.status_code == 400
    assert "<script>" not in refused.text
    assert escape(HOSTILE) in _field(refused.text, "email")
    channel = await console.post(ME + "/notifications", {"critical": "<i>x</i>"})
    assert channel.status_code == 400 and "<i>x</i>" not in channel.text
    too_long = await console.post(ME + "/contacts", {"im.zoom": "z" * 129})
    assert too_long.status_code == 400 and 'id="e-im.zoom"' in too_long.text


async def test_every_field_of_the_page_has_a_label(console: Browser) -> None:
    page = (await console.get(ME)).text
    inputs = re.findall(r'<input (?![^>]*type="hidden")[^>]*>', page)
    ids = [re.search(r'id="([^"]+)"', i)[1] for i in inputs]  # type: ignore[index]
    # Name (the profile form), e-mail, country code, phone; the IM accounts; a box per
    # channel and severity.
    assert len(ids) == 4 + len(IM_PLATFORMS) + 3 * len(PERSONAL_CHANNELS)
    for id_ in ids:
        assert f'<label for="{id_}">' in page, id_
    # Each test button names its contact for a screen reader, and has its own form.
    buttons = re.findall(r'<button type="submit" form="test-([a-z_]+)">Send me a test'
                         r'<span class="visually-hidden"> by ([^<]+)</span>', page)
    assert len(buttons) == 2 + len(IM_PLATFORMS)
    for channel, _ in buttons:
        assert f'<form id="test-{channel}" method="post" action="/console/me/test"' in page
