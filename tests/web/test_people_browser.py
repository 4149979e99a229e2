"""The people pages in headless Chromium against one real `dutyline serve`: roles, app keys,
the Me page's name and time zone and the invite form, at 1280 and 360 px (screenshots in
build/screenshots/), with no serious or critical axe-core violation, no console error and no
sideways scroll on a phone; and the role and app-key forms filled and sent with the keyboard
alone."""

from __future__ import annotations

from collections.abc import Iterator
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

# Names are 39 characters at most: a hostile one that fits.
NAME_IMG = '"><img src=x onerror=window.__pwned=1>'
# Tab presses allowed to reach a field from the top of a page (the navigation comes first).
MAX_TABS = 60


@pytest.fixture(scope="module")
def live(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[LiveConsole]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("people")) as console:
        yield console





def _press(driver: Any, *keys: str) -> None:
    """Keys typed to whatever has the focus, as a person types them."""
    ActionChains(driver).send_keys(*keys).perform()


def _active(driver: Any) -> Any:
    return driver.switch_to.active_element


def _tab_to(driver: Any, matches: Any, what: str) -> None:
    """Tab from where the focus is until `matches(element)`."""
    for _ in range(MAX_TABS):
        _press(driver, Keys.TAB)
        if matches(_active(driver)):
            return
    raise AssertionError(f"Tab never reached {what}")


def _by_id(element_id: str) -> Any:
    return lambda e: e.get_attribute("id") == element_id


def test_the_people_pages_at_both_widths(live: LiveConsole, chromium: Chromium) -> None:
    role_id = live.call("/role/upsert", {"role_name": NAME_IMG, "description": NAME_IMG,
                                         "permission_ids": [203, 204]})["role_id"]
    live.call("/role/member/grant", {"role_id": role_id,
                                     "member_ids": [live.reader.person_id]})
    live.call("/app-key/create", {"key_name": NAME_IMG})
    sign_in(chromium, live.url, live.owner.email)
    driver = chromium.driver
    for name, path in (("roles", "/console/roles"), ("role-new", "/console/roles/new"),
                       ("role", f"/console/roles/{role_id}"),
                       ("role-edit", f"/console/roles/{role_id}/edit"),
                       ("app-keys", "/console/app-keys"), ("app-key-new", "/console/app-keys/new"),
                       ("me-profile", "/console/me"), ("invite", "/console/members/new")):
        open_page(chromium, live.url + path)
        assert driver.find_elements(By.TAG_NAME, "h1"), name
        look(chromium, name)
    open_page(chromium, f"{live.url}/console/roles/{role_id}")
    body = driver.find_element(By.TAG_NAME, "body").text
    assert NAME_IMG in body and "acknowledge, resolve, comment" in body
    assert live.reader_name in body
    # A refused change shows its reason at the top of the page, in words.
    open_page(chromium, f"{live.url}/console/roles/new")
    driver.find_element(By.ID, "f-role_name").send_keys("Member")
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit].primary").click()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "e-role_name"), PAGE_WITHIN_S,
                      "the error did not show by its field")
    look(chromium, "role-error", refused=400)


def test_a_role_made_with_the_keyboard_alone(live: LiveConsole, chromium: Chromium) -> None:
    sign_in(chromium, live.url, live.owner.email, then="/console/roles/new")
    driver = chromium.driver
    _tab_to(driver, _by_id("f-role_name"), "the name field")
    _press(driver, "Pager")
    _press(driver, Keys.TAB)
    assert _active(driver).get_attribute("id") == "f-description"
    _press(driver, "Answers pages")
    # Past the boxes before it, to incident work: ticked with the space bar.
    _tab_to(driver, lambda e: e.get_attribute("value") == "203", "the incident box")
    _press(driver, Keys.SPACE)
    assert _active(driver).is_selected()
    _tab_to(driver, lambda e: e.tag_name == "button" and e.text == "Create role",
            "the Create role button")
    _press(driver, Keys.ENTER)
    chromium.wait_for(lambda d: "The role Pager is saved." in d.page_source, PAGE_WITHIN_S,
                      "Enter did not create the role")
    made = [r for r in live.call("/role/list", {})["items"] if r["role_name"] == "Pager"]
    assert [(r["description"], r["permission_ids"]) for r in made] == [
        ("Answers pages", [203])]
    assert chromium.console_errors() == []


def test_an_app_key_made_with_the_keyboard_alone(live: LiveConsole,
                                                 chromium: Chromium) -> None:
    sign_in(chromium, live.url, live.reader.email, then="/console/app-keys")
    driver = chromium.driver
    _tab_to(driver, lambda e: (e.get_attribute("href") or "").endswith("/console/app-keys/new"),
            "the New key link")
    _press(driver, Keys.ENTER)
    chromium.wait_for(lambda d: d.current_url.endswith("/console/app-keys/new"), PAGE_WITHIN_S,
                      "Enter did not open the form")
    _tab_to(driver, _by_id("f-key_name"), "the name field")
    _press(driver, "laptop", Keys.ENTER)  # Enter in the field sends the form
    chromium.wait_for(lambda d: d.find_elements(By.ID, "f-app_key"), PAGE_WITHIN_S,
                      "Enter did not make the key")
    key = driver.find_element(By.ID, "f-app_key").get_attribute("value")
    assert key.startswith("dk_")
    look(chromium, "app-key-made")
    # The key is the reader's, and it works once, as shown; the list shows its end only.
    listed = live.call("/app-key/list", {"person_id": live.reader.person_id})["items"]
    assert [k["suffix"] for k in listed if k["key_name"] == "laptop"] == [key[-4:]]
    open_page(chromium, f"{live.url}/console/app-keys")
    assert key not in driver.page_source and f"…{key[-4:]}" in driver.page_source
