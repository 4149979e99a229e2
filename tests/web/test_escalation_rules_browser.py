"""The escalation rule pages in headless Chromium against a real `dutyline serve`: the list,
a rule's page, the form (new and edit) at 1280 and 360 px with screenshots in
build/screenshots/, no axe-core violation, no console error, no sideways scroll on a phone;
adding a layer without JavaScript; and the form filled and sent with the keyboard only."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.fixtures.browser import WIDTHS, Chromium, screenshot
from tests.web.browser_support import (
    PAGE_WITHIN_S,
    LiveConsole,
    live_console,
    look,
    open_page,
    sign_in,
)

pytestmark = pytest.mark.slow

PRESET = "6321aad26c12104586a88916"


@dataclass(frozen=True)
class Rules:
    live: LiveConsole
    channel_id: int
    rule_id: str

    @property
    def base(self) -> str:
        return f"{self.live.url}/console/channels/{self.channel_id}/escalation-rules"


@pytest.fixture(scope="module")
def rules(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rules]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("rules")) as live:
        channel_id = int(live.call("/channel/create", {"channel_name": "Checkout"})["channel_id"])
        team_id = live.call("/team/upsert", {"team_name": "Site reliability",
                                             "person_ids": [live.owner.person_id,
                                                            live.reader.person_id]})["team_id"]
        rule_id = live.call("/channel/escalate/rule/create", {
            "channel_id": channel_id, "template_id": PRESET, "rule_name": "Business hours",
            "description": "The owner first, then the whole team",
            "layers": [
                {"target": {"person_ids": [live.owner.person_id],
                            "by": {"follow_preference": True}},
                 "max_times": 2, "notify_step": 5, "escalate_window": 15},
                {"target": {"team_ids": [team_id], "emails": ["boss@example.com"],
                            "by": {"critical": ["email"]}},
                 "escalate_window": 30}],
            "time_filters": [{"start": "09:00", "end": "18:00", "repeat": [1, 2, 3, 4, 5]}],
            "filters": [[{"key": "severity", "oper": "IN", "vals": ["Critical"]}]]})["rule_id"]
        yield Rules(live, channel_id, str(rule_id))







def _body(driver: Any) -> str:
    return str(driver.find_element(By.TAG_NAME, "body").text)


def test_the_pages_at_both_widths(rules: Rules, chromium: Chromium) -> None:
    live = rules.live
    sign_in(chromium, live.url, live.owner.email)
    driver = chromium.driver
    for name, path, text in (
            ("escalation-rules", "", "Business hours"),
            ("escalation-rule", f"/{rules.rule_id}", "Who would be paged now"),
            ("escalation-rule-new", "/new", "Layer 1"),
            ("escalation-rule-edit", f"/{rules.rule_id}/edit", "Layer 2")):
        open_page(chromium, rules.base + path)
        assert text in _body(driver), name
        look(chromium, name)
    # The layers of the form, seen where they are.
    for width in WIDTHS:
        chromium.resize(width)
        driver.execute_script("document.getElementById('layer-2').scrollIntoView()")
        screenshot(driver, "escalation-rule-edit-layer")
    chromium.resize(WIDTHS[0])
    # Whom each layer pages now: the owner, then the team's two members.
    open_page(chromium, f"{rules.base}/{rules.rule_id}")
    paged = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "section.layer ul.people")]
    assert len(paged) == 2 and "Reader" not in paged[0] and "Reader" in paged[1]


def test_a_layer_is_added_without_javascript(rules: Rules, chromium: Chromium) -> None:
    live = rules.live
    sign_in(chromium, live.url, live.owner.email)
    driver = chromium.driver
    open_page(chromium, rules.base + "/new")
    driver.find_element(By.ID, "f-rule_name").send_keys("Typed first")
    driver.find_element(By.XPATH, "//button[@name='add_layer']").click()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "layer-2"), PAGE_WITHIN_S,
                      "the form did not come back with a second layer")
    assert driver.find_element(By.ID, "f-rule_name").get_attribute("value") == "Typed first"
    open_page(chromium, rules.base + "/new")  # leave the form unsent


def _tab_to(driver: Any, matches: Any, limit: int = 200) -> Any:
    """Press Tab until the focused element is the wanted one (bounded)."""
    for _ in range(limit):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        active = driver.switch_to.active_element
        if matches(active):
            return active
    raise AssertionError("Tab never reached the field")


def test_the_form_with_the_keyboard_only(rules: Rules, chromium: Chromium) -> None:
    live = rules.live
    sign_in(chromium, live.url, live.owner.email)
    driver = chromium.driver
    open_page(chromium, rules.base + "/new")
    keys = ActionChains(driver)

    def named(name: str) -> Any:
        return lambda e: e.get_attribute("name") == name

    _tab_to(driver, named("rule_name"))
    keys.send_keys("Typed by keyboard").perform()
    box = _tab_to(driver, named("layers[0].target.person_ids"))
    ActionChains(driver).send_keys(Keys.SPACE).perform()
    assert box.is_selected()
    _tab_to(driver, named("layers[0].notify_step"))
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL) \
        .send_keys("5").send_keys(Keys.ENTER).perform()
    chromium.wait_for(lambda d: "/escalation-rules/" in d.current_url
                      and not d.current_url.endswith("/new"), PAGE_WITHIN_S,
                      "Enter did not save the rule")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Typed by keyboard"
    assert "Again every 5 minutes" not in _body(driver)  # no repeat: max_times is 0
    saved = live.call("/channel/escalate/rule/list", {"channel_id": rules.channel_id})
    made = next(r for r in saved["items"] if r["rule_name"] == "Typed by keyboard")
    assert made["template_id"] == PRESET
    assert made["layers"][0]["notify_step"] == 5
