"""The console under hostile or unlucky input: oversized forms, text outside Latin-1 in a
flash message, clients that hang up mid-body, the lock-out behind a proxy and known devices,
and the two-factor enrolment form as a decryption oracle."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import structlog

from dutyline.config import Settings
from dutyline.web.context import MAX_FORM_BYTES
from dutyline.web.routes import all_pages
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, set_password, signed_in

pytestmark = pytest.mark.anyio


T0 = 1_700_000_000.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


@pytest.fixture
async def console(api: Api, owner: Person) -> AsyncIterator[Browser]:
    b = await signed_in(api, owner)
    yield b
    await b.aclose()


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1234567", path)


# --- oversized forms --------------------------------------------------------------------------


@pytest.mark.parametrize("signed", [False, True], ids=["anonymous", "signed-in"])
async def test_every_console_form_answers_413_to_a_body_over_the_limit(
        api: Api, owner: Person, signed: bool) -> None:
    b = await signed_in(api, owner) if signed else browser(api)
    if not signed:
        await b.get("/console/sign-in")  # the pre-session cookie and its CSRF token
    big = {"filler": "x" * (MAX_FORM_BYTES + 1)}
    posts = sorted({p.path for p in all_pages() if p.method == "POST"})
    assert len(posts) >= 7
    answers = {}
    for path in posts:
        page = await b.post(_concrete(path), big)
        answers[path] = page.status_code
        assert page.headers["content-type"].startswith("text/html"), path
        if page.status_code == 413:
            assert "too large" in page.text.lower(), path
    assert answers == dict.fromkeys(posts, 413)
    await b.aclose()


# --- flash messages outside Latin-1 -----------------------------------------------------------


async def test_a_flash_outside_latin1_is_sent_and_shown(console: Browser) -> None:
    done = await console.post("/console/teams/new", {"team_name": "运维团队"},
                              headers={"Accept-Language": "zh-CN"})
    assert done.status_code == 303
    page = await console.get(done.headers["location"], headers={"Accept-Language": "zh-CN"})
    assert page.status_code == 200
    assert "The team 运维团队 is saved." in page.text


async def test_a_localized_flash_in_chinese_is_sent_and_shown(console: Browser) -> None:
    """A refusal the list shows as a flash, in the language the browser asks for."""
    zh = {"Accept-Language": "zh-CN"}
    done = await console.post("/console/incidents/ack", {"incident_id": "no-such-incident"},
                              headers=zh)
    assert done.status_code == 303
    page = await console.get(done.headers["location"], headers=zh)
    assert page.status_code == 200
    assert re.search(r'class="flash flash-error', page.text)
    assert re.search(r"[\u4e00-\u9fff]", page.text)


# --- a client that hangs up while sending its body --------------------------------------------


def _samples(api: Api) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for metric in api.runtime.metrics.registry.collect():
        for s in metric.samples:
            if s.name == "dutyline_requests_total":
                out[(s.labels["operation"], s.labels["code"])] = s.value
    return out


async def _hang_up(api: Api, path: str, *, query: str = "",
                   headers: list[tuple[bytes, bytes]] | None = None) -> list[dict[str, Any]]:
    """POST `path` whose client sends part of its body and then disconnects: what the app
    sent back (nobody reads it)."""
    sent: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = [
        {"type": "http.request", "body": b"team_name=abc&x=", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
        "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
        "query_string": query.encode(), "root_path": "",
        "headers": [(b"host", b"dutyline.test"), (b"content-length", b"1000"),
                    *(headers or [])],
        "client": ("127.0.0.9", 5555), "server": ("dutyline.test", 80),
    }
    await api.app(scope, receive, send)
    return sent


def _errors(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e.get("log_level") in ("error", "critical", "exception")]


async def test_an_api_client_hanging_up_mid_body_is_no_error(api: Api, owner: Person) -> None:
    before = _samples(api)
    with structlog.testing.capture_logs() as logs:
        await _hang_up(api, "/team/list", query=f"app_key={owner.key}",
                       headers=[(b"content-type", b"application/json")])
    assert _errors(logs) == []
    after = _samples(api)
    assert {k: v for k, v in after.items() if k[1] == "InternalError"} == {
        k: v for k, v in before.items() if k[1] == "InternalError"}


async def test_a_console_client_hanging_up_mid_form_is_no_error(
        api: Api, owner: Person) -> None:
    b = await signed_in(api, owner)
    cookies = "; ".join(f"{c.name}={c.value}" for c in b.client.cookies.jar)
    with structlog.testing.capture_logs() as logs:
        sent = await _hang_up(api, "/console/teams/new", headers=[
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"cookie", cookies.encode()), (b"x-csrf-token", b.csrf_token.encode())])
    assert _errors(logs) == []
    assert all(m.get("status", 0) < 500 for m in sent if m["type"] == "http.response.start")
    await b.aclose()


@pytest.fixture
async def behind_proxy(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    """The app behind a reverse proxy at the browsers' address (tests/fixtures/console.py)."""
    async with make_api(settings.with_(trusted_proxies=("127.0.0.7",)), clock=clock) as api:
        yield api


# --- the lock-out: per account, per client, per known device; behind a proxy ---------------

EMAIL = "owner@acme.example"
PASSWORD = "correct horse battery"


async def _sign_in(b: Browser, email: str, password: str, *, via: str | None = None) -> int:
    """A sign-in from this browser; `via`: the client address a proxy forwards."""
    headers = {"X-Forwarded-For": via} if via else {}
    await b.get("/console/sign-in", headers=headers)
    page = await b.post("/console/sign-in", {"email": email, "password": password},
                        headers=headers)
    return page.status_code


async def _failure_subjects(api: Api) -> set[str]:
    from sqlalchemy import select

    from dutyline.db.tables.web import console_sign_in_failure as t

    async with api.runtime.db.transaction(write=False) as conn:
        return set((await conn.execute(select(t.c.subject))).scalars())


async def test_a_forged_forwarding_header_from_a_peer_not_trusted_is_ignored(
        api: Api, owner: Person) -> None:
    await set_password(api, owner, PASSWORD)
    b = browser(api)
    assert await _sign_in(b, "someone@acme.example", "wrong guess!", via="203.0.113.5") == 401
    assert await _failure_subjects(api) == {"email:someone@acme.example", "ip:127.0.0.7"}
    # Every forged address is still the one peer: it is locked as one client.
    for i in range(1, 20):
        assert await _sign_in(b, f"g{i}@acme.example", "wrong guess!",
                              via=f"203.0.113.{i}") == 401
    assert await _sign_in(browser(api), EMAIL, PASSWORD, via="198.51.100.7") == 429


async def test_behind_a_trusted_proxy_one_client_locks_only_itself(
        behind_proxy: Api) -> None:
    api = behind_proxy
    owner = await new_account(api, "Acme")
    await set_password(api, owner, PASSWORD)
    attacker = browser(api)
    for i in range(20):
        assert await _sign_in(attacker, f"g{i}@acme.example", "wrong guess!",
                              via="203.0.113.5") == 401
    assert await _sign_in(attacker, EMAIL, PASSWORD, via="203.0.113.5") == 429
    assert "ip:127.0.0.7" not in await _failure_subjects(api)
    # Someone else behind the same proxy signs in.
    assert await _sign_in(browser(api), EMAIL, PASSWORD, via="198.51.100.7") == 303


async def test_behind_a_trusted_proxy_reset_requests_lock_only_their_client(
        behind_proxy: Api) -> None:
    api = behind_proxy
    flooder, other = browser(api), browser(api)

    async def forgot(b: Browser, email: str, via: str) -> int:
        headers = {"X-Forwarded-For": via}
        await b.get("/console/forgot", headers=headers)
        return (await b.post("/console/forgot", {"email": email}, headers=headers)
                ).status_code

    codes = [await forgot(flooder, f"n{i}@acme.example", "203.0.113.5") for i in range(21)]
    assert codes == [200] * 20 + [429]
    assert await forgot(other, "someone@acme.example", "198.51.100.7") == 200


async def test_reset_requests_for_one_address_are_spaced_out(api: Api,
                                                            clock: FakeClock) -> None:
    codes = []
    for _ in range(4):
        b = browser(api)
        await b.get("/console/forgot")
        codes.append((await b.post("/console/forgot", {"email": EMAIL})).status_code)
    assert codes == [200, 200, 200, 429]
    b = browser(api)
    await b.get("/console/forgot")
    assert (await b.post("/console/forgot", {"email": "other@acme.example"})
            ).status_code == 200


async def test_a_known_device_signs_in_through_a_flood_against_its_account(
        api: Api, owner: Person, clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    mine = browser(api)
    assert await _sign_in(mine, EMAIL, PASSWORD) == 303
    assert mine.cookie("dutyline_device")
    await mine.post("/console/sign-out", {})
    # From the same client address (an office, a proxy): the account and the client locked.
    attacker = browser(api)
    for i in range(20):
        await _sign_in(attacker, EMAIL if i < 6 else f"g{i}@acme.example", "wrong guess!")
    assert await _sign_in(attacker, EMAIL, PASSWORD) == 429
    assert await _sign_in(browser(api), EMAIL, PASSWORD) == 429
    # The owner's own browser is not locked out by others' failures.
    assert await _sign_in(mine, EMAIL, PASSWORD) == 303
    await mine.post("/console/sign-out", {})
    # Its own failures back it off, briefly.
    assert [await _sign_in(mine, EMAIL, "my typo!!!") for _ in range(5)] == [401] * 5
    assert await _sign_in(mine, EMAIL, PASSWORD) == 429
    clock.advance(6)
    assert await _sign_in(mine, EMAIL, PASSWORD) == 303


async def test_a_device_cookie_is_known_only_for_whom_signed_in_and_cannot_be_forged(
        api: Api, owner: Person) -> None:
    await set_password(api, owner, PASSWORD)
    other = await new_account(api, "Globex")
    await set_password(api, other, PASSWORD)
    mine = browser(api)
    assert await _sign_in(mine, EMAIL, PASSWORD) == 303
    await mine.post("/console/sign-out", {})
    for _ in range(5):
        assert await _sign_in(browser(api), "owner@globex.example", "wrong guess!") == 401
    # Known for Acme's owner, not for Globex's: the account's lock holds here too.
    assert await _sign_in(mine, "owner@globex.example", PASSWORD) == 429
    forged = browser(api)
    forged.plant("dutyline_device", "0" * 64 + "." + mine.cookie("dutyline_device")
                 .partition(".")[2])
    for _ in range(5):
        assert await _sign_in(browser(api), EMAIL, "wrong guess!") == 401
    assert await _sign_in(forged, EMAIL, PASSWORD) == 429


def test_serve_leaves_uvicorn_trusting_no_forwarding_header(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn
    from click.testing import CliRunner

    from dutyline.cli import main

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DUTYLINE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path}/d.db")
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    result = CliRunner().invoke(main, ["serve"])
    assert result.exit_code == 0, result.output
    config = uvicorn.Config("dutyline.app:create_app_from_env", **{
        k: v for k, v in seen.items() if k != "timeout_graceful_shutdown"})
    assert config.proxy_headers is False
    assert config.forwarded_allow_ips == ""


# --- two-factor enrolment: no decryption oracle -----------------------------------------------


async def test_the_enrolment_form_opens_nothing_a_client_posts(
        api: Api, owner: Person, console: Browser) -> None:
    await set_password(api, owner, PASSWORD)
    credential = "WEBHOOKCREDENTIALSEALEDBYAPI2345"  # base32: a secret it could pass for
    sealed = api.runtime.secrets.seal(credential)  # as a webhook's stored credential is
    page = await console.get("/console/me/two-factor")
    assert page.status_code == 200
    for field in ("sealed_secret", "nonce", "secret"):
        answer = await console.post("/console/me/two-factor", {field: sealed, "code": "1"})
        assert answer.status_code == 400
        assert credential not in answer.text


async def test_an_enrolment_page_is_bound_to_its_session(
        api: Api, owner: Person, console: Browser, clock: FakeClock) -> None:
    import pyotp

    await set_password(api, owner, PASSWORD)
    page = await console.get("/console/me/two-factor")
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    secret = re.search(r'id="secret">([A-Z2-7]+)<', page.text)
    assert nonce and secret
    other = await signed_in(api, owner)  # another session of the same person
    code = pyotp.TOTP(secret[1]).at(clock.now())
    refused = await other.post("/console/me/two-factor", {"nonce": nonce[1], "code": code})
    assert refused.status_code == 400
    assert secret[1] not in refused.text
    done = await console.post("/console/me/two-factor", {"nonce": nonce[1], "code": code})
    assert done.status_code == 303
    await other.aclose()


def test_a_value_sealed_for_a_purpose_opens_only_for_it() -> None:
    from dutyline.kit.secretbox import SecretBox, SecretBoxError

    box = SecretBox("server-key")
    plain = box.seal("legacy")
    totp = box.seal("JBSWY3DPEHPK3PXP", purpose="console-totp")
    assert box.open(plain) == "legacy"  # values sealed before purposes still open
    assert box.open(totp, purpose="console-totp") == "JBSWY3DPEHPK3PXP"
    for token, purpose in ((totp, ""), (totp, "other"), (plain, "console-totp")):
        with pytest.raises(SecretBoxError):
            box.open(token, purpose=purpose)


async def test_a_second_factor_enrolled_before_purposes_still_signs_in(
        api: Api, owner: Person, clock: FakeClock) -> None:
    import pyotp

    from dutyline.web import repository as web_repo

    await set_password(api, owner, PASSWORD)
    secret = pyotp.random_base32()
    async with api.runtime.db.transaction() as conn:
        await web_repo.set_totp(conn, owner.person_id, sealed_secret=api.runtime.secrets.seal(
            secret), last_step=0, now_s=int(clock.now()))
    b = browser(api)
    assert await _sign_in(b, EMAIL, PASSWORD) == 303
    await b.get("/console/sign-in/code")
    done = await b.post("/console/sign-in/code", {"code": pyotp.TOTP(secret).at(clock.now())})
    assert done.status_code == 303
    assert done.headers["location"] == "/console/incidents"


async def test_a_client_hanging_up_on_a_route_outside_operations_is_no_error(api: Api) -> None:
    # The voice keypress callback reads its form before anything else; whatever route a
    # client hangs up on, the app's own handlers take it quietly.
    before = _samples(api)
    with structlog.testing.capture_logs() as logs:
        sent = await _hang_up(api, "/incident/voice/anytoken", headers=[
            (b"content-type", b"application/x-www-form-urlencoded")])
    assert _errors(logs) == []
    # Starlette's last-resort handler answered 500 and raised the disconnect on to the server.
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [400]
    assert _samples(api) == before
