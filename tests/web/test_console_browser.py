"""The console's flows in headless Chromium against one real `dutyline serve` (with workers
and an SMTP sink): acting on an incident from its page, an e-mailed acknowledge link, a member
who may not act (no buttons, and a forged POST is refused), and an invitation mail's link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.fixtures.browser import WIDTHS, Chromium, screenshot
from tests.web.browser_support import (
    PAGE_WITHIN_S,
    LiveConsole,
    incident_by_title,
    links_of,
    live_console,
    open_page,
    paging_integration,
    push,
    sign_in,
)
from tests.web.live_support import create_incident

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[LiveConsole]:
    with live_console(sqlite_template, tmp_path_factory.mktemp("console")) as console:
        yield console


def _timeline(driver: Any) -> list[str]:
    return [li.text for li in driver.find_elements(By.CSS_SELECTOR, "ol.timeline > li")]


def _progress(driver: Any) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "#incident .badges [class*=progress-]"
                                   ).text)


def _click(chromium: Chromium, button_id: str, then_present: str) -> None:
    """Press a button of the incident page and wait for the swapped region to hold
    `then_present` (a CSS selector)."""
    chromium.driver.find_element(By.ID, button_id).click()
    chromium.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, then_present), PAGE_WITHIN_S,
                      f"{button_id} did not lead to {then_present}")


def test_acknowledge_then_reopen_with_a_reason_from_the_incident_page(
        live: LiveConsole, chromium: Chromium) -> None:
    incident_id = create_incident(live.url, live.owner, "disk full on db-1")
    sign_in(chromium, live.url, live.owner.email, then=f"/console/incidents/{incident_id}")
    driver = chromium.driver
    assert _progress(driver) == "Triggered"

    _click(chromium, "do-ack", "#do-unack")
    assert _progress(driver) == "Processing"
    _click(chromium, "do-resolve", "#f-reason")
    assert _progress(driver) == "Closed"
    driver.find_element(By.ID, "f-reason").send_keys("the disk filled up again")
    _click(chromium, "do-reopen", "#do-ack")
    assert _progress(driver) == "Triggered"

    entries = _timeline(driver)
    assert any("acknowledged" in e for e in entries), entries
    assert any("reopened: the disk filled up again" in e for e in entries), entries
    assert _progress_of(live, incident_id) == "Triggered"
    # A fresh page shows the same: the entries are the stored feed, not the page's memory.
    driver.refresh()
    assert any("reopened: the disk filled up again" in e for e in _timeline(driver))
    assert chromium.console_errors() == []
    # Pictures of ordinary pages for the documentation (the hostile ones are elsewhere).
    for width in WIDTHS:
        chromium.resize(width)
        screenshot(driver, "incident-page")
    open_page(chromium, f"{live.url}/console/incidents")
    chromium.resize(360)
    screenshot(driver, "incident-list-page")


def _page_mail_of(live: LiveConsole, title: str) -> dict[str, str]:
    mail = live.wait_for_mail(lambda m: title in m.subject)
    return links_of(mail)


@pytest.fixture(scope="module")
def paging(live: LiveConsole) -> str:
    return paging_integration(live)


@pytest.mark.parametrize("signed_in", [True, False], ids=["signed-in", "anonymous"])
def test_an_emailed_acknowledge_link_confirms_in_the_browser(
        live: LiveConsole, paging: str, chromium: Chromium,
        signed_in: bool) -> None:
    title = f"queue backlog ({'signed in' if signed_in else 'anonymous'})"
    push(live.url, paging, title, alert_key=title)
    links = _page_mail_of(live, title)
    assert sorted(links) == ["Acknowledge", "Open", "Resolve"], links
    incident_id = incident_by_title(live, title)
    driver = chromium.driver
    if signed_in:
        sign_in(chromium, live.url, live.owner.email)

    # Opening the link changes nothing (a mail scanner fetches it too): it asks.
    open_page(chromium, links["Acknowledge"])
    assert driver.find_element(By.TAG_NAME, "h1").text == "Acknowledge this incident?"
    assert driver.find_element(By.ID, "incident-title").text == title
    driver.find_element(By.CSS_SELECTOR, "form[action^='/incident/link/'] button").click()

    if signed_in:
        chromium.wait_for(lambda d: d.current_url == f"{live.url}/console/incidents/"
                          f"{incident_id}", PAGE_WITHIN_S, "not on the console's page")
        assert "Incident acknowledged." in driver.find_element(By.CSS_SELECTOR,
                                                               ".flash").text
        assert driver.find_elements(By.ID, "do-unack")  # the console's own actions
    else:
        chromium.wait_for(lambda d: d.find_element(By.TAG_NAME, "h1").text
                          == "Incident acknowledged", PAGE_WITHIN_S, "not acknowledged")
        assert driver.current_url.startswith(f"{live.url}/incident/link/")
        assert driver.find_elements(By.CSS_SELECTOR, "form button") == []  # read-only
        assert driver.find_element(By.LINK_TEXT, "Sign in to do more")
    assert _progress_of(live, incident_id) == "Processing"
    assert "Processing" in driver.find_element(By.CSS_SELECTOR, ".badges").text
    assert chromium.console_errors() == []


def _progress_of(live: LiveConsole, incident_id: str) -> str:
    info = live.call("/incident/info", {"incident_id": incident_id})
    return str(info["progress"])


def test_a_member_without_incident_manage_sees_no_actions_and_a_forged_post_is_refused(
        live: LiveConsole, chromium: Chromium) -> None:
    incident_id = create_incident(live.url, live.owner, "cache misses climbing")
    sign_in(chromium, live.url, live.reader.email, then=f"/console/incidents/{incident_id}")
    driver = chromium.driver
    assert driver.find_element(By.ID, "incident-title").text == "cache misses climbing"
    assert driver.find_elements(By.CSS_SELECTOR, "#incident form") == []
    assert driver.find_elements(By.CSS_SELECTOR, "#incident button") == []

    # The page's own CSRF token (htmx's header on <body>) does not make a refused
    # permission: the service answers 403 and the incident stays as it was.
    token = driver.execute_script(
        "return JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRF-Token']")
    assert token
    driver.set_script_timeout(PAGE_WITHIN_S)
    for action, form in (("ack", {}), ("comment", {"comment": "forged"}),
                         ("resolve", {})):
        status = driver.execute_async_script("""
            const [url, form, token, done] = arguments;
            fetch(url, {method: "POST", headers: {"X-CSRF-Token": token},
                        body: new URLSearchParams(form)}).then(r => done(r.status));
        """, f"/console/incidents/{incident_id}/{action}", form, token)
        assert status == 403, action
    assert _progress_of(live, incident_id) == "Triggered"
    driver.refresh()
    assert not any("forged" in e for e in _timeline(driver))
    assert _progress(driver) == "Triggered"


def test_an_invitation_mail_sets_a_password_and_signs_in(
        live: LiveConsole, chromium: Chromium) -> None:
    sign_in(chromium, live.url, live.owner.email, then="/console/members")
    driver = chromium.driver
    driver.find_element(By.CSS_SELECTOR, "a[href='/console/members/new']").click()
    chromium.wait_for(lambda d: d.find_elements(By.ID, "f-member_name"), PAGE_WITHIN_S)
    driver.find_element(By.ID, "f-member_name").send_keys("Newcomer")
    driver.find_element(By.ID, "f-email").send_keys("newcomer@members.example")
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit].primary").click()
    chromium.wait_for(lambda d: "/console/members/new" not in d.current_url, PAGE_WITHIN_S,
                      "the invitation form stayed")

    mail = live.wait_for_mail(lambda m: m.rcpt_tos == ["newcomer@members.example"])
    [link] = [u for u in links_of(mail).values() if "/console/welcome/" in u] or [
        u for u in mail.text.split() if "/console/welcome/" in u]
    assert link.startswith(f"{live.url}/console/welcome/"), mail.text

    driver.delete_all_cookies()  # the newcomer's own browser
    open_page(chromium, link)
    assert driver.find_element(By.TAG_NAME, "h1").text == "Welcome, Newcomer"
    driver.find_element(By.ID, "f-password").send_keys("a long new password")
    driver.find_element(By.ID, "f-password_again").send_keys("a long new password")
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit].primary").click()
    chromium.wait_for(lambda d: d.current_url.endswith("/console/incidents"), PAGE_WITHIN_S,
                      "setting the password did not sign in")
    open_page(chromium, f"{live.url}/console/me")
    assert "Newcomer" in driver.find_element(By.TAG_NAME, "main").text
    assert chromium.console_errors() == []
    # The link worked once (its 404 is logged); the password signs in from now on.
    open_page(chromium, link)
    assert driver.find_elements(By.ID, "f-password_again") == []
    sign_in(chromium, live.url, "newcomer@members.example", "a long new password")
