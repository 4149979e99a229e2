"""The API reference at /docs in headless Chromium, against a real `dutyline serve`: a reader
finds `/schedule/create`, opens its request schema, expands `layers` and reads the values
`rotation_unit` takes; tries a call with an app key typed into the page, which the page
keeps in memory only; and axe-core finds no violation, at any impact, along the way. The
page logs no error (a Content-Security-Policy violation would be one)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.fixtures.browser import WIDTHS, Chromium, axe_violations, screenshot
from tests.web.browser_support import LiveConsole, live_console, open_page

pytestmark = pytest.mark.slow

EVERY_IMPACT = ("minor", "moderate", "serious", "critical")
WITHIN_S = 20.0


@pytest.fixture(scope="module")
def live(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[LiveConsole]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("reference")) as served:
        yield served


def _property(scope: Any, name: str) -> Any:
    """The schema viewer's entry of the field `name` under `scope`."""
    return scope.find_element(By.XPATH, (
        ".//article[./div[@class='json-schema-2020-12-head']"
        f"//div[@class='json-schema-2020-12__title'][normalize-space(.)='{name}']]"))


def _operation(chromium: Chromium, area: str, path: str) -> Any:
    driver = chromium.driver
    chromium.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock-tag"), WITHIN_S,
                      "the reference did not render its areas")
    tag = driver.find_element(By.XPATH, f"//h3[contains(@class,'opblock-tag')]"
                                        f"[@data-tag='{area}']")
    tag.click()
    operation = chromium.wait_for(lambda d: d.find_element(By.XPATH, (
        "//div[contains(@class,'opblock ')][.//*[contains(@class,'opblock-summary-path')]"
        f"[normalize-space(.)='{path}']]")), WITHIN_S, f"{path} is not listed")
    operation.find_element(By.CSS_SELECTOR, ".opblock-summary-control").click()
    return operation


# The elements reaching past the screen's right edge (innermost last), to name what is too
# wide.
_WIDER = """
return [...document.body.querySelectorAll('*')]
  .filter(e => e.getBoundingClientRect().right > arguments[0] + 1)
  .slice(-6).map(e => e.outerHTML.slice(0, 120));
"""


# The elements reaching past the right edge of the box given (innermost last).
_WIDER_IN = """
const edge = arguments[0].getBoundingClientRect().right;
return [arguments[0].scrollWidth, arguments[0].clientWidth,
  ...[...arguments[0].querySelectorAll('*')]
  .filter(e => e.getBoundingClientRect().right > edge + 1)
  .slice(-6).map(e => e.outerHTML.slice(0, 160))];
"""


def _no_sideways_scroll(chromium: Chromium, width: int) -> None:
    """The page is as wide as the screen: a wide schema or code block scrolls in its own
    box."""
    scroll = chromium.driver.execute_script("return document.documentElement.scrollWidth")
    assert scroll <= width + 1, (width, scroll, chromium.driver.execute_script(_WIDER, width))


def _no_violation(chromium: Chromium, state: str) -> None:
    found = axe_violations(chromium.driver, impacts=EVERY_IMPACT)
    if found:
        pytest.fail(f"{state}: {json.dumps(found, indent=1)}")


def test_a_reader_finds_a_nested_enum(chromium: Chromium, live: LiveConsole) -> None:
    open_page(chromium, f"{live.url}/docs")
    operation = _operation(chromium, "Schedules", "/schedule/create")
    body = chromium.wait_for(lambda d: operation.find_element(
        By.CSS_SELECTOR, ".opblock-section-request-body"), WITHIN_S, "no request body shown")
    body.find_element(By.CSS_SELECTOR, "button[data-name='model']").click()
    layers = chromium.wait_for(lambda d: _property(body, "layers"), WITHIN_S,
                               "the request schema has no `layers`")
    expand = layers.find_element(By.CSS_SELECTOR, ".json-schema-2020-12-expand-deep-button")
    if expand.text == "Collapse all":  # shown open at the first levels: close, then open all
        expand.click()
    expand.click()
    unit = chromium.wait_for(lambda d: _property(layers, "rotation_unit"), WITHIN_S,
                             "`layers` shows no `rotation_unit`")
    text = unit.text
    for value in ("hour", "day", "week", "month"):
        assert f'"{value}"' in text, text
    assert "rotation_duration" in text  # its description, in our words
    for width in WIDTHS:
        chromium.resize(width)
        assert chromium.width == width
        chromium.driver.execute_script("arguments[0].scrollIntoView()", unit)
        screenshot(chromium.driver, "api-reference-schedule-create")
        _no_violation(chromium, f"/schedule/create's request schema, all open, at {width} px")
        _no_sideways_scroll(chromium, width)
        # The schema itself fits too: its descriptions are not cut at the box's edge.
        box = body.find_element(By.CSS_SELECTOR, ".model-container")
        assert chromium.driver.execute_script(
            "return arguments[0].scrollWidth <= arguments[0].clientWidth + 1", box), (
            width, chromium.driver.execute_script(_WIDER_IN, box))
    assert chromium.console_errors() == []


def test_the_reference_at_each_width(chromium: Chromium, live: LiveConsole) -> None:
    """The first screen (title, key, filter, areas) and an open area, on a desktop and on a
    phone."""
    open_page(chromium, f"{live.url}/docs")
    _operation(chromium, "Post-mortems", "/incident/post-mortem/list")
    chromium.driver.execute_script("window.scrollTo(0, 0)")
    for width in WIDTHS:
        chromium.resize(width)
        assert chromium.width == width
        screenshot(chromium.driver, "api-reference")
        _no_violation(chromium, f"/docs at {width} px")
        _no_sideways_scroll(chromium, width)
    assert chromium.console_errors() == []


def test_trying_a_call_keeps_the_key_in_the_page(chromium: Chromium,
                                                 live: LiveConsole) -> None:
    driver = chromium.driver
    open_page(chromium, f"{live.url}/docs")
    chromium.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, ".btn.authorize"), WITHIN_S,
                      "no Authorize button")
    driver.find_element(By.CSS_SELECTOR, ".btn.authorize").click()
    field = chromium.wait_for(lambda d: d.find_element(
        By.CSS_SELECTOR, ".dialog-ux input[type='text'], .dialog-ux input"), WITHIN_S,
        "the Authorize dialog has no field for the key")
    _no_violation(chromium, "the Authorize dialog")
    field.send_keys(live.owner.app_key)
    driver.find_element(By.CSS_SELECTOR, ".dialog-ux .auth-btn-wrapper .authorize").click()
    driver.find_element(By.CSS_SELECTOR, ".dialog-ux .btn-done").click()
    chromium.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, ".btn.authorize.locked"),
                      WITHIN_S, "the padlock did not close: the key was not taken")

    operation = _operation(chromium, "Account, members", "/account/info")
    chromium.wait_for(lambda d: operation.find_element(By.CSS_SELECTOR, ".try-out__btn"),
                      WITHIN_S, "no Try it out button").click()
    operation.find_element(By.CSS_SELECTOR, ".execute").click()
    status = chromium.wait_for(lambda d: operation.find_element(
        By.CSS_SELECTOR, ".live-responses-table tbody .response-col_status"), WITHIN_S,
        "the call was not made")
    assert status.text.strip().startswith("200"), status.text
    assert '"account_id"' in operation.find_element(
        By.CSS_SELECTOR, ".live-responses-table tbody .response-col_description").text
    _no_violation(chromium, "a call tried")
    stored = driver.execute_script(
        "return JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage),"
        " document.cookie])")
    assert live.owner.app_key not in stored
    driver.refresh()
    chromium.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, ".btn.authorize"), WITHIN_S,
                      "the page did not come back")
    # A new page holds no key: the padlock is open again.
    assert driver.find_elements(By.CSS_SELECTOR, ".btn.authorize.unlocked")
    assert not driver.find_elements(By.CSS_SELECTOR, ".btn.authorize.locked")
    assert chromium.console_errors() == []
