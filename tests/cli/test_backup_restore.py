"""`dutyline backup` while a real server takes a steady stream of alert pushes, then
`dutyline restore` into a new, empty database: the restored server answers the same
incidents, members and keys, its Owner signs in with their password, and the app key and
the integration key still work. On SQLite, and on PostgreSQL when configured."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from dutyline.db.engine import Database
from dutyline.web import passwords
from dutyline.web import repository as web_repo
from tests.cli.data_support import PUSH_PATH, call, cli, empty_database, incidents_of
from tests.fixtures.server import Server, backends, run_cli, running_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

EMAIL = "owner@backup.example"
PASSWORD = "correct horse battery staple"
MAX_PUSHES = 90  # one page of /incident/list holds them all


async def _set_password(url: str, account_id: int, person_id: int) -> None:
    prepared = await passwords.new_password(PASSWORD)
    db = Database(url)
    try:
        async with db.transaction() as conn:
            await web_repo.set_password(conn, account_id=account_id, member_id=person_id,
                                        password_hash=prepared.hash, now_s=0)
    finally:
        await db.dispose()


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


def _keys(env: dict[str, str]) -> list[dict[str, Any]]:
    """The app keys as `dutyline app-key list` shows them, but when each was last used
    (written after the backup, by the pushes' requests)."""
    return [{k: v for k, v in key.items() if k != "last_used_at"}
            for key in json.loads(cli(["app-key", "list"], env))]


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
        created = json.loads(cli(["init", "--owner-email", EMAIL], source))
        owner_key = created["app_key"]
        asyncio.run(_set_password(source["DUTYLINE_DATABASE_URL"], created["account_id"],
                                  created["person_id"]))
        backup_file = tmp_path / "nightly.backup"
        with running_server(source) as server, server.client() as client:
            channel = call(client, owner_key, "/channel/create", {"channel_name": "Backed"})
            integration = call(client, owner_key, "/integration/create", {
                "channel_id": channel["channel_id"], "integration_name": "std"})
            pusher = Pusher(server, integration["integration_key"])
            pusher.start()
            before = pusher.wait_for(10)
            cli(["backup", str(backup_file)], source)
            after_backup = pusher.wait_for(pusher.answered + 10)
            pusher.stop.set()
            pusher.join(30)
            assert pusher.failures == []
            source_incidents = incidents_of(client, owner_key)
            source_members = call(client, owner_key, "/member/list", {})
        source_keys = _keys(source)
        assert len(source_incidents) == pusher.answered > after_backup - 10 >= before

        key_file = tmp_path / "source" / "secret.key"
        if key_file.exists():  # the secret key travels beside the backup (docs)
            shutil.copy(key_file, tmp_path / "restored")
        cli(["restore", str(backup_file)], restored)
        again = run_cli(["restore", str(backup_file)], restored)
        assert again.returncode == 1 and "not empty" in again.stderr
        assert _keys(restored) == source_keys

        with running_server(restored) as server, server.client() as client:
            restored_incidents = incidents_of(client, owner_key)
            members = call(client, owner_key, "/member/list", {})
            # A consistent snapshot holds the pushes answered before it, in order, and none
            # half-written: numbers 0..k-1, each incident as the source has it.
            k = len(restored_incidents)
            assert before <= k <= pusher.answered
            assert restored_incidents == {n: source_incidents[n] for n in range(k)}
            assert members == source_members
            assert _signs_in(server)
            pushed = client.post(PUSH_PATH, params={"integration_key":
                                                    integration["integration_key"]},
                                 json={"alert_key": "after", "title_rule": f"push {k}",
                                       "event_status": "Warning"})
            assert pushed.status_code == 200, pushed.text
            assert len(incidents_of(client, owner_key)) == k + 1
