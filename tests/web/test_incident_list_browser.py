"""The incident list in headless Chromium against a real `dutyline serve`: signing in through
the form, the list, an alert pushed through the API appearing without a reload, the keyboard,
screenshots at 1280 and 360 px, and no serious or critical axe-core violation."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.fixtures.browser import WIDTHS, Chromium, axe_violations, screenshot
from tests.fixtures.server import running_server
from tests.web.live_support import PASSWORD, Seeded, call, create_incident, seed_owner, server_env

pytestmark = pytest.mark.slow

# The promise of the live list: a new incident is on the page within this of its push.
LIVE_WITHIN_S = 1.0


def _sign_in(chromium: Chromium, base_url: str, owner: Seeded) -> None:
    driver = chromium.driver
    driver.get(f"{base_url}/console/sign-in")
    driver.find_element(By.ID, "f-email").send_keys(owner.email)
    driver.find_element(By.ID, "f-password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit].primary").click()
    chromium.wait_for(lambda d: d.current_url.endswith("/console/incidents"), 10,
                      "signing in did not open the incident list")


def _row_titles(driver: Any) -> list[str]:
    return [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#incident-list a.title")]


def _xpath(text: str) -> str:
    """`text` as an XPath string literal (it may hold both kinds of quote)."""
    parts = text.split("'")
    return "concat('" + "', \"'\", '".join(parts) + "', '')" if len(parts) > 1 else f"'{text}'"


def _push(base_url: str, integration_key: str, title: str, **labels: str) -> None:
    answer = httpx.post(f"{base_url}/event/push/alert/standard",
                        params={"integration_key": integration_key}, trust_env=False,
                        json={"title_rule": title, "event_status": "Critical",
                              "alert_key": title, "labels": labels}, timeout=10)
    assert answer.status_code == 200, answer.text


def test_the_live_list_in_a_browser(sqlite_url: str, chromium: Chromium) -> None:
    owner = asyncio.run(seed_owner(sqlite_url))
    with running_server(server_env(sqlite_url)) as server:
        url = server.base_url
        channel = call(url, "/channel/create", owner.app_key, {"channel_name": "Checkout"})
        key = call(url, "/integration/create", owner.app_key, {
            "channel_id": channel["channel_id"], "integration_name": "std"})["integration_key"]
        _push(url, key, "checkout latency high", service="checkout", region="eu-west-1")
        create_incident(url, owner, '"><img src=x onerror=alert(1)> hostile')
        driver = chromium.driver

        _sign_in(chromium, url, owner)
        assert sorted(_row_titles(driver)) == ['"><img src=x onerror=alert(1)> hostile',
                                               "checkout latency high"]
        assert driver.find_elements(By.CSS_SELECTOR, "#incident-list img") == []
        chromium.wait_for(lambda d: d.find_element(By.CSS_SELECTOR, ".live").get_attribute(
            "data-live") == "open", 10, "the live stream did not open")

        _push(url, key, "payment errors spiking")
        chromium.wait_for(lambda d: "payment errors spiking" in _row_titles(d),
                          LIVE_WITHIN_S, f"the new incident was not listed within "
                          f"{LIVE_WITHIN_S}s of its push")
        assert _row_titles(driver)[0] == "payment errors spiking"
        assert driver.find_element(By.CSS_SELECTOR, '#progress-tabs a[href$="Triggered"]'
                                   ).text.split() == ["Triggered", "3"]
        # A change made elsewhere replaces its row in place, and the tabs count again.
        checkout = driver.find_element(
            By.XPATH, "//ol[@id='incident-list']/li[a[.='checkout latency high']]")
        incident_id = checkout.get_attribute("id").removeprefix("incident-")
        call(url, "/incident/ack", owner.app_key, {"incident_ids": [incident_id]})
        chromium.wait_for(lambda d: "Processing" in d.find_element(
            By.ID, f"incident-{incident_id}").text, 5, "the acknowledged row did not change")
        assert driver.find_element(By.CSS_SELECTOR, '#progress-tabs a[href$="Processing"]'
                                   ).text.split() == ["Processing", "1"]
        assert len(_row_titles(driver)) == 3

        for width in WIDTHS:
            chromium.resize(width)
            assert chromium.width == width
            shot = screenshot(driver, "incident-list")
            assert shot.stat().st_size > 10_000, shot
            # Nothing wider than the screen: a phone scrolls down, never sideways.
            assert driver.execute_script(
                "return document.documentElement.scrollWidth") <= width
            violations = axe_violations(driver)
            assert violations == [], violations
        chromium.resize(WIDTHS[0])

        # The keyboard: ? shows the shortcuts, j moves to the first incident, a acks it.
        def press(key: str) -> None:  # to whatever has the focus, as a person types
            ActionChains(driver).send_keys(key).perform()

        press("?")
        assert driver.find_element(By.ID, "shortcuts").get_attribute("open") is not None
        rows = _row_titles(driver)
        press("j")
        assert driver.switch_to.active_element.text == rows[0]
        press("j")
        assert driver.switch_to.active_element.text == rows[1]
        press("k")
        assert driver.switch_to.active_element.text == rows[0]
        press("a")
        chromium.wait_for(lambda d: "Acknowledged." in d.page_source, 10,
                          "a did not acknowledge the focused incident")
        acked = driver.find_element(
            By.XPATH, f"//ol[@id='incident-list']/li[a[@class='title'][.={_xpath(rows[0])}]]")
        assert "Processing" in acked.text
        # No script error and no CSP violation on the way.
        assert chromium.console_errors() == []
        # Enter opens the focused incident (its page belongs to the incident's view).
        press("j")
        press(Keys.ENTER)
        chromium.wait_for(lambda d: "/console/incidents/" in d.current_url, 10,
                          "Enter did not open the incident")
