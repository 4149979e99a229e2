"""What the data commands' end-to-end tests share: empty databases as an operator makes
them, running `dutyline` commands, and reading a server's incidents."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.fixtures import databases as dbs
from tests.fixtures.server import run_cli

PUSH_PATH = "/event/push/alert/standard"
NO_LIMITS = {"DUTYLINE_RATE_LIMIT_PER_SECOND": "0", "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0"}


@contextlib.contextmanager
def empty_database(backend: str, directory: Path) -> Iterator[dict[str, str]]:
    """The environment of a database nobody made yet: a SQLite path in a new directory, or
    a new PostgreSQL database as `createdb` makes it (no tables)."""
    if backend == "sqlite":
        directory.mkdir()
        yield {"DUTYLINE_DATABASE_URL": dbs.sqlite_url(directory / "dutyline.db"), **NO_LIMITS}
        return
    admin = dbs.postgres_admin_url()
    assert admin is not None
    url = dbs._new_postgres_database(admin)
    try:
        yield {"DUTYLINE_DATABASE_URL": url, **NO_LIMITS}
    finally:
        dbs.drop_postgres_database(admin, url)


def cli(args: list[str], env: dict[str, str]) -> str:
    done = run_cli(args, env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def call(client: httpx.Client, key: str, path: str, body: dict[str, Any]) -> Any:
    answer = client.post(path, params={"app_key": key}, json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def incidents_of(client: httpx.Client, key: str) -> dict[int, dict[str, Any]]:
    """{push number: the incident's stable fields} of every incident."""
    now = int(time.time())
    data = call(client, key, "/incident/list", {
        "start_time": now - 86_400, "end_time": now + 86_400, "limit": 100})
    assert data["total"] <= 100
    found = {}
    for item in data["items"]:
        n = int(re.fullmatch(r"push (\d+)", item["title"])[1])  # type: ignore[index]
        found[n] = {k: item[k] for k in ("incident_id", "title", "progress",
                                         "incident_severity", "channel_id", "start_time")}
    return found
