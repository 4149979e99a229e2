"""The optional TOTP second factor: enrol with a code, then sign-in asks for one."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import pyotp
import pytest
import segno

from dutyline.web import qr
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, set_password

pytestmark = pytest.mark.anyio

EMAIL = "owner@acme.example"
PASSWORD = "correct horse battery"


async def _enrol(console: Browser, clock: FakeClock) -> str:
    page = await console.get("/console/me/two-factor")
    secret = re.search(r'<p class="secret" id="secret">([A-Z2-7]+)</p>', page.text)
    assert secret, page.text
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    assert nonce
    assert "sealed" not in page.text  # the secret never travels back, sealed or not
    wrong = await console.post("/console/me/two-factor",
                               {"nonce": nonce[1], "code": "000000"})
    assert wrong.status_code == 400
    assert 'id="e-code"' in wrong.text
    assert secret[1] in wrong.text  # the same key is shown again to retry with
    code = pyotp.TOTP(secret[1]).at(clock.now())
    done = await console.post("/console/me/two-factor",
                              {"nonce": nonce[1], "code": code})
    assert done.status_code == 303, done.text
    return secret[1]


async def _password_step(api: Api) -> Browser:
    b = browser(api)
    await b.get("/console/sign-in")
    answer = await b.post("/console/sign-in", {"email": EMAIL, "password": PASSWORD,
                                               "next": "/console/me"})
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/console/sign-in/code")
    await b.get("/console/sign-in/code")  # the waiting session's form and token
    return b


async def test_enrolled_sign_in_asks_for_a_code(api: Api, owner: Person, console: Browser,
                                                clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    secret = await _enrol(console, clock)
    assert "Two-factor sign-in is <strong>on</strong>" in (await console.get("/console/me")).text

    b = await _password_step(api)
    half = b.cookie("dutyline_session")
    # Half signed in: nothing but the code's page opens.
    blocked = await b.get("/console/me")
    assert blocked.status_code == 303
    assert blocked.headers["location"] == "/console/sign-in/code"
    form = await b.get("/console/sign-in/code?next=%2Fconsole%2Fme")
    assert form.status_code == 200
    wrong = await b.post("/console/sign-in/code", {"code": "123456", "next": "/console/me"})
    assert wrong.status_code == 400
    clock.advance(60)  # a new step: the enrolment's code was used
    right = await b.post("/console/sign-in/code", {
        "code": pyotp.TOTP(secret).at(clock.now()), "next": "/console/me"})
    assert right.status_code == 303
    assert right.headers["location"] == "/console/me"
    assert b.cookie("dutyline_session") not in (None, half)  # a new token, fully signed in
    assert (await b.get("/console/me")).status_code == 200
    await b.aclose()


async def test_a_code_is_good_once(api: Api, owner: Person, console: Browser,
                                   clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    secret = await _enrol(console, clock)
    clock.advance(60)
    code = pyotp.TOTP(secret).at(clock.now())
    first = await _password_step(api)
    assert (await first.post("/console/sign-in/code", {"code": code})).status_code == 303
    second = await _password_step(api)
    replay = await second.post("/console/sign-in/code", {"code": code})
    assert replay.status_code == 400
    await first.aclose()
    await second.aclose()


async def test_codes_back_off_too(api: Api, owner: Person, console: Browser,
                                  clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    await _enrol(console, clock)
    b = await _password_step(api)
    statuses = [(await b.post("/console/sign-in/code", {"code": "111111"})).status_code
                for _ in range(6)]
    assert statuses == [400] * 5 + [429]
    await b.aclose()


async def test_disabling_needs_the_password(api: Api, owner: Person, console: Browser,
                                            clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    await _enrol(console, clock)
    wrong = await console.post("/console/me/two-factor/disable", {"password": "nope nope nope"})
    assert wrong.status_code == 400
    assert 'id="e-password"' in wrong.text
    done = await console.post("/console/me/two-factor/disable", {"password": PASSWORD})
    assert done.status_code == 303
    b = browser(api)
    await b.get("/console/sign-in")
    answer = await b.post("/console/sign-in", {"email": EMAIL, "password": PASSWORD})
    assert answer.headers["location"] == "/console/incidents"
    await b.aclose()


def _dark_modules(svg: str) -> set[tuple[int, int]]:
    """The dark modules of segno's SVG path (moves and horizontal runs, at half a module's
    height), as (row, column) of the code without its quiet zone."""
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    [path] = root.iter("{http://www.w3.org/2000/svg}path")
    assert path.get("transform") == f"scale({qr.SCALE})"
    dark: set[tuple[int, int]] = set()
    x = y = 0.0
    for op, args in re.findall(r"([MmHhVv])([-0-9. ]+)", str(path.get("d"))):
        numbers = [float(n) for n in re.findall(r"-?[0-9.]+", args)]
        if op == "M":
            x, y = numbers
        elif op == "m":
            x, y = x + numbers[0], y + numbers[1]
        elif op == "h":
            run = int(numbers[0])
            row = int(y - .5) - qr.QUIET_ZONE
            dark |= {(row, int(x) + i - qr.QUIET_ZONE) for i in range(run)}
            x += run
        else:
            raise AssertionError(f"unexpected path command {op}")
    return dark


async def test_the_enrolment_shows_a_qr_code_of_the_key_s_link(console: Browser) -> None:
    page = (await console.get("/console/me/two-factor")).text
    uri = re.search(r'<p class="secret" id="otpauth">([^<]+)</p>', page)
    secret = re.search(r'<p class="secret" id="secret">([A-Z2-7]+)</p>', page)
    assert uri and secret
    link = html.unescape(uri[1])
    assert link.startswith("otpauth://totp/") and f"secret={secret[1]}" in link
    figure = re.search(r'<div class="qr-code" id="qr-code" role="img" aria-label="([^"]+)">'
                       r"(<svg .*?</svg>)</div>", page, re.S)
    assert figure, page
    assert "QR code of this key" in html.unescape(figure[1])
    svg = figure[2]
    assert 'aria-hidden="true"' in svg and "<script" not in svg
    # Read back, the drawing is the code segno makes of the link shown beside it.
    matrix = segno.make(link, error="m", micro=False).matrix
    expected = {(r, c) for r, row in enumerate(matrix) for c, bit in enumerate(row) if bit}
    assert _dark_modules(svg) == expected
