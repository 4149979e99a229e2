"""The Settings page and the two-factor enrolment in headless Chromium, at 1280 and 360 px,
against one real `dutyline serve`: screenshots (build/screenshots/), no serious or critical
axe-core violation, no console error, no sideways scroll on a phone; the settings form used
with the keyboard alone; the enrolment's QR code beside the key and its `otpauth://` line
clear of the line above it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.fixtures.browser import WIDTHS, Chromium, screenshot
from tests.web.browser_support import PAGE_WITHIN_S, LiveConsole, live_console, look, sign_in

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[LiveConsole]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("settings")) as console:
        yield console





def _box(driver: Any, element_id: str) -> dict[str, float]:
    box: dict[str, float] = driver.execute_script(
        "const r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};", element_id)
    return box


def _apart(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
            or a["right"] <= b["left"] or b["right"] <= a["left"])


def _tab_to(driver: Any, element_id: str, *, limit: int = 60) -> None:
    """Tab on from where the focus is until `element_id` has it."""
    for _ in range(limit):
        if driver.switch_to.active_element.get_attribute("id") == element_id:
            return
        driver.switch_to.active_element.send_keys(Keys.TAB)
    raise AssertionError(f"Tab never reached #{element_id}")


def test_the_settings_page_with_the_keyboard_alone(live: LiveConsole,
                                                   chromium: Chromium) -> None:
    sign_in(chromium, live.url, live.owner.email, then="/console/settings")
    driver = chromium.driver
    assert driver.find_element(By.TAG_NAME, "h1").text == "Settings"
    body = driver.find_element(By.TAG_NAME, "body").text
    assert "Links in e-mails, notifications and invitations start with this address" in body
    assert "Only on this machine" in body  # the test server's base URL is 127.0.0.1
    look(chromium, "settings")
    driver.execute_script("document.getElementById('h-delivery').scrollIntoView()")
    screenshot(driver, "settings-delivery")

    # From the top of the page, by the keyboard only.
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    _tab_to(driver, "f-account_name")
    field = driver.switch_to.active_element
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("Acme Night Shift")
    _tab_to(driver, "f-time_zone")
    driver.switch_to.active_element.send_keys("Europe/Berlin")
    _tab_to(driver, "f-locale")
    driver.switch_to.active_element.send_keys(Keys.TAB)
    assert driver.switch_to.active_element.text == "Save settings"
    driver.switch_to.active_element.send_keys(Keys.ENTER)
    chromium.wait_for(lambda d: "settings are saved" in d.find_element(By.TAG_NAME, "body").text,
                      PAGE_WITHIN_S, "the settings were not saved")
    info = live.call("/account/info", {})
    assert (info["account_name"], info["time_zone"]) == ("Acme Night Shift", "Europe/Berlin")
    look(chromium, "settings-saved")


def test_the_two_factor_enrolment_shows_the_qr_code_beside_the_key(
        live: LiveConsole, chromium: Chromium) -> None:
    sign_in(chromium, live.url, live.reader.email, then="/console/me/two-factor")
    driver = chromium.driver
    code = driver.find_element(By.CSS_SELECTOR, ".qr-code[role=img]")
    assert "QR code" in (code.get_attribute("aria-label") or "")
    assert driver.find_element(By.ID, "otpauth").text.startswith("otpauth://totp/")
    look(chromium, "two-factor")
    for width in WIDTHS:
        chromium.resize(width)
        qr, key, link = (_box(driver, "qr-code"), _box(driver, "secret"),
                         _box(driver, "otpauth"))
        # The otpauth:// line sits below the words that introduce it, never over them.
        assert _apart(_box(driver, "otpauth-label"), link), width
        assert link["top"] >= _box(driver, "otpauth-label")["bottom"] - 0.5, width
        assert _apart(qr, key) and _apart(qr, link), width
        assert qr["right"] - qr["left"] >= 150, width  # big enough for a phone's camera
        if width == 1280:
            assert qr["right"] <= key["left"], "the code is beside the key"
    chromium.resize(WIDTHS[0])


def test_the_responder_s_me_page_names_no_server_variable(
        live: LiveConsole, chromium: Chromium) -> None:
    # A phone and a Telegram handle, which this server (no Twilio, no bot) cannot use.
    live.call("/member/info/reset", {"member_id": live.reader.person_id,
                                     "phone": "+1 555 0100"})
    live.call("/member/notify/reset", {"member_id": live.reader.person_id,
                                       "im": {"telegram": "4242"}})
    sign_in(chromium, live.url, live.reader.email, then="/console/me")
    body = chromium.driver.find_element(By.TAG_NAME, "body").text
    assert "SMS is not set up on this server; ask your administrator." in body
    assert "Telegram is not set up on this server; ask your administrator." in body
    assert "DUTYLINE_" not in chromium.driver.page_source
    look(chromium, "me-not-set-up")
