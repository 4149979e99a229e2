"""The systemd units of docs/deploy.md (deploy/systemd/): `systemd-analyze verify` finds no
fault and no unknown key in them, `systemd-analyze security` rates their exposure "OK", they
hold the hardening the page promises, and their ExecStart lines are commands dutyline takes.

`verify` needs the ExecStart binary to exist: each unit is checked as a copy whose binary is
this environment's `dutyline` script, nothing else changed.

systemd-analyze missing: skipped with the reason, unless DUTYLINE_TEST_SYSTEMD=1 (.ci/run,
which installs it) makes that a failure."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.server import dutyline_command

UNITS = Path(__file__).resolve().parents[2] / "deploy" / "systemd"
INSTALLED_BINARY = "/opt/dutyline/venv/bin/dutyline"
REQUIRED_ENV = "DUTYLINE_TEST_SYSTEMD"
# systemd-analyze security's overall exposure, in tenths: 2.0 and below reads "OK".
MAX_EXPOSURE = 20

HARDENING = ["User=dutyline", "Group=dutyline", "ProtectSystem=strict", "NoNewPrivileges=yes",
             "StateDirectory=dutyline", "EnvironmentFile=/etc/dutyline/dutyline.env",
             "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet="]


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found:
        return found
    reason = "systemd-analyze is not installed (apt-get install -y systemd)"
    if os.environ.get(REQUIRED_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRED_ENV}=1 requires it")
    pytest.skip(reason)


def _lines(unit: Path) -> list[str]:
    return [line.strip() for line in unit.read_text().splitlines()]


def _exec_start(unit: Path) -> list[str]:
    [line] = [line for line in _lines(unit) if line.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


@pytest.fixture(params=["dutyline.service", "dutyline-worker.service"])
def unit(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A copy of the unit whose ExecStart binary exists on this machine."""
    text = (UNITS / request.param).read_text()
    assert text.count(INSTALLED_BINARY) == 1
    (script,) = dutyline_command()[:1]
    copy = tmp_path / request.param
    copy.write_text(text.replace(INSTALLED_BINARY, script))
    return copy


def test_verify_finds_nothing_wrong(unit: Path) -> None:
    done = subprocess.run([systemd_analyze(), "verify", str(unit)], capture_output=True,
                          text=True, timeout=60, check=False)
    # An unknown key is only a warning (exit 0): no output at all is the bar.
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    assert done.stdout.strip() == ""


def test_exposure_is_ok(unit: Path) -> None:
    done = subprocess.run([systemd_analyze(), "security", "--offline=yes",
                           f"--threshold={MAX_EXPOSURE}", str(unit)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout.splitlines()[-1]


def test_hardened_as_documented(unit: Path) -> None:
    lines = _lines(unit)
    for wanted in HARDENING:
        assert wanted in lines, f"{unit.name} lacks {wanted}"


def test_exec_start_is_a_command_dutyline_takes(unit: Path) -> None:
    command = _exec_start(unit)
    assert Path(command[0]).name == "dutyline"
    done = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert command[1] in {"serve", "worker"}


BACKUPS = "/var/lib/dutyline-backups"


def _backup_units(tmp_path: Path) -> tuple[Path, Path]:
    """Copies of the nightly backup's service and timer, the service's binary this
    environment's `dutyline`."""
    (script,) = dutyline_command()[:1]
    text = (UNITS / "dutyline-backup.service").read_text()
    assert text.count(INSTALLED_BINARY) == 1
    service = tmp_path / "dutyline-backup.service"
    service.write_text(text.replace(INSTALLED_BINARY, script))
    timer = tmp_path / "dutyline-backup.timer"
    timer.write_text((UNITS / "dutyline-backup.timer").read_text())
    return service, timer


def test_the_nightly_backup_units_verify(tmp_path: Path) -> None:
    service, timer = _backup_units(tmp_path)
    done = subprocess.run([systemd_analyze(), "verify", str(service), str(timer)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    assert "OnCalendar=*-*-* 03:00" in _lines(timer)
    lines = _lines(service)
    for wanted in ("User=dutyline", "ProtectSystem=strict", "NoNewPrivileges=yes",
                   "EnvironmentFile=/etc/dutyline/dutyline.env"):
        assert wanted in lines


def test_the_nightly_backup_commands_back_up_and_keep_fourteen_days(tmp_path: Path) -> None:
    """The service's ExecStart and ExecStartPost, run as systemd would run them (`%%` is a
    `%`), on a served database's file: a dated backup appears and one older than 14 days
    goes."""
    service, _ = _backup_units(tmp_path)
    backups = tmp_path / "backups"
    backups.mkdir()
    stale = backups / "2020-01-01.backup"
    stale.write_bytes(b"old")
    os.utime(stale, (0, 0))
    database = tmp_path / "dutyline.db"
    env = {**os.environ, "DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{database}"}
    migrate = subprocess.run([*dutyline_command(), "migrate"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=120, check=False)
    assert migrate.returncode == 0, migrate.stderr
    for key in ("ExecStart=", "ExecStartPost="):
        [line] = [x for x in _lines(service) if x.startswith(key)]
        command = line.removeprefix(key).replace("%%", "%").replace(BACKUPS, str(backups))
        done = subprocess.run(shlex.split(command), env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    made = sorted(p.name for p in backups.iterdir())
    assert len(made) == 1 and made[0] != stale.name and made[0].endswith(".backup"), made
    assert (backups / made[0]).stat().st_size > 0
