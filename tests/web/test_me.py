"""The "Me" page: profile, sessions listed and ended, password change."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from dutyline.db.tables.platform import audit_log, member
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, browser, set_password, signed_in

pytestmark = pytest.mark.anyio

EMAIL = "owner@acme.example"
PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase"


async def test_me_shows_the_person_and_their_sessions(api: Api, owner: Person,
                                                     console: Browser) -> None:
    other = await signed_in(api, owner)
    page = await console.get("/console/me")
    assert page.status_code == 200
    assert "<h1>Acme Owner</h1>" in page.text
    assert EMAIL in page.text
    ids = re.findall(r'name="session_id" value="([0-9a-f]+)"', page.text)
    assert len(ids) == 2
    assert page.text.count("(this browser)") == 1
    await other.aclose()


async def test_ending_another_session_signs_that_browser_out(api: Api, owner: Person,
                                                             console: Browser) -> None:
    other = await signed_in(api, owner)
    page = (await console.get("/console/me")).text
    rows = re.findall(r'<tr>(.*?)</tr>', page, re.DOTALL)
    target = next(re.search(r'name="session_id" value="([0-9a-f]+)"', r)[1]  # type: ignore[index]
                  for r in rows if "session_id" in r and "(this browser)" not in r)
    done = await console.post("/console/me/sessions/revoke", {"session_id": target})
    assert done.status_code == 303
    assert (await other.get("/console/incidents")).status_code == 303
    assert (await console.get("/console/incidents")).status_code == 200
    # An unknown id, or another person's session, is not found.
    missing = await console.post("/console/me/sessions/revoke", {"session_id": "0" * 20})
    assert missing.status_code == 400
    await other.aclose()


async def test_ending_ones_own_session_signs_out(console: Browser) -> None:
    page = (await console.get("/console/me")).text
    own = re.search(r'\(this browser\).*?name="session_id" value="([0-9a-f]+)"', page,
                    re.DOTALL)
    assert own
    done = await console.post("/console/me/sessions/revoke", {"session_id": own[1]})
    assert done.headers["location"] == "/console/sign-in"
    assert (await console.get("/console/me")).status_code == 303


async def test_changing_the_password_ends_the_other_sessions(api: Api, owner: Person,
                                                             console: Browser) -> None:
    await set_password(api, owner, PASSWORD)
    other = await signed_in(api, owner)
    await console.get("/console/me/password")
    wrong = await console.post("/console/me/password", {
        "current_password": "not it at all", "password": NEW_PASSWORD,
        "password_again": NEW_PASSWORD})
    assert wrong.status_code == 400
    assert 'id="e-current_password"' in wrong.text
    done = await console.post("/console/me/password", {
        "current_password": PASSWORD, "password": NEW_PASSWORD,
        "password_again": NEW_PASSWORD})
    assert done.status_code == 303
    me = await console.get("/console/me")
    assert "1 other session ended" in me.text
    assert (await other.get("/console/me")).status_code == 303
    b = browser(api)
    await b.get("/console/sign-in")
    assert (await b.post("/console/sign-in", {"email": EMAIL, "password": NEW_PASSWORD})
            ).status_code == 303
    await b.aclose()
    await other.aclose()


# --- one's own name and time zone -------------------------------------------------------


async def _profile(api: Api, person_id: int) -> tuple[str, str]:
    async with api.runtime.db.transaction(write=False) as conn:
        row = (await conn.execute(select(member.c.member_name, member.c.time_zone).where(
            member.c.member_id == person_id))).one()
    return row.member_name, row.time_zone


async def _profile_writes(api: Api, account_id: int) -> list[tuple[str, str, str, int]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(
            select(audit_log.c.operation, audit_log.c.outcome, audit_log.c.credential,
                   audit_log.c.member_id)
            .where(audit_log.c.account_id == account_id, audit_log.c.is_write)
            .order_by(audit_log.c.id))
        return [tuple(r) for r in rows]  # type: ignore[misc]


async def test_a_member_changes_their_own_name_and_time_zone(api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Plain Person")  # the read-only Member role
    b = await signed_in(api, plain)
    page = await b.get("/console/me")
    assert page.status_code == 200
    assert 'id="f-member_name"' in page.text and 'value="Plain Person"' in page.text
    # The zone list is zoneinfo's; none chosen yet: the account's.
    assert "<option>Asia/Shanghai</option>" in page.text
    assert '<option value="" selected>' in page.text
    saved = await b.post("/console/me/profile", {"member_name": "Ada Lovelace",
                                                 "time_zone": "Europe/London"})
    assert saved.status_code == 303 and saved.headers["location"] == "/console/me#profile"
    assert await _profile(api, plain.person_id) == ("Ada Lovelace", "Europe/London")
    again = await b.get("/console/me")
    assert "Your name and time zone are saved." in again.text
    assert "<h1>Ada Lovelace</h1>" in again.text
    assert "<option selected>Europe/London</option>" in again.text
    # Back to the account's zone.
    assert (await b.post("/console/me/profile", {"member_name": "Ada Lovelace",
                                                 "time_zone": ""})).status_code == 303
    assert await _profile(api, plain.person_id) == ("Ada Lovelace", "")
    assert await _profile_writes(api, owner.account_id) == [
        ("member.info.reset", "OK", "session", plain.person_id)] * 2
    await b.aclose()


async def test_name_and_time_zone_errors_are_shown_by_their_field(
        api: Api, owner: Person, console: Browser) -> None:
    bad_zone = await console.post("/console/me/profile", {"member_name": "Acme Owner",
                                                          "time_zone": "Mars/Olympus"})
    assert bad_zone.status_code == 400
    error = re.search(r'id="e-time_zone">([^<]*)<', bad_zone.text)
    assert error and error[1] == "is not a known time zone"
    short = await console.post("/console/me/profile", {"member_name": "A",
                                                       "time_zone": "Asia/Tokyo"})
    assert short.status_code == 400
    error = re.search(r'id="e-member_name">([^<]*)<', short.text)
    assert error and error[1] == "must be at least 2 characters"
    assert 'value="A"' in short.text and "<option selected>Asia/Tokyo</option>" in short.text
    long = await console.post("/console/me/profile", {"member_name": "n" * 40})
    assert long.status_code == 400 and "must be at most 39 characters" in long.text
    zh = await console.post("/console/me/profile", {"member_name": "Acme Owner",
                                                    "time_zone": "Mars/Olympus"},
                            headers={"Accept-Language": "zh-CN"})
    assert "不是有效的时区" in zh.text
    assert await _profile(api, owner.person_id) == ("Acme Owner", "")
    # What the service refused is recorded; what the form decoder refused reached no write.
    assert [w[:2] for w in await _profile_writes(api, owner.account_id)] == [
        ("member.info.reset", "InvalidParameter")] * 2


async def test_the_profile_form_changes_only_ones_own_profile(
        api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Plain Person")
    b = await signed_in(api, plain)
    # A member id in the form is no way to reach another member: the form has no such field.
    done = await b.post("/console/me/profile", {"member_name": "Took Over",
                                                "member_id": str(owner.person_id)})
    assert done.status_code == 303
    assert await _profile(api, owner.person_id) == ("Acme Owner", "")
    assert (await _profile(api, plain.person_id))[0] == "Took Over"
    forged = await b.post("/console/me/profile", {"member_name": "x y"}, csrf=False)
    assert forged.status_code == 403
    await b.aclose()
