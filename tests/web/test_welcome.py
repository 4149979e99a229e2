"""One-time welcome links: set a password once, and be signed in."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from dutyline.db.tables.platform import audit_log, member
from dutyline.db.tables.web import console_link
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, link_for

pytestmark = pytest.mark.anyio

PASSWORD = "a long enough secret"


async def _set(b: Browser, path: str, password: str = PASSWORD, again: str | None = None,
               **more: str) -> object:
    await b.get(path)
    return await b.post(path, {"password": password,
                               "password_again": password if again is None else again, **more})


async def test_a_welcome_link_sets_the_password_once_and_signs_in(
        api: Api, owner: Person, anonymous: Browser) -> None:
    path = await link_for(api, owner)
    form = await anonymous.get(path)
    assert form.status_code == 200
    assert "Welcome, Acme Owner" in form.text
    done = await _set(anonymous, path)
    assert done.status_code == 303  # type: ignore[attr-defined]
    assert done.headers["location"] == "/console/incidents"  # type: ignore[attr-defined]
    home = await anonymous.get("/console/incidents")
    assert home.status_code == 200
    assert "Your password is set" in home.text

    # The password works for signing in; the link does not work again.
    other = browser(api)
    await other.get("/console/sign-in")
    signed = await other.post("/console/sign-in", {"email": "owner@acme.example",
                                                   "password": PASSWORD})
    assert signed.status_code == 303
    again = await other.get(path)
    assert again.status_code == 404
    reuse = await other.post(path, {"password": "another long secret",
                                    "password_again": "another long secret"})
    assert reuse.status_code == 404
    await other.aclose()

    async with api.runtime.db.transaction(write=False) as conn:
        rows = list(await conn.execute(select(audit_log.c.operation, audit_log.c.credential)
                                       .where(audit_log.c.member_id == owner.person_id)
                                       .order_by(audit_log.c.id)))
        link_rows = list(await conn.execute(select(console_link)))
    assert [tuple(r) for r in rows] == [("console.password.set", "signed_link"),
                                        ("console.sign-in", "session"),
                                        ("console.sign-in", "session")]
    assert len(link_rows) == 1 and link_rows[0].token_hash not in path


async def test_an_expired_link_is_refused(api: Api, owner: Person, anonymous: Browser,
                                          clock: FakeClock) -> None:
    path = await link_for(api, owner)
    clock.advance(7 * 86_400 + 1)
    assert (await anonymous.get(path)).status_code == 404
    refused = await _set(anonymous, path)
    assert refused.status_code == 404  # type: ignore[attr-defined]
    assert "expired or was already used" in refused.text  # type: ignore[attr-defined]


async def test_a_new_link_retires_the_older_one(api: Api, owner: Person,
                                                anonymous: Browser) -> None:
    first = await link_for(api, owner)
    second = await link_for(api, owner)
    assert (await anonymous.get(first)).status_code == 404
    assert (await anonymous.get(second)).status_code == 200


async def test_a_short_or_mismatched_password_is_shown_by_its_field(
        api: Api, owner: Person, anonymous: Browser) -> None:
    path = await link_for(api, owner)
    short = await _set(anonymous, path, password="short")
    assert short.status_code == 400  # type: ignore[attr-defined]
    text = short.text  # type: ignore[attr-defined]
    assert 'id="e-password"' in text and "at least 10 characters" in text
    assert 'aria-invalid="true"' in text
    assert 'value="short"' not in text  # a password is never typed back into the page
    mismatch = await _set(anonymous, path, again="something else")
    assert mismatch.status_code == 400  # type: ignore[attr-defined]
    assert 'id="e-password_again"' in mismatch.text  # type: ignore[attr-defined]
    # Nothing was used up.
    assert (await anonymous.get(path)).status_code == 200


async def test_an_owner_without_an_email_sets_one(api: Api, owner: Person,
                                                  anonymous: Browser) -> None:
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(member).where(member.c.member_id == owner.person_id)
                           .values(email=""))
    path = await link_for(api, owner)
    form = await anonymous.get(path)
    assert 'name="email"' in form.text
    bad = await _set(anonymous, path, email="not-an-address")
    assert bad.status_code == 400  # type: ignore[attr-defined]
    assert 'id="e-email"' in bad.text  # type: ignore[attr-defined]
    assert 'value="not-an-address"' in bad.text  # type: ignore[attr-defined]
    done = await _set(anonymous, path, email="Boss@Acme.example")
    assert done.status_code == 303  # type: ignore[attr-defined]
    async with api.runtime.db.transaction(write=False) as conn:
        email = (await conn.execute(select(member.c.email).where(
            member.c.member_id == owner.person_id))).scalar_one()
    assert email == "boss@acme.example"
