"""`dutyline doctor` as an operator runs it, against real peers: a served dutyline, an SMTP
sink, Redis when the run has one; and against a deployment broken in every way it checks."""

from __future__ import annotations

import email.utils
import http.server
import os
import re
import threading
import time
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from dutyline.db.migrate import MIGRATIONS_DIR, upgrade
from tests.fixtures.server import free_port, run_cli, running_server
from tests.fixtures.smtp import SmtpSink

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

KEY = "a-secret-key-long-enough-for-the-doctor-0123"


def _lines(output: str) -> dict[str, tuple[str, str]]:
    """{check: (status, detail with its `->` line)} of the report."""
    found: dict[str, tuple[str, str]] = {}
    last = ""
    for line in output.splitlines():
        status, name = line[:4].strip(), line[6:21].strip()
        if status in {"ok", "warn", "FAIL"} and name:
            found[name], last = (status, line[21:].strip()), name
        elif line.strip().startswith("->") and last:
            found[last] = (found[last][0], found[last][1] + "\n" + line.strip())
    return found


def test_a_healthy_deployment_passes_every_check(tmp_path: Path, smtp_sink: SmtpSink) -> None:
    port = free_port()
    env = {"DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'ok.db'}",
           "DUTYLINE_SECRET_KEY": KEY, "DUTYLINE_SMTP_URL": smtp_sink.url,
           "DUTYLINE_BASE_URL": f"http://127.0.0.1:{port}"}
    redis_url = os.environ.get("DUTYLINE_TEST_REDIS_URL")
    if redis_url:
        env["DUTYLINE_REDIS_URL"] = redis_url
    with running_server(env, port=port):
        done = run_cli(["doctor"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = _lines(done.stdout)
    expected = {"configuration", "secret key", "database", "migrations", "e-mail", "base URL",
                "clock", *(["redis"] if redis_url else [])}
    assert set(checks) == expected, done.stdout
    assert {status for status, _ in checks.values()} == {"ok"}, done.stdout
    assert checks["e-mail"][1].startswith(f"smtp://127.0.0.1:{smtp_sink.port} answered EHLO")
    assert smtp_sink.messages == []  # it says hello, and sends nothing
    assert checks["migrations"][1].startswith("at head")
    assert f"http://127.0.0.1:{port} (DUTYLINE_BASE_URL) answers" in checks["base URL"][1]
    assert "the server at" in checks["clock"][1]
    assert done.stdout.rstrip().endswith("0 failed, 0 to look at, "
                                         f"{len(expected)} ok")


def test_a_broken_deployment_says_what_is_wrong_and_what_to_set(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    scripts = ScriptDirectory(str(MIGRATIONS_DIR))
    head = scripts.get_revision(scripts.get_current_head())
    assert head is not None and isinstance(head.down_revision, str)
    upgrade(url, head.down_revision)
    closed = free_port()  # nothing listens there
    env = {"DUTYLINE_DATABASE_URL": url, "DUTYLINE_SECRET_KEY": "short",
           "DUTYLINE_SMTP_URL": f"smtp://127.0.0.1:{closed}?starttls=off",
           "DUTYLINE_REDIS_URL": f"redis://127.0.0.1:{closed}/0",
           "DUTYLINE_BASE_URL": f"http://127.0.0.1:{closed}"}
    done = run_cli(["doctor"], env)
    assert done.returncode == 1, done.stdout + done.stderr
    checks = _lines(done.stdout)
    assert checks["migrations"][0] == "warn"
    assert checks["migrations"][1].startswith(f"1 pending (at {head.down_revision}, head "
                                              f"{head.revision})")
    assert "-> run `dutyline migrate` once" in checks["migrations"][1]
    assert checks["secret key"][0] == "warn" and "at least 32" in checks["secret key"][1]
    assert checks["e-mail"][0] == "FAIL" and f"127.0.0.1:{closed}" in checks["e-mail"][1]
    assert "-> check the host, port" in checks["e-mail"][1]
    assert checks["redis"][0] == "FAIL" and "DUTYLINE_REDIS_URL" in checks["redis"][1]
    assert checks["base URL"][0] == "FAIL" and "does not answer" in checks["base URL"][1]
    assert "Traceback" not in done.stdout + done.stderr


def test_a_bad_config_file_is_reported_with_its_key(tmp_path: Path) -> None:
    (tmp_path / "dutyline.toml").write_text('smtp_ur = "smtp://127.0.0.1:25"\n')
    done = run_cli(["doctor"], {}, cwd=tmp_path)
    assert done.returncode == 1
    checks = _lines(done.stdout)
    assert checks["configuration"][0] == "FAIL" and "smtp_ur" in checks["configuration"][1]
    assert "Traceback" not in done.stderr


def test_off_sqlite_the_secret_key_and_the_database_are_required(tmp_path: Path) -> None:
    env = {"DUTYLINE_DATABASE_URL": f"postgresql+asyncpg://dutyline@127.0.0.1:{free_port()}/x",
           "DUTYLINE_SECRET_KEY": ""}
    done = run_cli(["doctor"], env, cwd=tmp_path)
    assert done.returncode == 1
    checks = _lines(done.stdout)
    assert checks["secret key"][0] == "FAIL" and "set DUTYLINE_SECRET_KEY" in \
        checks["secret key"][1]
    assert checks["database"][0] == "FAIL" and "DUTYLINE_DATABASE_URL" in checks["database"][1]


class _SkewedHealth(http.server.BaseHTTPRequestHandler):
    """A health check whose server's clock is an hour ahead of this machine's."""

    def do_GET(self) -> None:
        body = b'{"status":"ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def date_time_string(self, timestamp: float | None = None) -> str:
        return email.utils.formatdate(time.time() + 3600, usegmt=True)

    def log_message(self, *args: object) -> None:
        pass


def test_a_clock_far_from_the_servers_is_reported(tmp_path: Path) -> None:
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _SkewedHealth)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        done = run_cli(["doctor"], {"DUTYLINE_BASE_URL": f"http://127.0.0.1:{port}",
                                    "DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/c.db"})
    finally:
        server.shutdown()
        server.server_close()
    checks = _lines(done.stdout)
    assert checks["base URL"][0] == "ok", done.stdout
    status, detail = checks["clock"]
    off = re.search(rf"the server at http://127\.0\.0\.1:{port} is \+(\d+\.\d) s off", detail)
    assert status == "FAIL" and off is not None and abs(float(off[1]) - 3600) < 60, detail
    assert "-> synchronise the clocks" in detail and done.returncode == 1
