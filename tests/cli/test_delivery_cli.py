"""The delivery lines at start-up and `dutyline notify-test`, as real processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.server import run_cli, running_server
from tests.fixtures.smtp import SmtpSink

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]


def _env(db: Path, **extra: str) -> dict[str, str]:
    return {"DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "DUTYLINE_RUN_WORKERS": "0",
            **extra}


def test_serve_names_each_channel_it_cannot_send_by_and_what_to_set(tmp_path: Path) -> None:
    with running_server(_env(tmp_path / "d.db")) as server:
        err = server.stderr()
    lines = err.splitlines()
    assert "delivery: e-mail is not configured: set DUTYLINE_SMTP_URL" in lines
    assert any(line.startswith("delivery: SMS and voice calls is not configured: set "
                               "DUTYLINE_TWILIO_ACCOUNT_SID") for line in lines)
    assert any("DUTYLINE_ALLOW_PRIVATE_NETWORK=true" in line for line in lines)
    assert [line for line in lines if "chat apps" in line] == [
        "delivery: chat apps not configured: Slack, Feishu, DingTalk, WeCom and Zoom (set "
        "DUTYLINE_SLACK_*, DUTYLINE_FEISHU_*, DUTYLINE_DINGTALK_*, DUTYLINE_WECOM_*, "
        "DUTYLINE_ZOOM_*; docs/paging.md)"]
    # Each said once: no line again, and no log record repeating them on the same terminal.
    said = [line for line in lines if line.strip()]
    assert len(said) == len(set(said)), said
    assert not any("delivery" in line for line in lines if line.startswith("{"))


def test_serve_names_how_email_is_sent(tmp_path: Path) -> None:
    env = _env(tmp_path / "d.db", DUTYLINE_SMTP_URL="smtp://127.0.0.1:2525?starttls=off",
               DUTYLINE_ALLOW_PRIVATE_NETWORK="true")
    with running_server(env) as server:
        err = server.stderr()
    assert "delivery: e-mail: via smtp://127.0.0.1:2525 (STARTTLS off), from " in err
    assert "DUTYLINE_SMTP_URL" not in err and "DUTYLINE_ALLOW_PRIVATE_NETWORK" not in err
    assert "DUTYLINE_TWILIO_ACCOUNT_SID" in err


def test_notify_test_sends_to_a_member_named_by_email_and_prints_each_channel(
        tmp_path: Path, smtp_sink: SmtpSink) -> None:
    env = _env(tmp_path / "d.db", DUTYLINE_SMTP_URL=smtp_sink.url)
    created = run_cli(["init", "--owner-email", "oncall@example.com"], env)
    assert created.returncode == 0, created.stderr
    person_id = json.loads(created.stdout)["person_id"]
    done = run_cli(["notify-test", "--email", "oncall@example.com"], env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer == {"member_id": person_id, "results": [
        {"channel": "email", "status": "sent", "address": "oncall@example.com"}]}
    [mail] = smtp_sink.messages
    assert mail.rcpt_tos == ["oncall@example.com"]
    skipped = run_cli(["notify-test", "--member-id", str(person_id), "--channel", "sms"], env)
    assert skipped.returncode == 1
    [result] = json.loads(skipped.stdout)["results"]
    assert result["status"] == "skipped" and "DUTYLINE_TWILIO" in result["reason"]
    unknown = run_cli(["notify-test", "--email", "nobody@example.com"], env)
    assert unknown.returncode != 0 and "no member has" in unknown.stderr
