"""Signing in and out of the console: sessions, cookies, no enumeration, no fixation."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from sqlalchemy import select

from dutyline.db.tables.web import console_session
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, set_password, signed_in

pytestmark = pytest.mark.anyio

EMAIL = "owner@acme.example"
PASSWORD = "correct horse battery"


async def _sessions(api: Api, person_id: int) -> list[object]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(select(console_session).where(
            console_session.c.member_id == person_id)))


async def _sign_in(b: Browser, email: str, password: str, **more: str) -> httpx.Response:
    await b.get("/console/sign-in")
    return await b.post("/console/sign-in", {"email": email, "password": password, **more})


async def test_sign_in_makes_a_session_row_and_a_safe_cookie(
        api: Api, owner: Person, anonymous: Browser, clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    answer = await _sign_in(anonymous, EMAIL.upper(), PASSWORD,
                            next="/console/incidents?status=open")
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/console/incidents?status=open"
    set_cookie = [v for v in answer.headers.get_list("set-cookie")
                  if v.startswith("dutyline_session=")]
    assert len(set_cookie) == 1
    flags = {part.strip().lower() for part in set_cookie[0].split(";")[1:]}
    assert {"httponly", "path=/", "samesite=lax"} <= flags
    assert "secure" not in flags  # served over plain HTTP here
    token = anonymous.cookie("dutyline_session")
    assert token

    rows = await _sessions(api, owner.person_id)
    assert len(rows) == 1
    row = rows[0]
    assert row.session_hash == hashlib.sha256(token.encode()).hexdigest()  # type: ignore[attr-defined]
    assert token not in str(tuple(row))  # type: ignore[arg-type]
    assert row.created_at == row.last_seen_at == int(clock.now())  # type: ignore[attr-defined]
    assert row.expires_at > row.created_at  # type: ignore[attr-defined]
    assert row.ip == "127.0.0.7"  # type: ignore[attr-defined]
    assert row.user_agent.startswith("python-httpx")  # type: ignore[attr-defined]

    page = await anonymous.get("/console/incidents")
    assert page.status_code == 200
    assert "Acme Owner" in page.text


async def test_sign_in_over_https_uses_a_host_prefixed_secure_cookie(
        api: Api, owner: Person) -> None:
    await set_password(api, owner, PASSWORD)
    transport = httpx.ASGITransport(app=api.app, client=("127.0.0.7", 4444))
    async with httpx.AsyncClient(transport=transport, base_url="https://dutyline.test") as c:
        form = await c.get("/console/sign-in")
        token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
        answer = await c.post("/console/sign-in", data={
            "email": EMAIL, "password": PASSWORD, "csrf_token": token})
    assert answer.status_code == 303
    cookies = [v for v in answer.headers.get_list("set-cookie")
               if v.startswith("__Host-dutyline_session=")]
    assert len(cookies) == 1
    flags = {part.strip().lower() for part in cookies[0].split(";")[1:]}
    assert {"secure", "httponly", "path=/", "samesite=lax"} <= flags
    assert not any("domain=" in f for f in flags)


async def test_wrong_password_and_unknown_email_answer_alike(
        api: Api, owner: Person, anonymous: Browser) -> None:
    await set_password(api, owner, PASSWORD)
    wrong = await _sign_in(anonymous, EMAIL, "not the password")
    unknown = await _sign_in(anonymous, "nobody@acme.example", PASSWORD)
    no_password = await new_member(api, owner, name="Nopass", email="nopass@acme.example")
    never_set = await _sign_in(anonymous, "nopass@acme.example", PASSWORD)
    assert no_password
    for answer, email in ((wrong, EMAIL), (unknown, "nobody@acme.example"),
                          (never_set, "nopass@acme.example")):
        assert answer.status_code == 401
        assert "Wrong e-mail address or password." in answer.text
        # The address typed is kept, the password never is.
        assert f'value="{email}"' in answer.text
        assert PASSWORD not in answer.text and "not the password" not in answer.text
        assert not any(v.startswith("dutyline_session=")
                       for v in answer.headers.get_list("set-cookie"))

    def normalized(r: httpx.Response, email: str) -> str:
        return (r.text.replace(email, "EMAIL")
                .replace(r.text.split('name="csrf_token" value="')[1][:64], "CSRF"))
    assert normalized(wrong, EMAIL) == normalized(unknown, "nobody@acme.example")
    assert await _sessions(api, owner.person_id) == []


async def test_a_disabled_member_cannot_sign_in(api: Api, owner: Person,
                                                anonymous: Browser) -> None:
    member = await new_member(api, owner, name="Gone", email="gone@acme.example")
    await set_password(api, member, PASSWORD)
    removed = await api.call("/member/delete", {"member_id": member.person_id}, key=owner.key)
    assert removed.status == 200, removed.body
    answer = await _sign_in(anonymous, "gone@acme.example", PASSWORD)
    assert answer.status_code == 401


async def test_sign_out_ends_the_session(api: Api, owner: Person, console: Browser) -> None:
    token = console.cookie("dutyline_session")
    assert len(await _sessions(api, owner.person_id)) == 1
    answer = await console.post("/console/sign-out")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/sign-in"
    assert await _sessions(api, owner.person_id) == []
    # The old cookie, sent again, signs nobody in.
    again = browser(api)
    again.plant("dutyline_session", token or "")
    page = await again.get("/console/incidents")
    assert page.status_code == 303
    assert page.headers["location"].startswith("/console/sign-in")
    await again.aclose()


async def test_a_cookie_planted_before_sign_in_is_not_the_session_after(
        api: Api, owner: Person) -> None:
    """Session fixation: a session cookie a browser carried before signing in is never the
    session after; signing in makes a new token."""
    await set_password(api, owner, PASSWORD)
    fresh = browser(api)
    fresh.plant("dutyline_session", "made-up-token")
    signed = await _sign_in(fresh, EMAIL, PASSWORD)
    assert signed.status_code == 303
    new_token = fresh.cookie("dutyline_session")
    assert new_token and new_token != "made-up-token"
    rows = await _sessions(api, owner.person_id)
    assert [r.session_hash for r in rows] == [  # type: ignore[attr-defined]
        hashlib.sha256(new_token.encode()).hexdigest()]
    await fresh.aclose()


async def test_signing_in_over_another_session_replaces_it(api: Api, owner: Person) -> None:
    await set_password(api, owner, PASSWORD)
    intruder = await new_member(api, owner, name="Intruder", email="intruder@acme.example")
    shared = await signed_in(api, intruder)
    planted = shared.cookie("dutyline_session")
    # The sign-in page sends a signed-in visitor home; the form is still reachable by POST.
    answer = await shared.post("/console/sign-in", {"email": EMAIL, "password": PASSWORD})
    assert answer.status_code == 303
    assert shared.cookie("dutyline_session") not in (None, planted)
    assert await _sessions(api, intruder.person_id) == []
    page = await shared.get("/console/incidents")
    assert "Acme Owner" in page.text
    await shared.aclose()


async def test_a_session_ends_after_a_week_unused(api: Api, owner: Person, console: Browser,
                                                  clock: FakeClock) -> None:
    clock.advance(6 * 86_400)
    assert (await console.get("/console/incidents")).status_code == 200  # seen: extended
    clock.advance(6 * 86_400)
    assert (await console.get("/console/incidents")).status_code == 200
    clock.advance(7 * 86_400 + 1)
    gone = await console.get("/console/incidents")
    assert gone.status_code == 303
    assert gone.headers["location"].startswith("/console/sign-in")


async def test_a_removed_member_is_signed_out(api: Api, owner: Person) -> None:
    member = await new_member(api, owner, name="Leaver", email="leaver@acme.example")
    b = await signed_in(api, member)
    assert (await b.get("/console/incidents")).status_code == 200
    removed = await api.call("/member/delete", {"member_id": member.person_id}, key=owner.key)
    assert removed.status == 200
    page = await b.get("/console/incidents")
    assert page.status_code == 303
    assert await _sessions(api, member.person_id) == []
    await b.aclose()


async def test_next_never_leaves_the_console(api: Api, owner: Person,
                                             anonymous: Browser) -> None:
    await set_password(api, owner, PASSWORD)
    for target in ("https://evil.example/", "//evil.example/console/", "/docs"):
        b = browser(api)
        answer = await _sign_in(b, EMAIL, PASSWORD, next=target)
        assert answer.headers["location"] == "/console/incidents"
        await b.aclose()
    gate = await anonymous.client.get("/console/incidents?x=1", follow_redirects=False)
    assert gate.status_code == 303


async def test_the_session_actor_has_the_app_keys_permissions(api: Api, owner: Person) -> None:
    """Same roles, same permissions: the authenticator's answer for the member's app key
    and the console's for their session agree."""
    from dutyline.web import service as signin

    member = await new_member(api, owner, name="Plain", builtin="member")
    runtime = api.runtime
    async with runtime.db.transaction(write=False) as conn:
        by_key = await runtime.authenticator.authenticate(conn, member.key)
        by_session = await signin.caller_of(conn, account_id=member.account_id,
                                            person_id=member.person_id)
        owner_by_session = await signin.caller_of(conn, account_id=owner.account_id,
                                                  person_id=owner.person_id)
    assert by_session is not None and by_key is not None
    assert by_session.permissions == by_key.permissions
    assert by_session.is_admin is by_key.is_admin is False
    assert owner_by_session is not None and owner_by_session.is_admin
