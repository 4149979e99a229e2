"""`dutyline backup` while a real server takes a steady stream of alert pushes, then
`dutyline restore` into a new, empty database: the restored server answers the same
incidents, members and keys, its Owner signs in with their password, and the app key and
the integration key still work. On SQLite, and on PostgreSQL when configured."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dutyline.db.engine import Database
from dutyline.web import passwords
from dutyline.web import repository as web_repo
from tests.fixtures import databases as dbs
from tests.fixtures.server import Server, backends, run_cli, running_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

EMAIL = "owner@backup.example"
PASSWORD = "correct horse battery staple"
PUSH_PATH = "/event/push/alert/standard"
MAX_PUSHES = 90  # one page of /incident/list holds them all
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


def _cli(args: list[str], env: dict[str, str]) -> str:
    done = run_cli(args, env)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _set_password(url: str, account_id: int, person_id: int) -> None:
    prepared = await passwords.new_password(PASSWORD)
    db = Database(url)
    try:
        async with db.transaction() as conn:
            await web_repo.set_password(conn, account_id=account_id, member_id=person_id,
                                        password_hash=prepared.hash, now_s=0)
    finally:
        await db.dispose()


def _call(client: httpx.Client, key: str, path: str, body: dict[str, Any]) -> Any:
    answer = client.post(path, params={"app_key": key}, json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


class Pusher(threading.Thread):
    """Pushes alerts numbered 0, 1, 2, ... one after the other until stopped; `answered`
    counts the pushes answered 200 so far (each a new alert, so a new incident)."""

    def __init__(self, server: Server, integration_key: str) -> None:
        super().__init__(daemon=True)
        self.server, self.key = server, integration_key
        self.answered = 0
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.progress = threading.Condition()

    def run(self) -> None:
        with self.server.client() as client:
            while not self.stop.is_set() and self.answered < MAX_PUSHES:
                n = self.answered
                reply = client.post(PUSH_PATH, params={"integration_key": self.key}, json={
                    "alert_key": f"a{n}", "title_rule": f"push {n}",
                    "event_status": "Critical"})
                if reply.status_code != 200:
                    self.failures.append(reply.text)
                    return
                with self.progress:
                    self.answered += 1
                    self.progress.notify_all()

    def wait_for(self, count: int) -> int:
        with self.progress:
            assert self.progress.wait_for(lambda: self.answered >= count or not self.is_alive(),
                                          timeout=60)
            return self.answered


def _incidents(client: httpx.Client, key: str) -> dict[int, dict[str, Any]]:
    """{push number: the incident's stable fields} of every incident."""
    now = int(time.time())
    data = _call(client, key, "/incident/list", {
        "start_time": now - 86_400, "end_time": now + 86_400, "limit": 100})
    assert data["total"] <= 100
    found = {}
    for item in data["items"]:
        n = int(re.fullmatch(r"push (\d+)", item["title"])[1])  # type: ignore[index]
        found[n] = {k: item[k] for k in ("incident_id", "title", "progress",
                                         "incident_severity", "channel_id", "start_time")}
    return found


def _keys(env: dict[str, str]) -> list[dict[str, Any]]:
    """The app keys as `dutyline app-key list` shows them, but when each was last used
    (written after the backup, by the pushes' requests)."""
    return [{k: v for k, v in key.items() if k != "last_used_at"}
            for key in json.loads(_cli(["app-key", "list"], env))]


def _signs_in(server: Server) -> bool:
    with server.client() as client:
        form = client.get("/console/sign-in")
        token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', form.text)
        assert token, form.text
        answer = client.post("/console/sign-in", data={
            "email": EMAIL, "password": PASSWORD, "csrf_token": token[1]})
        if answer.status_code != 303:
            return False
        page = client.get("/console/incidents")
        return page.status_code == 200  # no redirect to the sign-in page


@pytest.mark.parametrize("backend", backends())
def test_a_backup_taken_under_pushes_restores_a_working_server(
        backend: str, tmp_path: Path) -> None:
    with empty_database(backend, tmp_path / "source") as source, \
            empty_database(backend, tmp_path / "restored") as restored:
        created = json.loads(_cli(["init", "--owner-email", EMAIL], source))
        owner_key = created["app_key"]
        asyncio.run(_set_password(source["DUTYLINE_DATABASE_URL"], created["account_id"],
                                  created["person_id"]))
        backup_file = tmp_path / "nightly.backup"
        with running_server(source) as server, server.client() as client:
            channel = _call(client, owner_key, "/channel/create", {"channel_name": "Backed"})
            integration = _call(client, owner_key, "/integration/create", {
                "channel_id": channel["channel_id"], "integration_name": "std"})
            pusher = Pusher(server, integration["integration_key"])
            pusher.start()
            before = pusher.wait_for(10)
            _cli(["backup", str(backup_file)], source)
            after_backup = pusher.wait_for(pusher.answered + 10)
            pusher.stop.set()
            pusher.join(30)
            assert pusher.failures == []
            source_incidents = _incidents(client, owner_key)
            source_members = _call(client, owner_key, "/member/list", {})
        source_keys = _keys(source)
        assert len(source_incidents) == pusher.answered > after_backup - 10 >= before

        key_file = tmp_path / "source" / "secret.key"
        if key_file.exists():  # the secret key travels beside the backup (docs)
            shutil.copy(key_file, tmp_path / "restored")
        _cli(["restore", str(backup_file)], restored)
        again = run_cli(["restore", str(backup_file)], restored)
        assert again.returncode == 1 and "not empty" in again.stderr
        assert _keys(restored) == source_keys

        with running_server(restored) as server, server.client() as client:
            incidents = _incidents(client, owner_key)
            members = _call(client, owner_key, "/member/list", {})
            # A consistent snapshot holds the pushes answered before it, in order, and none
            # half-written: numbers 0..k-1, each incident as the source has it.
            k = len(incidents)
            assert before <= k <= pusher.answered
            assert incidents == {n: source_incidents[n] for n in range(k)}
            assert members == source_members
            assert _signs_in(server)
            pushed = client.post(PUSH_PATH, params={"integration_key":
                                                    integration["integration_key"]},
                                 json={"alert_key": "after", "title_rule": f"push {k}",
                                       "event_status": "Warning"})
            assert pushed.status_code == 200, pushed.text
            assert len(_incidents(client, owner_key)) == k + 1
