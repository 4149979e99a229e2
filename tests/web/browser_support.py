"""A console to look at in the browser: one `dutyline serve` per test module (with workers,
so pages and invitations go out by mail to an SMTP sink), its Owner (password and app key) and
a Reader (the built-in `member` role: it may look at incidents but not act on them).

    @pytest.fixture(scope="module")
    def live(sqlite_template, tmp_path_factory):
        with live_console(sqlite_template, tmp_path_factory) as console:
            yield console"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from selenium.webdriver.common.by import By

from tests.fixtures.browser import WIDTHS, Chromium, axe_violations, screenshot
from tests.fixtures.databases import fresh_sqlite
from tests.fixtures.server import Server, free_port, running_server
from tests.fixtures.smtp import SinkMessage, SmtpSink
from tests.web.live_support import PASSWORD, Seeded, call, seed_member, seed_owner, server_env

MAIL_WITHIN_S = 30.0
PAGE_WITHIN_S = 10.0


@dataclass
class LiveConsole:
    server: Server
    sink: SmtpSink
    owner: Seeded
    reader: Seeded
    reader_name: str

    @property
    def url(self) -> str:
        return self.server.base_url

    def call(self, path: str, body: dict[str, Any]) -> Any:
        """An API call as the Owner."""
        return call(self.url, path, self.owner.app_key, body)

    def mails(self, matching: Callable[[SinkMessage], bool]) -> list[SinkMessage]:
        with self.sink.lock:
            return [m for m in self.sink.messages if matching(m)]

    def wait_for_mail(self, matching: Callable[[SinkMessage], bool]) -> SinkMessage:
        """The first mail `matching`, once the sink has it (a deadline, not a timing test)."""
        deadline = time.monotonic() + MAIL_WITHIN_S
        while not (found := self.mails(matching)):
            assert time.monotonic() < deadline, "the mail did not arrive"
            time.sleep(0.05)
        return found[0]


@contextlib.contextmanager
def live_console(sqlite_template: Path, directory: Path,
                 reader_name: str = "Reader") -> Iterator[LiveConsole]:
    url = fresh_sqlite(sqlite_template, directory)
    owner = asyncio.run(seed_owner(url))
    reader = asyncio.run(seed_member(url, owner, reader_name, builtin="member"))
    sink = SmtpSink()
    sink.start()
    port = free_port()
    env = {**server_env(url), "DUTYLINE_SMTP_URL": sink.url, "DUTYLINE_RUN_WORKERS": "1",
           "DUTYLINE_BASE_URL": f"http://127.0.0.1:{port}"}
    try:
        with running_server(env, port=port) as server:
            yield LiveConsole(server, sink, owner, reader, reader_name)
    finally:
        sink.stop()


def sign_in(chromium: Chromium, base_url: str, email: str, password: str = PASSWORD,
            then: str = "/console/incidents") -> None:
    """Sign in through the form (after signing out whoever was), landing on `then`."""
    driver = chromium.driver
    driver.delete_all_cookies()
    driver.get(f"{base_url}/console/sign-in")
    driver.find_element(By.ID, "f-email").send_keys(email)
    driver.find_element(By.ID, "f-password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit].primary").click()
    chromium.wait_for(lambda d: d.current_url.endswith("/console/incidents"), PAGE_WITHIN_S,
                      "signing in did not open the incident list")
    if then != "/console/incidents":
        open_page(chromium, base_url + then)


def open_page(chromium: Chromium, url: str) -> None:
    chromium.driver.get(url)
    chromium.wait_for(lambda d: d.execute_script("return document.readyState") == "complete",
                      PAGE_WITHIN_S, f"{url} did not load")


def links_of(mail: SinkMessage) -> dict[str, str]:
    """The `Name: URL` lines of a mail's text."""
    return dict(re.findall(r"^(\w+): (https?://\S+)", mail.text, re.M))


def push(base_url: str, integration_key: str, title: str, alert_key: str,
         **labels: str) -> None:
    answer = httpx.post(f"{base_url}/event/push/alert/standard",
                        params={"integration_key": integration_key}, trust_env=False,
                        json={"title_rule": title, "event_status": "Critical",
                              "alert_key": alert_key, "labels": labels}, timeout=10)
    assert answer.status_code == 200, answer.text


def incident_by_title(console: LiveConsole, title: str) -> str:
    """The id of the incident titled `title`, once the alert pipeline made it."""
    now = int(time.time())
    deadline = time.monotonic() + PAGE_WITHIN_S
    while True:
        items = console.call("/incident/list", {"start_time": now - 3600,
                                                "end_time": now + 3600})["items"]
        found = [i["incident_id"] for i in items if i["title"] == title]
        if found:
            return str(found[0])
        assert time.monotonic() < deadline, f"no incident {title!r}"
        time.sleep(0.05)


def paging_integration(console: LiveConsole, name: str = "Paged") -> str:
    """A channel whose escalation rule pages the Owner by e-mail: its integration key."""
    channel_id = console.call("/channel/create", {"channel_name": name})["channel_id"]
    key = console.call("/integration/create", {"channel_id": channel_id,
                                               "integration_name": "alerts"})["integration_key"]
    template = next(t["template_id"] for t in console.call("/template/list", {})["items"]
                    if t["preset"])
    console.call("/channel/escalate/rule/create", {
        "channel_id": channel_id, "rule_name": "Owner", "template_id": template,
        "layers": [{"target": {"person_ids": [console.owner.person_id],
                               "by": {"critical": ["email"]}},
                    "max_times": 0, "notify_step": 1}]})
    return str(key)


# The elements reaching past the screen's right edge or their own box (innermost last), to
# name what is too wide.
WIDER = """
return [...document.body.querySelectorAll('*')]
  .filter(e => e.getBoundingClientRect().right > arguments[0] + 1
          || e.scrollWidth > e.clientWidth + 1)
  .slice(-6).map(e => e.outerHTML.slice(0, 100));
"""


def look(chromium: Chromium, name: str, *, refused: int | None = None) -> None:
    """The open page at each width: a screenshot (build/screenshots/), no axe violation, no
    sideways scroll on a phone, no hostile string run or turned into markup, and no console
    error. `refused`: the page answers a refused form with this status, which the browser
    logs as an error of its own."""
    driver = chromium.driver
    for width in WIDTHS:
        chromium.resize(width)
        shot = screenshot(driver, name)
        assert shot.stat().st_size > 5_000, shot
        violations = axe_violations(driver)
        assert violations == [], (name, width, violations)
        if width == 360:
            scroll = driver.execute_script("return document.documentElement.scrollWidth")
            assert scroll <= width + 1, (name, scroll, driver.execute_script(WIDER, width))
    chromium.resize(WIDTHS[0])
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert driver.find_elements(By.CSS_SELECTOR, "img[src='x'], [onerror]") == []
    errors = [e for e in chromium.console_errors()
              if refused is None or f"status of {refused} " not in e]
    assert errors == [], name
