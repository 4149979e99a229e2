"""The Templates pages in headless Chromium against one real `dutyline serve`: the list and the
editor at 1280 and 360 px (screenshots in build/screenshots/, no serious or critical axe-core
violation, no console error, no sideways scroll), the preview of a real incident (the e-mail in
its sandboxed frame, a chat body as text, swapped in by htmx), and the editor by keyboard
only."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.fixtures.browser import Chromium
from tests.web.browser_support import (
    PAGE_WITHIN_S,
    LiveConsole,
    live_console,
    look,
    open_page,
    sign_in,
)

pytestmark = pytest.mark.slow

SCRIPT = "<script>window.__pwned=1</script>"
TITLE = f"checkout latency {SCRIPT}"


@dataclass(frozen=True)
class Setup:
    live: LiveConsole
    incident_id: str
    template_id: str


@pytest.fixture(scope="module")
def setup(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("templates")) as live:
        incident = live.call("/incident/create", {"title": TITLE,
                                                  "incident_severity": "Critical"})
        template = live.call("/template/create", {
            "template_name": "Prod pages", "description": "Paging for production",
            "sms": "[{{.IncidentSeverity}}] {{.Title}}",
            "email": "<h1>{{.Title}}</h1><p style=\"color:#C80000\">{{.IncidentSeverity}}</p>"
                     "<script>window.__pwned=1</script>"})
        yield Setup(live, incident["incident_id"], template["template_id"])







def _wait(chromium: Chromium, css: str, what: str) -> Any:
    return chromium.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, css), PAGE_WITHIN_S,
                             what)[0]


def test_the_list_and_the_editor_with_previews(setup: Setup, chromium: Chromium) -> None:
    live = setup.live
    sign_in(chromium, live.url, live.owner.email, then="/console/templates")
    driver = chromium.driver
    assert "Prod pages" in driver.find_element(By.TAG_NAME, "main").text
    look(chromium, "templates")

    open_page(chromium, f"{live.url}/console/templates/{setup.template_id}")
    # The newest incident is the one previews use; htmx swaps each preview in place.
    chosen = driver.find_element(By.CSS_SELECTOR, "#f-incident_id option:checked")
    assert chosen.get_attribute("value") == setup.incident_id
    driver.find_element(By.CSS_SELECTOR, "#kind-sms button[name=preview]").click()
    text = _wait(chromium, "#preview-sms pre.preview-text", "the SMS preview did not come")
    assert text.text == f"[Critical] {TITLE}"
    driver.find_element(By.CSS_SELECTOR, "#kind-email button[name=preview]").click()
    frame = _wait(chromium, "#preview-email iframe.mail-frame", "the e-mail frame did not come")
    assert frame.get_attribute("sandbox") == ""
    assert driver.current_url.endswith(f"/console/templates/{setup.template_id}")  # no reload
    driver.switch_to.frame(frame)
    try:
        heading = chromium.wait_for(lambda d: d.find_elements(By.TAG_NAME, "h1"),
                                    PAGE_WITHIN_S, "the e-mail did not render")[0]
        assert heading.text == TITLE
        assert driver.execute_script("return typeof window.__pwned") == "undefined"
    finally:
        driver.switch_to.default_content()
    look(chromium, "template-preview")

    # A body that does not parse: its line, next to it, after the preview button.
    sms = driver.find_element(By.ID, "f-sms")
    sms.clear()
    sms.send_keys("ok\n{{nope .Title}}")
    driver.find_element(By.CSS_SELECTOR, "#kind-sms button[name=preview]").click()
    error = _wait(chromium, "#pe-sms", "the error did not show")
    assert error.text == 'Line 2: function "nope" not defined'
    look(chromium, "template-error")


def test_a_new_template_by_keyboard_only(setup: Setup, chromium: Chromium) -> None:
    live = setup.live
    sign_in(chromium, live.url, live.owner.email, then="/console/templates/new")
    driver = chromium.driver
    look(chromium, "template-new")

    def press(*keys: str) -> None:
        ActionChains(driver).send_keys(*keys).perform()

    driver.find_element(By.TAG_NAME, "body").click()
    for _ in range(40):
        press(Keys.TAB)
        if driver.switch_to.active_element.get_attribute("id") == "f-template_name":
            break
    else:
        pytest.fail("Tab never reached the name")
    press("Typed by keyboard")
    press(Keys.TAB)  # the description
    assert driver.switch_to.active_element.get_attribute("id") == "f-description"
    press("For the keyboard test")
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    assert driver.switch_to.active_element.get_attribute("id") == "f-template_name"
    press(Keys.ENTER)
    chromium.wait_for(lambda d: d.find_elements(By.TAG_NAME, "h1")
                      and d.find_element(By.TAG_NAME, "h1").text == "Typed by keyboard",
                      PAGE_WITHIN_S, "Enter did not save the template")
    assert "The template Typed by keyboard is saved." in driver.page_source
    saved = [t for t in live.call("/template/list", {})["items"]
             if t["template_name"] == "Typed by keyboard"]
    assert saved and saved[0]["description"] == "For the keyboard test"


def test_a_reader_sees_the_list_without_its_controls(setup: Setup, chromium: Chromium) -> None:
    live = setup.live
    sign_in(chromium, live.url, live.reader.email, then="/console/templates")
    driver = chromium.driver
    assert driver.find_elements(By.CSS_SELECTOR, "a[href='/console/templates/new']") == []
    look(chromium, "templates-reader")
    open_page(chromium, f"{live.url}/console/templates/{setup.template_id}")
    assert driver.find_element(By.ID, "f-sms").get_attribute("readonly") is not None
    look(chromium, "template-reader")
