"""CSRF on every state-changing console route, and the security headers on every answer."""

from __future__ import annotations

import re

import pytest
from starlette.routing import Route

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, browser, link_for

pytestmark = pytest.mark.anyio


def _console_posts(api: Api) -> list[str]:
    paths = [route.path for route in api.app.router.routes
             if isinstance(route, Route) and route.path.startswith("/console/")
             and "POST" in (route.methods or ())
             and not route.path.startswith("/console/{rest")]
    assert "/console/sign-in" in paths and "/console/sign-out" in paths
    return paths


def _filled(path: str, token: str) -> str:
    return re.sub(r"\{[^}]+\}", token, path)


async def test_every_console_post_refuses_a_missing_or_wrong_csrf_token(
        api: Api, owner: Person, console: Browser, anonymous: Browser) -> None:
    link = (await link_for(api, owner)).rsplit("/", 1)[1]
    await anonymous.get("/console/sign-in")  # has its pre-session cookie and token
    for path in _console_posts(api):
        url = _filled(path, link)
        for b in (console, anonymous):
            missing = await b.post(url, {"email": "x@example.com"}, csrf=False)
            assert missing.status_code == 403, (path, missing.text)
            wrong = await b.post(url, {"csrf_token": "0" * 64})
            assert wrong.status_code == 403, path
            # Another visitor's valid token is no good here either.
            other = console if b is anonymous else anonymous
            stolen = await b.post(url, {"csrf_token": other.csrf_token})
            assert stolen.status_code == 403, path
    # Nothing happened: the session is still there, the link still usable.
    assert (await console.get("/console/incidents")).status_code == 200
    assert (await anonymous.get(f"/console/welcome/{link}")).status_code == 200


async def test_htmx_header_carries_the_token(console: Browser) -> None:
    page = await console.get("/console/incidents")
    assert f'"X-CSRF-Token": "{console.csrf_token}"' in page.text.replace("&#34;", '"')
    done = await console.client.post("/console/sign-out",
                                      headers={"X-CSRF-Token": console.csrf_token})
    assert done.status_code == 303


EXPECTED = {
    "content-security-policy": None,
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
}


def _csp(value: str) -> dict[str, str]:
    return {part.strip().split(" ", 1)[0]: part.strip().partition(" ")[2]
            for part in value.split(";") if part.strip()}


async def test_every_console_answer_has_the_security_headers(
        api: Api, console: Browser, anonymous: Browser) -> None:
    answers = [
        await anonymous.get("/console/sign-in"),
        await anonymous.get("/console/incidents"),  # redirect to sign-in
        await anonymous.get("/console/welcome/no-such-link"),
        await anonymous.post("/console/sign-out", csrf=False),  # 403
        await console.get("/console/incidents"),
        await console.get("/console/no-such-page"),
        await console.get("/console/"),
    ]
    statuses = [a.status_code for a in answers]
    assert statuses == [200, 303, 404, 403, 200, 404, 303]
    for answer in answers:
        for name, value in EXPECTED.items():
            assert name in answer.headers, (answer.url, name)
            if value:
                assert answer.headers[name] == value
        assert answer.headers["cache-control"] == "no-store", answer.url
        csp = _csp(answer.headers["content-security-policy"])
        assert csp["script-src"] == "'self'"
        assert csp["style-src"] == "'self'"
        assert csp["frame-ancestors"] == "'none'"
        assert csp["form-action"] == "'self'"
        assert csp["base-uri"] == "'none'"
        assert csp["object-src"] == "'none'"
        assert "unsafe-inline" not in answer.headers["content-security-policy"]


async def test_pages_have_no_inline_script_or_style(console: Browser) -> None:
    page = await console.get("/console/incidents")
    assert re.findall(r"<script(?![^>]*\bsrc=)", page.text) == []
    assert "<style" not in page.text and " style=" not in page.text
    assert re.search(r"\son[a-z]+=", page.text) is None


async def test_the_layout_has_landmarks_and_a_skip_link(console: Browser) -> None:
    page = (await console.get("/console/incidents")).text
    assert '<a class="skip" href="#main">' in page
    for landmark in ("<header", "<nav", '<main id="main"'):
        assert landmark in page
    for label in ("Incidents", "On call", "Your profile", "Members"):
        assert f">{label}</a>" in page
    assert re.search(r'<form[^>]*method="post"[^>]*action="/console/sign-out"', page)


async def test_an_unknown_console_path_is_a_page_not_the_api_envelope(api: Api) -> None:
    b = browser(api)
    answer = await b.get("/console/nothing/here")
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/html")
    await b.aclose()
