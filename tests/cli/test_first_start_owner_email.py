"""The first start takes the Owner's e-mail address when it is given (`serve --owner-email`
or DUTYLINE_OWNER_EMAIL); without it, the welcome link asks for it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixtures.server import run_cli, running_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

_KEY = re.compile(r"app_key=(?P<key>[^']+)'")


def _env(db: Path) -> dict[str, str]:
    return {"DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "DUTYLINE_RUN_WORKERS": "0"}


def test_serve_takes_the_owner_s_email_on_first_start(tmp_path: Path) -> None:
    env = {**_env(tmp_path / "fresh.db"), "DUTYLINE_OWNER_EMAIL": "Boss@Example.com"}
    with running_server(env) as server:
        err = server.stderr()
        assert "they sign in as boss@example.com" in err, err
        found = _KEY.search(err)
        assert found, err
        with server.client() as client:
            info = client.post("/member/info", params={"app_key": found["key"]}, json={})
        assert info.status_code == 200, info.text
        assert info.json()["data"]["email"] == "boss@example.com"


def test_serve_without_it_leaves_the_address_to_the_welcome_link(tmp_path: Path) -> None:
    with running_server(_env(tmp_path / "fresh.db")) as server:
        err = server.stderr()
        assert "sets the Owner's e-mail address and password" in err, err
        found = _KEY.search(err)
        assert found, err
        with server.client() as client:
            info = client.post("/member/info", params={"app_key": found["key"]}, json={})
        assert info.status_code == 200, info.text
        assert "email" not in info.json()["data"]


def test_an_address_that_is_none_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path / "bad.db")
    for args in (["init", "--owner-email", "not an address"],
                 ["serve", "--owner-email", "boss@", "--port", "1"]):
        done = run_cli(args, env)
        assert done.returncode != 0, args
        assert "--owner-email" in done.stderr, done.stderr
