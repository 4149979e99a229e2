"""Off SQLite, a server without its shared secret key says so when it starts."""

from __future__ import annotations

import dataclasses

import pytest

from dutyline import cli
from dutyline.config import Settings


def test_a_postgresql_server_without_a_secret_key_is_warned_on_stderr(
        capsys: pytest.CaptureFixture[str]) -> None:
    settings = dataclasses.replace(
        Settings(), database_url="postgresql+asyncpg://u@127.0.0.1:5432/x", secret_key="")
    cli._warn_without_secret_key(settings)
    err = capsys.readouterr().err
    assert "DUTYLINE_SECRET_KEY" in err and "console" in err


@pytest.mark.parametrize(("database_url", "secret_key"), [
    ("sqlite+aiosqlite:///data/dutyline.db", ""),  # generated beside the database file
    ("postgresql+asyncpg://u@127.0.0.1:5432/x", "set"),
])
def test_no_warning_where_the_key_is_known(capsys: pytest.CaptureFixture[str],
                                            database_url: str, secret_key: str) -> None:
    settings = dataclasses.replace(Settings(), database_url=database_url,
                                   secret_key=secret_key)
    cli._warn_without_secret_key(settings)
    assert capsys.readouterr().err == ""
