"""The browser harness itself (tests/fixtures/browser.py): it skips locally and fails under
CI without its binaries, its axe-core check finds what it must, and screenshots are named
after the width they were taken at."""

from __future__ import annotations

import pytest

from tests.fixtures import browser
from tests.fixtures.browser import WIDTHS, Chromium, axe_violations, screenshot


def test_without_chromium_a_local_run_skips_and_ci_fails(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setattr(browser.shutil, "which", lambda _name: None)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(browser.REQUIRED_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        browser.binaries()
    monkeypatch.setenv(browser.REQUIRED_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="requires it"):
        browser.binaries()


def test_without_axe_core_a_local_run_skips_and_ci_fails(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(browser, "AXE_JS", browser.REPO / "tests" / "browser" / "missing.js")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(browser.REQUIRED_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="npm ci --prefix tests/browser"):
        browser.axe_source()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        browser.axe_source()


@pytest.mark.slow
def test_axe_reports_serious_violations_and_screenshots_name_their_width(
        chromium: Chromium) -> None:
    driver = chromium.driver
    driver.get("data:text/html,<html><body><button></button><img src=x></body></html>")
    found = {v["id"]: v for v in axe_violations(driver)}
    assert {"button-name", "image-alt", "html-has-lang", "document-title"} <= set(found)
    assert found["button-name"]["nodes"] == ["<button></button>"]
    driver.get("data:text/html,<html lang=en><head><title>ok</title><meta name=viewport "
               "content='width=device-width'></head><body><main><h1>Fine</h1></main></body>"
               "</html>")
    assert axe_violations(driver) == []
    for width in WIDTHS:
        chromium.resize(width)
        path = screenshot(driver, "harness")
        assert path.name == f"harness-{width}.png"
        assert path.read_bytes().startswith(b"\x89PNG")
