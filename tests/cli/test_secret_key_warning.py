"""Off SQLite, a server or worker without its shared secret key refuses to start, saying why,
instead of failing on the first console page, signed link or sealed secret."""

from __future__ import annotations

import dataclasses

import click
import pytest

from dutyline import cli
from dutyline.config import Settings
from tests.fixtures.server import run_cli

POSTGRES_URL = "postgresql+asyncpg://u@127.0.0.1:5432/x"


def test_a_postgresql_server_without_a_secret_key_is_refused() -> None:
    settings = dataclasses.replace(Settings(), database_url=POSTGRES_URL, secret_key="")
    with pytest.raises(click.ClickException) as refused:
        cli._require_secret_key(settings)
    assert "DUTYLINE_SECRET_KEY" in refused.value.message


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_serve_and_worker_stop_before_touching_the_database(command: str) -> None:
    # The URL points at a port nobody listens on: the refusal comes before any connection.
    done = run_cli([command], {"DUTYLINE_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/x",
                               "DUTYLINE_SECRET_KEY": ""}, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "DUTYLINE_SECRET_KEY" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("database_url", "secret_key"), [
    ("sqlite+aiosqlite:///data/dutyline.db", ""),  # generated beside the database file
    (POSTGRES_URL, "set"),
])
def test_started_where_the_key_is_known(database_url: str, secret_key: str) -> None:
    settings = dataclasses.replace(Settings(), database_url=database_url,
                                   secret_key=secret_key)
    cli._require_secret_key(settings)
