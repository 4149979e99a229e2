"""The tests never read a dutyline.toml from the folder they run in: the README's walk-through
writes one in the repository's folder, and a developer who followed it must still get a green
`make test`. Here a file that no server could start with stands in that folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.server import run_cli, running_server

pytestmark = pytest.mark.slow

BAD = 'databse_url = "sqlite+aiosqlite:///nowhere.db"\nsmtp_url = 25\n'


@pytest.fixture
def in_a_folder_with_a_bad_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "repository"
    folder.mkdir()
    (folder / "dutyline.toml").write_text(BAD)
    monkeypatch.chdir(folder)
    return folder


def test_commands_and_servers_of_the_tests_never_read_it(
        in_a_folder_with_a_bad_config: Path, tmp_path: Path) -> None:
    # Read on purpose, the file stops a command: it is a real test of the guard.
    refused = run_cli(["config", "show"], cwd=in_a_folder_with_a_bad_config)
    assert refused.returncode != 0 and "databse_url" in refused.stderr
    shown = run_cli(["config", "show", "--json"])
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["config_file"] is None
    url = f"sqlite+aiosqlite:///{tmp_path / 'served.db'}"
    with running_server({"DUTYLINE_DATABASE_URL": url}) as server, server.client() as web:
        assert web.get("/healthz").status_code == 200
