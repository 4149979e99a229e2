"""The integration pages in headless Chromium against one real `dutyline serve`: adding an
Alertmanager integration with the keyboard alone, its once-shown snippet with a working copy
button, the integration's page with its last events after a real push and a test alert, the
rotate and delete pages, and a read-only member's view; each at 1280 and 360 px
(build/screenshots/), with no serious axe violation, no console error and no sideways
scroll on a phone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
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

MAX_TABS = 40


@pytest.fixture(scope="module")
def live(sqlite_template: Path,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveConsole, int]]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("integrations")) as console:
        channel_id = console.call("/channel/create", {"channel_name": "Payments"})["channel_id"]
        yield console, int(channel_id)





def _body(driver: Any) -> str:
    return str(driver.find_element(By.TAG_NAME, "body").text)


def _tab_to(driver: Any, matches: Any) -> None:
    for _ in range(MAX_TABS):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if matches(driver.switch_to.active_element):
            return
    raise AssertionError("the keyboard never reached the field")


def test_adding_reading_rotating_and_deleting_by_keyboard_and_at_both_widths(
        live: tuple[LiveConsole, int], chromium: Chromium) -> None:
    console, channel_id = live
    base = f"{console.url}/console/channels/{channel_id}/integrations"
    driver = chromium.driver
    sign_in(chromium, console.url, console.owner.email, then=f"/console/channels/{channel_id}"
            "/integrations")
    assert "No integration yet" in _body(driver)
    look(chromium, "integrations-empty")

    # The form with the keyboard alone: Tab to the source, an arrow picks Grafana and back
    # to Alertmanager, Tab to the name, type, Enter.
    open_page(chromium, base + "/new")
    look(chromium, "integration-new")
    driver.find_element(By.TAG_NAME, "body").click()
    _tab_to(driver, lambda e: e.get_attribute("name") == "source")
    ActionChains(driver).send_keys(Keys.ARROW_DOWN).perform()
    assert driver.find_element(By.ID, "f-source-grafana").is_selected()
    ActionChains(driver).send_keys(Keys.ARROW_UP).perform()
    assert driver.find_element(By.ID, "f-source-prometheus").is_selected()
    _tab_to(driver, lambda e: e.get_attribute("id") == "f-integration_name")
    ActionChains(driver).send_keys("Production Alertmanager", Keys.ENTER).perform()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "snippet-alertmanager"), PAGE_WITHIN_S,
                      "the form did not show the snippet")
    snippet = driver.find_element(By.ID, "snippet-alertmanager").text
    assert "webhook_configs:" in snippet and "send_resolved: true" in snippet
    url = driver.find_element(By.ID, "snippet-curl").text.split("'")[1]
    key = url.split("integration_key=")[1]
    # The copy buttons show with JavaScript (the text is selectable without it).
    copy = driver.find_element(By.CSS_SELECTOR, "button[data-copy=snippet-alertmanager]")
    assert copy.is_displayed()
    look(chromium, "integration-key-shown-once")

    # A real push, then a test alert from the page: both listed with their outcome.
    pushed = httpx.post(url, trust_env=False, timeout=10, json={"alerts": [{
        "status": "firing", "fingerprint": "fp-1",
        "labels": {"alertname": "QueueStuck", "severity": "critical"},
        "annotations": {"summary": "Queue stuck on orders"}}]})
    assert pushed.status_code == 200, pushed.text
    driver.find_element(By.PARTIAL_LINK_TEXT, "I have copied it").click()
    chromium.wait_for(lambda d: "Last events received" in _body(d), PAGE_WITHIN_S,
                      "the integration's page did not open")
    page = driver.current_url.split("#")[0]
    assert key not in driver.page_source
    driver.find_element(By.CSS_SELECTOR, "form[action$='/test-alert'] button").click()
    chromium.wait_for(lambda d: "The test alert opened the incident" in _body(d),
                      PAGE_WITHIN_S, "the test alert's outcome was not shown")
    body = _body(driver)
    assert "Queue stuck on orders" in body and "Test alert from dutyline" in body
    assert body.count("Opened an incident") == 2
    look(chromium, "integration-page")

    open_page(chromium, page + "/rotate")
    look(chromium, "integration-rotate")
    driver.find_element(By.CSS_SELECTOR, "form button.danger").click()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "snippet-curl"), PAGE_WITHIN_S,
                      "rotating did not show the new key")
    assert "old key no longer works" in _body(driver)
    assert httpx.post(url, trust_env=False, timeout=10,
                      json={"alerts": []}).status_code == 401

    open_page(chromium, page + "/delete")
    look(chromium, "integration-delete")


def test_a_read_only_member_reads_without_controls(live: tuple[LiveConsole, int],
                                                   chromium: Chromium) -> None:
    console, channel_id = live
    made = console.call("/integration/create", {"channel_id": channel_id,
                                                "integration_name": "Read me"})
    sign_in(chromium, console.url, console.reader.email,
            then=f"/console/channels/{channel_id}/integrations/{made['integration_id']}")
    driver = chromium.driver
    body = _body(driver)
    assert "Read me" in body and "No event received yet" in body
    assert "Rotate the key" not in body and "Send a test alert" not in body
    look(chromium, "integration-page-read-only")
