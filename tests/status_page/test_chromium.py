"""What a visitor sees: a real `dutyline serve`, and headless Chromium (Debian `chromium`)
loading the public page from it, taking a screenshot and dumping the DOM it built.

Chromium missing: a local run skips with the reason; under CI (`.ci/run` sets
DUTYLINE_TEST_CHROMIUM=1 and installs the package) the test fails instead, so CI never goes
green without having looked at the page."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dutyline.db.engine import Database
from dutyline.kit.clock import SystemClock
from tests.fixtures.server import running_server
from tests.fixtures.smtp import SmtpSink
from tests.status_page.public_seed import Seeded, seed_page

REQUIRED_ENV = "DUTYLINE_TEST_CHROMIUM"
CHROMIUM_TIMEOUT_S = 120
pytestmark = pytest.mark.slow


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = "chromium is not installed (apt-get install -y chromium)"
    if os.environ.get(REQUIRED_ENV) == "1" or os.environ.get("CI"):
        pytest.fail(f"{reason}, and {REQUIRED_ENV}=1/CI requires it")
    pytest.skip(reason)


def chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-proxy-server", "--hide-scrollbars",
         f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=False,
    )


async def _seed(url: str) -> Seeded:
    db = Database(url)
    try:
        return await seed_page(db, now_s=int(SystemClock().now()))
    finally:
        await db.dispose()


def test_public_page_in_chromium(
    sqlite_url: str, tmp_path: Path, smtp_sink: SmtpSink
) -> None:
    binary = chromium_binary()
    env = {"DUTYLINE_DATABASE_URL": sqlite_url, "DUTYLINE_SECRET_KEY": "chromium-test",
           "DUTYLINE_SMTP_URL": smtp_sink.url, "DUTYLINE_LOG_LEVEL": "warning"}
    with running_server(env) as server:
        asyncio.run(_seed(sqlite_url))
        url = f"{server.base_url}/status/acme"
        shot = tmp_path / "status.png"
        done = chromium(binary, tmp_path / "profile-shot", f"--screenshot={shot}",
                        "--window-size=1280,2000", url)
        assert shot.exists(), done.stderr[-2000:]
        png = shot.read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        # A blank or error page compresses to a few KB; the rendered page is far larger.
        assert len(png) > 30_000, len(png)
        # Kept for a human look when asked (the test's tmp dir otherwise).
        keep = os.environ.get("DUTYLINE_TEST_SCREENSHOT")
        if keep:
            shutil.copyfile(shot, keep)

        dump = chromium(binary, tmp_path / "profile-dom", "--dump-dom", url)
        assert dump.returncode == 0, dump.stderr[-2000:]
        dom = dump.stdout
        assert '<html lang="en">' in dom
        assert 'id="overall-status"' in dom and "Degraded performance" in dom
        for name in ("Public API", "Webhooks", "Dashboard", "Login", "Status emails",
                     "Core API", "Web &lt;apps&gt; &amp; more",
                     "Elevated API error rates", "Login provider upgrade", "Past 90 days"):
            assert name in dom, name
        # The subscription form is there (SMTP is configured) and nothing ran as script.
        assert 'action="/status/acme/subscribe"' in dom
        assert "<script>x</script>" not in dom
        # The unknown page is a page too.
        missing = chromium(binary, tmp_path / "profile-404", "--dump-dom",
                           f"{server.base_url}/status/nope")
        assert "Page not found" in missing.stdout
