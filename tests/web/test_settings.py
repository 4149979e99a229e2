"""The account's Settings page: name, time zone and language saved through the account
service (audited, with the session as credential), the links' base URL shown read-only, and
what each delivery channel needs with whether this server has it, never a secret."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.platform import account, audit_log
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in

pytestmark = pytest.mark.anyio

PAGE = "/console/settings"
SMTP_PASSWORD = "hunter2-smtp-secret"
TWILIO_TOKEN = "twilio-token-secret"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.with_(
        smtp_url=f"smtp://pager:{SMTP_PASSWORD}@mail.example:587?from=pager@acme.example",
        base_url="http://on-call.example", twilio_account_sid="AC0001",
        twilio_auth_token=TWILIO_TOKEN, twilio_from_number="+15550100")


def text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


async def _account(api: Api, account_id: int) -> Any:
    async with api.runtime.db.transaction(write=False) as conn:
        return (await conn.execute(select(account).where(
            account.c.account_id == account_id))).one()


async def _outcomes(api: Api, account_id: int) -> list[tuple[str, str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(
            select(audit_log.c.operation, audit_log.c.credential, audit_log.c.outcome)
            .where(audit_log.c.account_id == account_id, audit_log.c.is_write)
            .order_by(audit_log.c.id))
        return [tuple(r) for r in rows]


def _means(page: str, key: str) -> str:
    found = re.search(rf'<li class="means-{key}">(.*?)</li>', page, re.S)
    assert found, key
    return text(found[1])


async def test_the_page_shows_the_account_the_links_and_the_channels(
        api: Api, owner: Person, console: Browser) -> None:
    page = await console.get(PAGE)
    assert page.status_code == 200
    assert re.search(r'<input id="f-account_name" name="account_name" type="text" '
                     r'value="Acme"', page.text)
    assert '<option value="UTC" selected>UTC</option>' in page.text
    assert '<option value="en-US" selected>English</option>' in page.text
    assert '<p class="secret" id="base-url">http://on-call.example</p>' in page.text
    # Plain HTTP to another machine: said so (the tests' server speaks no TLS).
    assert "base-url-local" not in page.text and 'id="base-url-plain"' in page.text
    # What each channel needs, and whether this server has it (credentials masked).
    email = _means(page.text, "email")
    assert "Ready : via smtp://***@mail.example:587" in email
    assert "An SMTP server to send from" in email and "DUTYLINE_SMTP_URL" in email
    assert "Ready : via https://api.twilio.com, from +15550100" in _means(page.text,
                                                                           "twilio")
    telegram = _means(page.text, "telegram")
    assert "Not set up on this server" in telegram and "@BotFather" in telegram
    assert "Not available" in _means(page.text, "teams")
    for secret in (SMTP_PASSWORD, TWILIO_TOKEN, "test-secret-key"):
        assert secret not in page.text
    # The navigation offers it to the account's managers.
    assert '<a href="/console/settings" aria-current="page">Settings</a>' in page.text


async def test_saving_the_account_s_settings(api: Api, owner: Person,
                                             console: Browser) -> None:
    await console.get(PAGE)
    done = await console.post(PAGE, {"account_name": "  Acme Operations ",
                                     "time_zone": "Europe/Berlin", "locale": "zh-CN"})
    assert done.status_code == 303 and done.headers["location"] == PAGE
    row = await _account(api, owner.account_id)
    assert (row.account_name, row.time_zone, row.locale) == (
        "Acme Operations", "Europe/Berlin", "zh-CN")
    assert await _outcomes(api, owner.account_id) == [
        ("console.account.settings", "session", "OK")]
    page = (await console.get(PAGE)).text
    assert "The account&#39;s settings are saved." in page
    assert '<option value="Europe/Berlin" selected>Europe/Berlin</option>' in page
    # The API's record of the account says the same.
    info = await api.call("/account/info", {}, key=owner.key)
    assert (info.data["account_name"], info.data["time_zone"], info.data["locale"]) == (
        "Acme Operations", "Europe/Berlin", "zh-CN")


# A value the form's record refuses is refused before the service runs (as the API's
# decoding does); one the service refuses is recorded in the audit log.
@pytest.mark.parametrize(("form", "field", "words", "audited"), [
    ({"account_name": "A", "time_zone": "UTC", "locale": "en-US"}, "account_name",
     "2", False),
    ({"account_name": "  A ", "time_zone": "UTC", "locale": "en-US"}, "account_name",
     "must be 2 to 255 characters", True),
    ({"account_name": "Acme Ops", "time_zone": "Mars/Base", "locale": "en-US"}, "time_zone",
     "is not a known time zone", True),
    ({"account_name": "Acme Ops", "time_zone": "Asia/Tokyo", "locale": "fr-FR"}, "locale",
     "is not one of the choices", False),
])
async def test_errors_are_shown_by_their_field_with_the_input_kept(
        api: Api, owner: Person, console: Browser, form: dict[str, str], field: str,
        words: str, audited: bool) -> None:
    await console.get(PAGE)
    refused = await console.post(PAGE, form)
    assert refused.status_code == 400
    error = re.search(rf'<p class="field-error" id="e-{field}">([^<]+)</p>', refused.text)
    assert error and words in html.unescape(error[1]), refused.text
    assert f'aria-describedby="e-{field} h-{field}"' in refused.text
    if field != "account_name":  # what was typed is kept
        assert f'value="{form["account_name"]}"' in refused.text
    if field == "locale":
        assert '<option value="Asia/Tokyo" selected>' in refused.text
    row = await _account(api, owner.account_id)
    assert (row.account_name, row.time_zone, row.locale) == ("Acme", "UTC", "en-US")
    assert await _outcomes(api, owner.account_id) == (
        [("console.account.settings", "session", "InvalidParameter")] if audited else [])


async def test_a_member_who_does_not_manage_the_account_is_not_allowed(
        api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Plain", builtin="member")
    b = await signed_in(api, plain)
    page = await b.get(PAGE)
    assert page.status_code == 403 and "Not allowed" in page.text
    assert 'href="/console/settings"' not in (await b.get("/console/me")).text
    refused = await b.post(PAGE, {"account_name": "Taken over", "time_zone": "UTC",
                                  "locale": "en-US"})
    assert refused.status_code == 403
    assert (await _account(api, owner.account_id)).account_name == "Acme"
    assert await _outcomes(api, owner.account_id) == [
        ("console.account.settings", "session", "AccessDenied")]
    await b.aclose()


async def test_a_post_without_the_csrf_token_is_refused(api: Api, owner: Person,
                                                         console: Browser) -> None:
    await console.get(PAGE)
    forged = await console.post(PAGE, {"account_name": "Forged", "time_zone": "UTC",
                                       "locale": "en-US"}, csrf=False)
    assert forged.status_code == 403
    assert (await _account(api, owner.account_id)).account_name == "Acme"


async def test_another_account_is_never_changed(api: Api, owner: Person,
                                                other_owner: Person,
                                                console: Browser) -> None:
    await console.get(PAGE)
    await console.post(PAGE, {"account_name": "Acme Two", "time_zone": "Asia/Tokyo",
                              "locale": "en-US", "account_id": str(other_owner.account_id)})
    theirs = await _account(api, other_owner.account_id)
    assert theirs.account_name != "Acme Two" and theirs.time_zone != "Asia/Tokyo"
    assert (await _account(api, owner.account_id)).account_name == "Acme Two"


async def test_hostile_names_are_escaped(api: Api, owner: Person, console: Browser) -> None:
    await console.get(PAGE)
    hostile = '<img src=x onerror="alert(1)">'
    await console.post(PAGE, {"account_name": hostile, "time_zone": "UTC",
                              "locale": "en-US"})
    page = (await console.get(PAGE)).text
    assert (await _account(api, owner.account_id)).account_name == hostile
    assert hostile not in page
    assert 'value="&lt;img src=x onerror=&#34;alert(1)&#34;&gt;"' in page


class TestALocalServer:
    @pytest.fixture
    def settings(self, settings: Settings) -> Settings:
        return settings.with_(smtp_url=None, base_url="http://127.0.0.1:8080")

    async def test_says_links_work_on_this_machine_only(self, console: Browser) -> None:
        page = (await console.get(PAGE)).text
        assert 'id="base-url-local"' in page and "base-url-plain" not in page
        assert "Not set up on this server" in _means(page, "email")


async def test_a_new_account_zone_shows_on_the_next_page(api: Api, owner: Person,
                                                         console: Browser) -> None:
    """Members without a zone of their own read times in the account's, from the next
    page on (the session's entry is read again when the account's row changes)."""
    assert "2023-11-14 22:13 UTC" in (await console.get("/console/me")).text
    await console.get(PAGE)
    await console.post(PAGE, {"account_name": "Acme", "time_zone": "Asia/Tokyo",
                              "locale": "en-US"})
    assert "2023-11-15 07:13 JST" in (await console.get("/console/me")).text
