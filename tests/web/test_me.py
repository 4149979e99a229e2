"""The "Me" page: profile, sessions listed and ended, password change."""

from __future__ import annotations

import re

import pytest

from tests.fixtures.accounts import Person
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
