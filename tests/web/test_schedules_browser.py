"""The Schedules pages in headless Chromium against one real `dutyline serve`: each page at
1280 and 360 px with a screenshot in build/screenshots/, no serious or critical axe-core
violation, no console error, no sideways scroll on a phone; and the create form filled and
sent with the keyboard alone (Tab to each field, type, Enter on a button, Enter saves)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select

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

NAME_IMG = '"><img src=x onerror=window.__pwned=1>'


@pytest.fixture(scope="module")
def live(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory,
         ) -> Iterator[LiveConsole]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("schedules")) as console:
        yield console





def _active(driver: Any) -> Any:
    return driver.switch_to.active_element


def _tab_to(driver: Any, matches: Any, what: str, most: int = 80) -> Any:
    """Tab until the focused element `matches` (a predicate on it)."""
    for _ in range(most):
        element = _active(driver)
        if matches(element):
            return element
        ActionChains(driver).send_keys(Keys.TAB).perform()
    raise AssertionError(f"Tab never reached {what}")


def _by_id(name: str) -> Any:
    return lambda e: e.get_attribute("id") == name


def _button(value: str) -> Any:
    return lambda e: e.tag_name == "button" and e.get_attribute("value") == value


def _press_and_wait(chromium: Chromium, key: str, ready: Any, what: str) -> None:
    ActionChains(chromium.driver).send_keys(key).perform()
    chromium.wait_for(ready, PAGE_WITHIN_S, what)


def test_the_schedule_pages(live: LiveConsole, chromium: Chromium) -> None:
    driver = chromium.driver
    sign_in(chromium, live.url, live.owner.email, then="/console/schedules")
    assert "No schedules yet." in driver.find_element(By.TAG_NAME, "body").text
    look(chromium, "schedules-empty")

    hostile = live.call("/member/invite", {"members": [
        {"member_name": NAME_IMG, "email": "img@schedules.example"}]})["items"][0]
    sid = live.call("/schedule/create", {
        "schedule_name": "Primary", "time_zone": "Europe/Berlin", "layers": [{
            "layer_name": "Weekly", "rotation_unit": "week", "rotation_value": 1,
            "handoff_time": 9 * 3600, "groups": [
                {"members": [{"person_ids": [live.owner.person_id]}]},
                {"members": [{"person_ids": [live.reader.person_id]}]},
                {"members": [{"person_ids": [hostile["member_id"]]}]}]}]})["schedule_id"]
    open_page(chromium, f"{live.url}/console/schedules")
    assert "Primary" in driver.find_element(By.TAG_NAME, "body").text
    look(chromium, "schedules")

    open_page(chromium, f"{live.url}/console/schedules/{sid}")
    body = driver.find_element(By.TAG_NAME, "body").text
    assert "Acme Owner (you)" in body and NAME_IMG in body
    look(chromium, "schedule")

    open_page(chromium, f"{live.url}/console/schedules/{sid}/edit")
    look(chromium, "schedule-edit")

    # An override with its end before its start: the error at its field.
    open_page(chromium, f"{live.url}/console/schedules/{sid}")
    end = driver.find_element(By.ID, "f-end")
    driver.execute_script("arguments[0].value = '2020-01-01T00:00'", end)
    driver.find_element(By.CSS_SELECTOR, "form[action$='/override'] button.primary").click()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "e-person_id"), PAGE_WITHIN_S,
                      "the override's error did not show")
    Select(driver.find_element(By.ID, "f-person_id")).select_by_visible_text(
        live.reader_name)
    end = driver.find_element(By.ID, "f-end")
    driver.execute_script("arguments[0].value = '2020-01-01T00:00'", end)
    driver.find_element(By.CSS_SELECTOR, "form[action$='/override'] button.primary").click()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "e-end"), PAGE_WITHIN_S,
                      "the override's error did not show")
    look(chromium, "schedule-override-error", refused=400)

    # The calendar link, with its copy button.
    open_page(chromium, f"{live.url}/console/schedules/{sid}")
    driver.find_element(By.CSS_SELECTOR, "form[action$='/calendar'] button").click()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "feed-url"), PAGE_WITHIN_S,
                      "the calendar link did not show")
    assert driver.find_element(By.ID, "feed-url").get_attribute("value").startswith(live.url)
    look(chromium, "schedule-calendar")


def test_the_create_form_by_keyboard_alone(live: LiveConsole, chromium: Chromium) -> None:
    driver = chromium.driver
    sign_in(chromium, live.url, live.owner.email, then="/console/schedules/new")
    look(chromium, "schedule-new")
    _tab_to(driver, _by_id("f-schedule_name"), "the name").send_keys("Keyboard rota")
    _tab_to(driver, _by_id("f-layers-0-at"), "the hand-off time").send_keys("0800")
    _tab_to(driver, _button("add_person:0"), "Add a person")
    _press_and_wait(chromium, Keys.ENTER,
                    lambda d: d.find_elements(By.ID, "f-layers-0-people-0"),
                    "Add a person did not add a turn")
    _tab_to(driver, _by_id("f-layers-0-people-0"), "the first turn").send_keys("Acme")
    _tab_to(driver, _button("add_person:0"), "Add a person")
    _press_and_wait(chromium, Keys.ENTER,
                    lambda d: d.find_elements(By.ID, "f-layers-0-people-1"),
                    "Add a person did not add a second turn")
    _tab_to(driver, _by_id("f-layers-0-people-1"), "the second turn").send_keys(
        live.reader_name)
    look(chromium, "schedule-new-filled")
    # Enter in a text field saves (not the first Remove button of the form).
    _tab_to(driver, _by_id("f-layers-0-layer_name"), "the layer's name")
    _press_and_wait(chromium, Keys.ENTER,
                    lambda d: re.search(r"/console/schedules/\d+$", d.current_url),
                    "Enter did not save the schedule")
    body = driver.find_element(By.TAG_NAME, "body").text
    assert "Keyboard rota" in body
    assert "at 08:00" in body and f"Acme Owner (you), then {live.reader_name}" in body


def test_field_errors_on_a_phone(live: LiveConsole, chromium: Chromium) -> None:
    driver = chromium.driver
    sign_in(chromium, live.url, live.owner.email, then="/console/schedules/new")
    driver.find_element(By.CSS_SELECTOR, "button.primary[value=save]").click()
    chromium.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, ".field-error"),
                      PAGE_WITHIN_S, "no error shown")
    # The first field the service refuses: nobody takes turns yet.
    assert driver.find_element(By.ID, "e-layers-0-people").text == "choose at least one person"
    look(chromium, "schedule-new-error", refused=400)
