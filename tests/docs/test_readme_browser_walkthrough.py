"""The README's walk-through "In the browser", done as a new user does it: everything through
the console's pages in headless Chromium against a real `dutyline serve` (with workers, its
mail going to an SMTP sink), nothing through the API.

Signed in as the account's Owner, the user invites a teammate with the invite form's default
role, creates a channel, adds an Alertmanager integration and reads its snippet (the push URL
with its key), builds a weekly schedule of the two of them, writes an escalation rule of two
layers (the schedule, then the teammate), sends a test alert from the integration's page,
gets the page by e-mail and acknowledges it through the mail's link. The teammate then opens
the invitation's link, chooses a password and resolves the incident in the console. Each
step leaves a screenshot at 1280 px in build/screenshots/walkthrough-NN-<step>-1280.png (the
README's pictures are copies of some of them)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from tests.fixtures.browser import Chromium, screenshot
from tests.web.browser_support import (
    PAGE_WITHIN_S,
    LiveConsole,
    links_of,
    live_console,
    open_page,
    sign_in,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

TEAMMATE = "Tess Teammate"
TEAMMATE_EMAIL = "tess@example.com"
TEAMMATE_PASSWORD = "a long new password"
TEST_ALERT = "Test alert from dutyline"


@pytest.fixture(scope="module")
def live(sqlite_template: Path,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveConsole]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("walkthrough")) as console:
        yield console


class Walk:
    """The browser, and the numbered screenshots of the walk's steps."""

    def __init__(self, chromium: Chromium) -> None:
        self.chromium = chromium
        self.driver = chromium.driver
        self.step = 0

    def shot(self, name: str) -> None:
        self.step += 1
        path = screenshot(self.driver, f"walkthrough-{self.step:02d}-{name}")
        assert path.stat().st_size > 5_000, path

    def body(self) -> str:
        return str(self.driver.find_element(By.TAG_NAME, "body").text)

    def until(self, condition: Any, what: str) -> Any:
        try:
            return self.chromium.wait_for(condition, PAGE_WITHIN_S, what)
        except TimeoutException:
            screenshot(self.driver, "walkthrough-failed")  # what the page said instead
            raise

    def follow(self, text: str) -> None:
        """Click the first visible link or button-link reading `text`, and wait for the page."""
        before = self.driver.current_url
        link = next(e for e in self.driver.find_elements(By.LINK_TEXT, text) if e.is_displayed())
        link.click()
        self.until(lambda d: d.current_url != before, f"{text!r} opened nothing")
        self.loaded()

    def menu(self, group: str, text: str) -> None:
        """Open the navigation's `group` menu and follow its link `text`."""
        self.driver.find_element(
            By.XPATH, f"//nav[@class='main-nav']//summary[normalize-space()='{group}']").click()
        self.follow(text)

    def loaded(self) -> None:
        self.until(lambda d: d.execute_script("return document.readyState") == "complete",
                   "the page did not load")

    def submit(self, css: str, leaves: str, what: str) -> None:
        """Press the button `css` and wait until the URL no longer holds `leaves`."""
        self.driver.find_element(By.CSS_SELECTOR, css).click()
        self.until(lambda d: leaves not in d.current_url, what)
        self.loaded()

    def type_into(self, element_id: str, text: str) -> None:
        field = self.driver.find_element(By.ID, element_id)
        field.clear()
        field.send_keys(text)

    def id_in_url(self, pattern: str) -> int:
        found = re.search(pattern, self.driver.current_url)
        assert found, (pattern, self.driver.current_url)
        return int(found.group(1))


def test_from_an_empty_account_to_a_resolved_page_in_the_browser(
        live: LiveConsole, chromium: Chromium) -> None:
    walk = Walk(chromium)
    driver = walk.driver
    sign_in(chromium, live.url, live.owner.email)
    walk.shot("signed-in")

    # A teammate, invited with the form's default role (the one that works incidents).
    walk.menu("Configuration", "Members")
    walk.follow("Invite a member")
    role = Select(driver.find_element(By.ID, "f-role_id")).first_selected_option.text
    assert "Responder" in role, role
    walk.type_into("f-member_name", TEAMMATE)
    walk.type_into("f-email", TEAMMATE_EMAIL)
    walk.shot("invite")
    walk.submit("form button[type=submit].primary", "/members/new", "the invitation stayed")
    assert "an invitation is on its way" in walk.body()

    # 1. A channel.
    walk.menu("Configuration", "Channels")
    walk.follow("New channel")
    walk.type_into("f-channel_name", "My service")
    walk.shot("channel-new")
    walk.submit("#f-submit", "/channels/new", "the channel was not created")
    channel_id = walk.id_in_url(r"/console/channels/(\d+)$")
    assert driver.find_element(By.TAG_NAME, "h1").text == "My service"

    # 2. An Alertmanager integration: its snippet holds the push URL with its key, once.
    walk.follow("Add an integration")
    driver.find_element(By.ID, "f-source-prometheus").click()
    walk.type_into("f-integration_name", "Production Alertmanager")
    # The answer to the form is the once-shown key, at the form's address.
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit].primary").click()
    walk.until(lambda d: d.find_elements(By.ID, "snippet-alertmanager"),
               "the integration was not added")
    snippet = driver.find_element(By.ID, "snippet-alertmanager").text
    found = re.search(r"(https?://\S+/event/push/alert/prometheus\?integration_key=(ik_\w+))",
                      snippet)
    assert found, snippet
    push_url, key = found.groups()
    assert push_url.startswith(live.url + "/"), push_url
    assert "webhook_configs:" in snippet and "send_resolved: true" in snippet
    walk.shot("integration-snippet")
    walk.follow("I have copied it: open the integration")
    integration_page = driver.current_url.split("#")[0]
    assert re.search(rf"/console/channels/{channel_id}/integrations/\d+$", integration_page)
    assert key not in driver.page_source  # shown once

    # 3. A weekly schedule of two: the Owner this week, the teammate the next, handing off
    # on this weekday at 00:00 from today (so someone is on call now).
    walk.menu("Configuration", "Schedules")
    walk.follow("New schedule")
    walk.type_into("f-schedule_name", "My service on call")
    today = date.fromisoformat(str(driver.find_element(By.ID, "f-layers-0-start")
                                   .get_attribute("value")))
    Select(driver.find_element(By.ID, "f-layers-0-unit")).select_by_value("week")
    Select(driver.find_element(By.ID, "f-layers-0-weekday")).select_by_value(
        today.strftime("%A").lower())
    driver.find_element(By.ID, "f-layers-0-at").send_keys("0000")
    for turn, name in enumerate(("Acme Owner", TEAMMATE)):
        driver.find_element(By.CSS_SELECTOR, "button[value='add_person:0']").click()
        walk.until(lambda d, t=turn: d.find_elements(By.ID, f"f-layers-0-people-{t}"),
                   "Add a person did not add a turn")
        Select(driver.find_element(By.ID, f"f-layers-0-people-{turn}")).select_by_visible_text(
            name)
    driver.find_element(By.CSS_SELECTOR, "button[value='preview']").click()
    walk.until(lambda d: d.find_elements(By.ID, "h-preview"), "no preview")
    walk.shot("schedule-new")
    walk.submit("button.primary[value=save]", "/schedules/new", "the schedule was not saved")
    walk.id_in_url(r"/console/schedules/(\d+)$")
    assert f"Acme Owner (you), then {TEAMMATE}" in walk.body()
    walk.shot("schedule")

    # 4. The escalation rule: layer 1 whoever is on call in the schedule, layer 2 the
    # teammate, each by their own notification preferences (e-mail by default).
    open_page(chromium, f"{live.url}/console/channels/{channel_id}")
    walk.follow("Add an escalation rule")
    walk.type_into("f-rule_name", "On call")
    driver.find_element(
        By.XPATH, "//fieldset[@id='layer-1']//label[contains(., 'My service on call')]/input"
    ).click()
    driver.find_element(By.CSS_SELECTOR, "button[name=add_layer]").click()
    walk.until(lambda d: d.find_elements(By.ID, "layer-2"), "no second layer")
    assert driver.find_element(By.ID, "f-rule_name").get_attribute("value") == "On call"
    driver.find_element(
        By.XPATH, f"//fieldset[@id='layer-2']//label[contains(., '{TEAMMATE}')]/input").click()
    driver.execute_script("document.getElementById('layer-2').scrollIntoView()")
    walk.shot("escalation-rule-new")
    driver.find_element(By.CSS_SELECTOR, "form.rule-form button.primary").click()
    walk.until(lambda d: re.search(r"/escalation-rules/(?!new$)[^/]+$", d.current_url),
               "the rule was not saved")
    walk.loaded()
    paged = [e.text for e in driver.find_elements(By.CSS_SELECTOR,
                                                  "section.layer ul.people")]
    assert len(paged) == 2 and "Acme Owner" in paged[0] and TEAMMATE in paged[1], paged
    walk.shot("escalation-rule")

    # 5. A test alert from the integration's page: it opens an incident the rule pages.
    open_page(chromium, integration_page)
    driver.find_element(By.CSS_SELECTOR, "form[action$='/test-alert'] button").click()
    walk.until(lambda d: "The test alert opened the incident" in walk.body(),
               "the test alert did not open an incident")
    walk.shot("test-alert")

    # 6. The page by e-mail, acknowledged by its link.
    page = live.wait_for_mail(lambda m: m.rcpt_tos == [live.owner.email]
                              and TEST_ALERT in m.subject)
    links = links_of(page)
    assert links["Acknowledge"].startswith(f"{live.url}/incident/link/"), page.text
    open_page(chromium, links["Acknowledge"])
    walk.shot("page-link")
    driver.find_element(By.CSS_SELECTOR, "form button.primary").click()
    walk.until(lambda d: "Incident acknowledged" in walk.body(), "the link acknowledged nothing")
    walk.shot("acknowledged")

    # 7. The teammate: the invitation's link, a password, and the incident resolved.
    invitation = live.wait_for_mail(lambda m: m.rcpt_tos == [TEAMMATE_EMAIL]
                                    and "/console/welcome/" in m.text)
    [welcome] = [u for u in links_of(invitation).values() if "/console/welcome/" in u] or [
        u for u in invitation.text.split() if "/console/welcome/" in u]
    driver.delete_all_cookies()  # the teammate's own browser
    open_page(chromium, welcome)
    assert driver.find_element(By.TAG_NAME, "h1").text == f"Welcome, {TEAMMATE}"
    walk.type_into("f-password", TEAMMATE_PASSWORD)
    walk.type_into("f-password_again", TEAMMATE_PASSWORD)
    walk.shot("welcome")
    walk.submit("form button[type=submit].primary", "/console/welcome/",
                "setting the password did not sign in")
    walk.until(lambda d: d.find_elements(By.LINK_TEXT, TEST_ALERT),
               "the teammate does not see the incident")
    walk.shot("teammate-incidents")
    walk.follow(TEST_ALERT)
    assert "Processing" in walk.body()
    driver.find_element(By.ID, "do-resolve").click()
    walk.until(lambda d: not d.find_elements(By.ID, "do-resolve")
               and d.find_elements(By.ID, "do-reopen"), "Resolve did not resolve")
    assert "Closed" in walk.body()
    walk.shot("resolved")
    assert chromium.console_errors() == []


README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_names_the_browser_steps_and_shows_their_pictures() -> None:
    text = README.read_text()
    assert "### In the browser" in text
    browser = text.split("### In the browser", 1)[1].split("\n## ", 1)[0]
    assert "```sh" not in browser  # the curl path's commands stay the walk-through's only
    for words in ("Invite a member", "New channel", "Add an integration", "Prometheus",
                  "New schedule", "Add an escalation rule", "Add a layer",
                  "Send a test alert", "Acknowledge", "Resolve", Path(__file__).name):
        assert words in browser, words
    pictures = re.findall(r'<img src="(docs/images/walkthrough-[\w-]+\.png)" alt="[^"]+"',
                          browser)
    assert 3 <= len(pictures) <= 5, pictures
    for picture in pictures:
        assert (README.parent / picture).stat().st_size > 5_000, picture
