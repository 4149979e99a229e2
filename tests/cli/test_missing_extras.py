"""A setting whose optional extra is not installed stops a command with what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dutyline.kit import extras
from tests.fixtures.server import child_env, neutral_cwd

# A child `dutyline` whose interpreter cannot import the named modules, as on a base install.
CHILD = textwrap.dedent(
    """
    import sys
    for name in sys.argv[1].split(","):
        sys.modules[name] = None
    from dutyline.cli import main
    main(sys.argv[2:])
    """
)


def _run_without(modules: str, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, modules, *args], env=child_env(env),
                          cwd=neutral_cwd(), capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.mark.parametrize(
    ("hidden", "env", "extra"),
    [
        ("asyncpg", {"DUTYLINE_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:1/x"}, "postgres"),
        ("redis", {"DUTYLINE_REDIS_URL": "redis://127.0.0.1:1/0"}, "redis"),
        ("opentelemetry", {"DUTYLINE_OTEL": "1"}, "otel"),
    ],
)
def test_a_command_names_the_extra_to_install(hidden: str, env: dict[str, str],
                                              extra: str) -> None:
    done = _run_without(hidden, ["migrate"], **env)
    assert done.returncode != 0
    assert f"pip install 'dutyline[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_serve_and_worker_stop_before_starting_anything(command: str, tmp_path: Path) -> None:
    done = _run_without("redis", [command], DUTYLINE_REDIS_URL="redis://127.0.0.1:1/0",
                        DUTYLINE_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/d.db")
    assert done.returncode != 0
    assert "pip install 'dutyline[redis]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "d.db").exists()  # nothing migrated, no account made


def test_require_names_the_setting_and_the_extra() -> None:
    ghost = extras.Extra("ghost", "dutyline_no_such_module")
    with pytest.raises(extras.MissingExtra) as caught:
        extras.require(ghost, setting="DUTYLINE_GHOST")
    assert "DUTYLINE_GHOST" in str(caught.value)
    assert "pip install 'dutyline[ghost]'" in str(caught.value)
    assert extras.missing([(ghost, "DUTYLINE_GHOST")]) == [str(caught.value)]
    assert extras.missing([(extras.Extra("base", "msgspec"), "X")]) == []


def test_the_default_settings_need_no_extra() -> None:
    assert extras.needed_for(database_url="sqlite+aiosqlite:///./data/d.db",
                             redis_url=None, otel=False) == []
