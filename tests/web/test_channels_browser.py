"""The Channels pages in headless Chromium against a real `dutyline serve`: the empty list, the
create form driven by the keyboard alone, the list, a channel's page (with an integration, an
escalation rule and an incident), the edit form with an error at its field, and the delete
confirmation; each at 1280 and 360 px with a screenshot (build/screenshots/), no serious or
critical axe-core violation, no console error and no sideways scroll on a phone. A Reader
sees the list and the channel without any control."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.fixtures.browser import Chromium
from tests.web.browser_support import (
    PAGE_WITHIN_S,
    LiveConsole,
    incident_by_title,
    live_console,
    look,
    open_page,
    push,
    sign_in,
)

pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def live(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveConsole]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("channels")) as console:
        console.call("/team/upsert", {"team_name": "SRE",
                                      "person_ids": [console.owner.person_id]})
        yield console





def _body(driver: Any) -> str:
    return str(driver.find_element(By.TAG_NAME, "body").text)


def _focused(driver: Any) -> Any:
    return driver.switch_to.active_element


def _tab_to(driver: Any, element_id: str, most: int = 40) -> None:
    """Tab (only) until the element of `element_id` has the focus."""
    for _ in range(most):
        if _focused(driver).get_attribute("id") == element_id:
            return
        _focused(driver).send_keys(Keys.TAB)
    raise AssertionError(f"Tab never reached #{element_id}")


def test_the_channels_pages(live: LiveConsole, chromium: Chromium) -> None:
    driver = chromium.driver
    sign_in(chromium, live.url, live.owner.email, then="/console/channels")
    assert "Create your first channel" in _body(driver)
    look(chromium, "channels-empty")

    # The first channel, made with the keyboard alone: Tab to each field, type, Enter.
    driver.find_element(By.LINK_TEXT, "Create your first channel").click()
    chromium.wait_for(lambda d: d.current_url.endswith("/console/channels/new"),
                      PAGE_WITHIN_S, "the empty state's button did not open the form")
    look(chromium, "channel-new")
    _tab_to(driver, "f-channel_name")
    _focused(driver).send_keys("Payments API")
    _tab_to(driver, "f-description")
    _focused(driver).send_keys("Card payments and refunds")
    _tab_to(driver, "f-team_id")
    _focused(driver).send_keys(Keys.DOWN)  # from "No team" to SRE
    _tab_to(driver, "f-is_private")
    _focused(driver).send_keys(Keys.SPACE)
    _tab_to(driver, "f-auto_resolve_timeout")
    _focused(driver).send_keys(Keys.DOWN, Keys.DOWN, Keys.DOWN)  # Never -> After 4 hours
    _tab_to(driver, "f-submit")
    _focused(driver).send_keys(Keys.ENTER)
    chromium.wait_for(lambda d: "Payments API" in d.find_element(By.TAG_NAME, "h1").text,
                      PAGE_WITHIN_S, "Enter did not create the channel")
    channel_url = driver.current_url
    channel_id = int(channel_url.rstrip("/").rsplit("/", 1)[1])
    body = _body(driver)
    for text in ("The channel Payments API is saved.", "Card payments and refunds", "SRE",
                 "Its teams and the account's admins", "After 4 hours"):
        assert text in body, text

    # Its page with an integration, an escalation rule and an incident.
    key = live.call("/integration/create", {"channel_id": channel_id,
                                            "integration_name": "Alertmanager"}
                    )["integration_key"]
    template = next(t["template_id"] for t in live.call("/template/list", {})["items"]
                    if t["preset"])
    live.call("/channel/escalate/rule/create", {
        "channel_id": channel_id, "rule_name": "Business hours", "template_id": template,
        "layers": [{"target": {"person_ids": [live.owner.person_id],
                               "by": {"critical": ["email"]}}}]})
    push(live.url, key, "checkout latency over 2s", alert_key="latency")
    incident_id = incident_by_title(live, "checkout latency over 2s")
    open_page(chromium, channel_url)
    body = _body(driver)
    for text in ("Alertmanager", "Business hours", "checkout latency over 2s",
                 "Add an integration", "Add an escalation rule"):
        assert text in body, text
    assert driver.find_element(
        By.CSS_SELECTOR, f"a[href='/console/incidents/{incident_id}']").is_displayed()
    look(chromium, "channel")

    for i in range(3):
        live.call("/channel/create", {"channel_name": f"Search {i}",
                                      "description": "A service with a rather long "
                                                     "description that wraps on a phone"})
    open_page(chromium, f"{live.url}/console/channels")
    assert "4 channels" in _body(driver)
    look(chromium, "channels")

    # The edit form with an error at its field.
    open_page(chromium, f"{channel_url}/edit")
    name = driver.find_element(By.ID, "f-channel_name")
    name.clear()
    name.send_keys("search 1")
    name.send_keys(Keys.ENTER)
    chromium.wait_for(lambda d: d.find_elements(By.ID, "e-channel_name"), PAGE_WITHIN_S,
                      "the taken name was not refused at its field")
    assert "already exists" in driver.find_element(By.ID, "e-channel_name").text
    assert driver.find_element(By.ID, "f-channel_name").get_attribute("aria-invalid") == "true"
    look(chromium, "channel-edit-error", refused=400)

    open_page(chromium, f"{channel_url}/delete")
    assert "Delete the channel Payments API?" in _body(driver)
    look(chromium, "channel-delete")


def test_a_reader_sees_channels_without_controls(live: LiveConsole,
                                                 chromium: Chromium) -> None:
    channel_id = live.call("/channel/create", {"channel_name": "Read only"})["channel_id"]
    driver = chromium.driver
    sign_in(chromium, live.url, live.reader.email, then="/console/channels")
    assert "Read only" in _body(driver)
    assert driver.find_elements(By.CSS_SELECTOR, "a[href='/console/channels/new']") == []
    look(chromium, "channels-reader")
    open_page(chromium, f"{live.url}/console/channels/{channel_id}")
    assert driver.find_elements(By.CSS_SELECTOR, "a[href$='/edit'], form[action$='/disable']"
                                ) == []
    look(chromium, "channel-reader")
