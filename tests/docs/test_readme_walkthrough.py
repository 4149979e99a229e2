"""The README's "Page yourself in five minutes", run as written.

The walk-through's ```sh blocks (under its "### The walk-through" heading) are taken from
README.md and run with bash, unchanged, against a real `dutyline serve` on a free loopback
port with a fresh SQLite file. What the reader supplies comes in the way the README says:
`DL` and `KEY` in the environment (its `export DL=http://127.0.0.1:8080 KEY=<the printed
key>`), the README's own `dutyline.toml` pointed at the SMTP sink's port, and `mail.log`
in the working directory holding the mails the sink got (the README's sink `tee`s them
there). The test then holds the server to what the README promises: a page by e-mail with
absolute links, acknowledged by its link, and no repeat once acknowledged."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.fixtures.server import Server, free_port, running_server
from tests.fixtures.smtp import SinkMessage, SmtpSink

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Page yourself in five minutes"
STEPS = "### The walk-through"
DEADLINE_S = 30.0
ADDRESS = "me@example.com"


def _section() -> str:
    text = README.read_text()
    assert SECTION in text, f"README.md has no {SECTION!r}"
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def walkthrough_blocks() -> list[str]:
    """The ```sh blocks of the walk-through's steps, in order."""
    steps = _section().split(STEPS, 1)[1]
    return re.findall(r"^```sh\n(.*?)^```", steps, flags=re.S | re.M)


def write_readme_config(cwd: Path, smtp_port: int) -> None:
    """Run the README's line that writes `dutyline.toml`, then point it at the sink's port."""
    found = re.search(r"^echo '(smtp_url = \"smtp://127\.0\.0\.1:1025[^']*)' > dutyline\.toml$",
                      _section(), re.M)
    assert found, "the README writes smtp_url = \"smtp://127.0.0.1:1025…\" to dutyline.toml"
    subprocess.run(["bash", "-e", "-c", found.group(0)], cwd=cwd, check=True, timeout=30)
    config = cwd / "dutyline.toml"
    config.write_text(config.read_text().replace(":1025", f":{smtp_port}", 1))


def pages(sink: SmtpSink) -> list[SinkMessage]:
    """The mails of the walk-through's incident (the test notification is another mail)."""
    return [m for m in mails(sink) if "My first page" in m.subject]


def run_block(block: str, cwd: Path, server: Server, key: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "LANG": "C.UTF-8",
           "DL": server.base_url, "KEY": key}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{block}\n-> {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert '"error"' not in done.stdout, done.stdout
    return done.stdout


def wait_until(check: object, what: str) -> None:
    """Poll `check` (a callable) until it is true; a deadline, not a timing assertion."""
    deadline = time.monotonic() + DEADLINE_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def mails(sink: SmtpSink) -> list[SinkMessage]:
    with sink.lock:
        return list(sink.messages)


def test_the_readme_walkthrough_pages_you_and_the_link_acknowledges(tmp_path: Path) -> None:
    blocks = walkthrough_blocks()
    assert len(blocks) == 2, "the steps, then the acknowledgement once the mail is in"
    assert "export DL=http://127.0.0.1:8080 KEY=<the printed key>" in _section()
    sink = SmtpSink()
    sink.start()
    port = free_port()
    db = tmp_path / "dutyline.db"
    write_readme_config(tmp_path, sink.port)
    # The server reads the README's dutyline.toml from its working directory.
    env = {"DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
           "DUTYLINE_BASE_URL": f"http://127.0.0.1:{port}", "DUTYLINE_RUN_WORKERS": "1"}
    try:
        with running_server(env, port=port, cwd=tmp_path) as server:
            printed = re.search(r"This app key is shown once:\s+(\S+)", server.stderr())
            assert printed, server.stderr()
            key = printed.group(1)

            out = run_block(blocks[0], tmp_path, server, key)
            assert "integration key ik_" in out, out
            assert re.search(r'"channel":\s*"email",\s*"status":\s*"sent"', out), out

            wait_until(lambda: pages(sink), "the page by e-mail")
            [page] = pages(sink)
            assert page.rcpt_tos == [ADDRESS]
            assert "My first page" in page.subject
            links = dict(re.findall(r"^(Acknowledge|Resolve|Open): (\S+)", page.text, re.M))
            assert sorted(links) == ["Acknowledge", "Open", "Resolve"], page.text
            for url in links.values():
                assert url.startswith(f"{server.base_url}/incident/link/"), url
            assert f'href="{links["Acknowledge"]}"' in page.html

            (tmp_path / "mail.log").write_bytes(b"".join(m.message.as_bytes() for m in
                                                         mails(sink)))
            out = run_block(blocks[1], tmp_path, server, key)
            assert "Incident acknowledged" in out, out
            assert re.search(r"^\w{6} Processing My first page$", out, re.M), out

            # A minute passes: the escalation's timeline and its timer move a minute back,
            # so the repeat the rule plans a minute after the page is due now. Acknowledged,
            # the escalation is paused and the step sends nothing.
            with sqlite3.connect(db, timeout=10) as conn:
                assert conn.execute("SELECT status FROM dispatch_state").fetchall() == [
                    ("paused",)]
                [(timer,)] = conn.execute("SELECT id FROM job WHERE kind = 'dispatch.step' "
                                          "AND status = 'pending'").fetchall()
                conn.execute("UPDATE dispatch_state SET layer_started_at = layer_started_at"
                             " - 60000, last_notified_at = last_notified_at - 60000")
                conn.execute("UPDATE job SET run_at = run_at - 60000 WHERE id = ?", (timer,))

            def settled() -> bool:
                with sqlite3.connect(db, timeout=10) as conn:
                    return not conn.execute(
                        "SELECT 1 FROM job WHERE status != 'done' AND (id = ? OR kind = "
                        "'notify.deliver')", (timer,)).fetchall()

            wait_until(settled, "the repeat's step and any delivery it made")
            assert len(pages(sink)) == 1
    finally:
        sink.stop()
