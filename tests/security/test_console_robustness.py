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
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, signed_in

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
