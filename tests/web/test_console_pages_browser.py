"""Every console page in headless Chromium, at 1280 and 360 px, against one real `dutyline
serve` whose data is full of hostile strings: a screenshot of each (build/screenshots/), no
serious or critical axe-core violation, no console error (a CSP violation is one), no sideways
scroll on a phone; and none of the hostile strings runs, adds an element or makes a
`javascript:` link."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.fixtures.browser import WIDTHS, Chromium, axe_violations, screenshot
from tests.web.browser_support import (
    PAGE_WITHIN_S,
    WIDER,
    LiveConsole,
    incident_by_title,
    links_of,
    live_console,
    open_page,
    paging_integration,
    push,
    sign_in,
)

pytestmark = pytest.mark.slow

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '"><img src=x onerror="window.__pwned=1">'
# Names are 39 characters at most: the same attack without the quotes.
NAME_IMG = '"><img src=x onerror=window.__pwned=1>'
TITLE = f"checkout {SCRIPT} {IMG}"


@dataclass(frozen=True)
class Pages:
    live: LiveConsole
    incident_id: str
    member_id: int
    team_id: int
    link: str  # the e-mailed acknowledge link of the hostile incident


@pytest.fixture(scope="module")
def pages(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("pages")) as live:
        key = paging_integration(live, name=f"Payments {SCRIPT}")
        push(live.url, key, TITLE, alert_key="hostile", script=SCRIPT, img=IMG,
             runbook="javascript:alert(1)", dashboard="https://grafana.example/d/1")
        incident_id = incident_by_title(live, TITLE)
        live.call("/incident/comment", {"incident_ids": [incident_id],
                                        "comment": f"{SCRIPT} and {IMG}"})
        members = live.call("/member/invite", {"members": [
            {"member_name": SCRIPT, "email": "script@members.example"},
            {"member_name": NAME_IMG, "email": "img@members.example"}]})["items"]
        team_id = live.call("/team/upsert", {
            "team_name": NAME_IMG, "description": SCRIPT,
            "person_ids": [m["member_id"] for m in members] + [live.owner.person_id]}
        )["team_id"]
        mail = live.wait_for_mail(lambda m: "checkout" in m.subject)
        yield Pages(live, incident_id, members[1]["member_id"], team_id,
                    links_of(mail)["Acknowledge"])


def _unharmed(driver: Any) -> None:
    """None of the hostile strings became markup or ran."""
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    scripts = driver.execute_script(
        "return [...document.scripts].map(s => s.src ? 'src' : s.textContent)")
    assert all(s == "src" for s in scripts), scripts  # only the server's own files
    assert driver.find_elements(By.CSS_SELECTOR, "img[src='x'], [onerror]") == []
    assert driver.find_elements(By.CSS_SELECTOR, "a[href^='javascript:' i]") == []




def _look(chromium: Chromium, name: str) -> None:
    """The open page at each width: screenshot, axe, console, no sideways scroll."""
    driver = chromium.driver
    for width in WIDTHS:
        chromium.resize(width)
        assert chromium.width == width
        shot = screenshot(driver, name)
        assert shot.stat().st_size > 5_000, shot
        violations = axe_violations(driver)
        assert violations == [], (name, width, violations)
        if width == 360:
            scroll = driver.execute_script("return document.documentElement.scrollWidth")
            assert scroll <= width + 1, (name, scroll, driver.execute_script(WIDER, width))
    chromium.resize(WIDTHS[0])
    _unharmed(driver)
    assert chromium.console_errors() == [], name


def _shows(driver: Any, *texts: str) -> None:
    body = driver.find_element(By.TAG_NAME, "body").text
    for text in texts:
        assert text in body, text


def test_the_pages_before_signing_in(pages: Pages, chromium: Chromium) -> None:
    live = pages.live
    open_page(chromium, f"{live.url}/console/sign-in")
    _look(chromium, "sign-in")
    open_page(chromium, pages.link)
    _shows(chromium.driver, TITLE, "javascript:alert(1)")
    _look(chromium, "signed-link")


def test_the_pages_of_a_signed_in_owner(pages: Pages, chromium: Chromium) -> None:
    live = pages.live
    sign_in(chromium, live.url, live.owner.email)
    driver = chromium.driver
    _shows(driver, TITLE)
    _look(chromium, "incidents")
    for name, path, texts in (
            ("incident", f"/console/incidents/{pages.incident_id}",
             (TITLE, f"{SCRIPT} and {IMG}", "javascript:alert(1)", SCRIPT, IMG)),
            ("oncall", "/console/on-call", ()),
            ("me", "/console/me", ()),
            ("members", "/console/members", (SCRIPT, NAME_IMG)),
            ("member", f"/console/members/{pages.member_id}", (NAME_IMG,)),
            ("teams", "/console/teams", (NAME_IMG,)),
            ("team", f"/console/teams/{pages.team_id}", (NAME_IMG, SCRIPT))):
        open_page(chromium, live.url + path)
        assert driver.find_elements(By.TAG_NAME, "h1"), name
        _shows(driver, *texts)
        _look(chromium, name)
    # The one label that is a web address is the one link among them.
    open_page(chromium, f"{live.url}/console/incidents/{pages.incident_id}")
    hrefs = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR,
                                                                   "dl.labels a")]
    assert hrefs == ["https://grafana.example/d/1"]


def _menu(driver: Any, label: str) -> Any:
    return driver.find_element(By.XPATH, f"//details[summary[normalize-space()='{label}']]")


def test_the_grouped_navigation_works_on_a_phone_without_javascript(
        pages: Pages, chromium: Chromium) -> None:
    """The Configuration menu opens and its link leads on with the page's scripts off (a
    <details> needs none); open, it passes axe and fits a phone; one menu is open at a time;
    a Reader is offered only the configuration its role may read (channels, templates)."""
    live = pages.live
    driver = chromium.driver
    sign_in(chromium, live.url, live.owner.email)
    chromium.resize(360)
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        driver.get(f"{live.url}/console/incidents")
        menu = _menu(driver, "Configuration")
        teams = menu.find_element(By.CSS_SELECTOR, "a[href='/console/teams']")
        assert not teams.is_displayed()
        menu.find_element(By.TAG_NAME, "summary").click()
        assert teams.is_displayed()
        teams.click()
        chromium.wait_for(lambda d: d.current_url.endswith("/console/teams"), PAGE_WITHIN_S,
                          "the menu's link did not lead to the teams")
    finally:
        driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})

    for width in WIDTHS:
        chromium.resize(width)
        open_page(chromium, f"{live.url}/console/teams")
        menu = _menu(driver, "Configuration")
        assert menu.find_element(By.CSS_SELECTOR, "summary.current")
        menu.find_element(By.TAG_NAME, "summary").click()
        assert menu.find_element(By.CSS_SELECTOR, "a[href='/console/teams']").is_displayed()
        screenshot(driver, "nav-open")
        assert axe_violations(driver) == [], width
        scroll = driver.execute_script("return document.documentElement.scrollWidth")
        assert scroll <= width + 1, (width, scroll, driver.execute_script(WIDER, width))
        account = _menu(driver, "Account")
        account.find_element(By.TAG_NAME, "summary").click()
        assert menu.get_attribute("open") is None  # the other menu closed
        assert account.find_element(By.CSS_SELECTOR, "button[type=submit]").is_displayed()
        screenshot(driver, "nav-account")
        assert axe_violations(driver) == [], width
        scroll = driver.execute_script("return document.documentElement.scrollWidth")
        assert scroll <= width + 1, (width, scroll, driver.execute_script(WIDER, width))
    chromium.resize(WIDTHS[0])
    assert chromium.console_errors() == []

    sign_in(chromium, live.url, live.reader.email)
    labels = [s.text for s in driver.find_elements(By.CSS_SELECTOR, "header summary")]
    assert labels == ["Configuration", "Account"]
    # Of the configuration, a Reader may read the channels and the templates.
    reader_menu = _menu(driver, "Configuration")
    assert [a.get_attribute("href") for a in reader_menu.find_elements(By.TAG_NAME, "a")] == [
        f"{live.url}/console/channels", f"{live.url}/console/templates"]
    _look(chromium, "nav-reader")
