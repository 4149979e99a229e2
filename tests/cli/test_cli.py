"""The operator's commands end to end: real `dutyline` processes on a loopback port."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from tests.fixtures.server import Server, run_cli, running_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

FIRST_START = "First start"


def _env(db: Path) -> dict[str, str]:
    return {"DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "DUTYLINE_RUN_WORKERS": "0"}


def _team_list(server: Server, key: str) -> httpx.Response:
    with server.client() as client:
        return client.post("/team/list", params={"app_key": key}, json={})


def _init(env: dict[str, str]) -> dict[str, object]:
    done = run_cli(["init"], env)
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert isinstance(created, dict)
    return created


def test_init_prints_json_whose_key_works_against_serve(tmp_path: Path) -> None:
    env = _env(tmp_path / "d.db")
    created = _init(env)
    assert set(created) == {"account_id", "person_id", "app_key"}
    assert isinstance(created["account_id"], int)
    assert created["account_id"] > 0
    assert isinstance(created["person_id"], int)
    assert created["person_id"] > 0
    key = created["app_key"]
    assert isinstance(key, str)
    assert len(key) >= 20

    with running_server(env) as server:
        # The database already has an account: no bootstrap key on this start.
        with server.client() as client:
            made = client.post("/team/upsert", params={"app_key": key}, json={"team_name": "SRE"})
            assert made.status_code == 200, made.text + server.stderr()
            listed = client.post("/team/list", params={"app_key": key}, json={})
        assert listed.status_code == 200
        assert listed.headers["Service-Request-Id"] == listed.json()["request_id"]
        items = listed.json()["data"]["items"]
        assert [(i["team_name"], i["account_id"], i["creator_id"]) for i in items] == [
            ("SRE", created["account_id"], created["person_id"])]
        assert _team_list(server, key + "x").status_code == 401
        assert FIRST_START not in server.stderr()


def test_serve_on_empty_database_prints_key_and_curl_once(tmp_path: Path) -> None:
    env = _env(tmp_path / "fresh.db")
    with running_server(env) as server:
        first_err = server.stderr()
        assert first_err.count(FIRST_START) == 1
        found = re.search(r"curl -s -X POST '(?P<url>[^']+)/team/list\?app_key=(?P<key>[^']+)'",
                          first_err)
        assert found, first_err
        assert found["url"] == server.base_url
        key = found["key"]
        # The key is printed on its own line too, exactly once as a line.
        assert [ln.strip() for ln in first_err.splitlines()].count(key) == 1
        reply = _team_list(server, key)
        assert reply.status_code == 200, reply.text
        assert reply.json()["data"]["total"] == 0
        # Beside the key, a one-time link with which the Owner sets an e-mail address and a
        # password for the console.
        welcome = re.search(r"^\s*(?P<url>\S+/console/welcome/\S+)$", first_err, re.MULTILINE)
        assert welcome, first_err
        assert welcome["url"].startswith(server.base_url + "/console/welcome/")
        with server.client() as client:
            page = client.get(welcome["url"].removeprefix(server.base_url))
        assert page.status_code == 200
        assert 'name="email"' in page.text  # the bootstrap Owner has no address yet

    with running_server(env) as again:
        assert FIRST_START not in again.stderr()
        assert key not in again.stderr()
        assert _team_list(again, key).status_code == 200
    rows = sqlite3.connect(tmp_path / "fresh.db").execute("SELECT count(*) FROM account").fetchone()
    assert rows == (1,)


def test_app_key_create_list_revoke_against_running_server(tmp_path: Path) -> None:
    env = _env(tmp_path / "keys.db")
    owner = _init(env)
    with running_server(env) as server:
        made = run_cli(["app-key", "create", "--person-id", str(owner["person_id"]),
                        "--name", "deploy-bot"], env)
        assert made.returncode == 0, made.stderr
        issued = json.loads(made.stdout)
        assert issued["person_id"] == owner["person_id"]
        assert issued["key_name"] == "deploy-bot"
        new_key = issued["app_key"]
        assert new_key != owner["app_key"]
        assert _team_list(server, new_key).status_code == 200

        listed = run_cli(["app-key", "list", "--account-id", str(owner["account_id"])], env)
        assert listed.returncode == 0, listed.stderr
        assert new_key not in listed.stdout
        assert str(owner["app_key"]) not in listed.stdout
        rows = json.loads(listed.stdout)
        mine = [r for r in rows if r["key_id"] == issued["key_id"]]
        assert len(mine) == 1
        assert len(rows) == 2
        assert mine[0]["suffix"]
        assert new_key.endswith(mine[0]["suffix"])
        assert mine[0]["key_name"] == "deploy-bot"
        other_account = run_cli(["app-key", "list", "--account-id", "1"], env)
        assert json.loads(other_account.stdout) == []

        revoked = run_cli(["app-key", "revoke", str(issued["key_id"])], env)
        assert revoked.returncode == 0, revoked.stderr
        assert json.loads(revoked.stdout) == {"key_id": issued["key_id"], "revoked": True}
        # The server caches resolved keys; another process's revocation reaches it through
        # the change signal (goal: within 1 s, asserted as an outcome with a deadline).
        gone = _team_list(server, new_key)
        for _ in range(250):
            if gone.status_code != 200:
                break
            time.sleep(0.02)
            gone = _team_list(server, new_key)
        assert gone.status_code == 401
        assert gone.json()["error"]["code"] == "Unauthorized"
        # The other key is untouched.
        assert _team_list(server, str(owner["app_key"])).status_code == 200

        again = run_cli(["app-key", "revoke", str(issued["key_id"])], env)
        assert again.returncode == 1
        assert f"no key {issued['key_id']}" in again.stderr

    # The account's audit log shows both commands as done by the server itself; the refused
    # second revocation left no row.
    with sqlite3.connect(tmp_path / "keys.db") as db:
        audited = db.execute(
            "SELECT operation, credential, member_id, target_ids, is_dangerous FROM audit_log"
            " WHERE account_id = ? AND operation LIKE 'app-key.%' ORDER BY id",
            (owner["account_id"],)).fetchall()
    target = f'["{issued["key_id"]}"]'
    assert audited == [("app-key.create", "system", 0, target, 0),
                       ("app-key.delete", "system", 0, target, 1)]


def test_invite_link_prints_a_working_one_time_link(tmp_path: Path) -> None:
    env = _env(tmp_path / "invite.db")
    done = run_cli(["init", "--owner-email", "Boss@Example.com"], env)
    created = json.loads(done.stdout)
    by_email = run_cli(["invite-link", "--email", "boss@example.com"], env)
    assert by_email.returncode == 0, by_email.stderr
    by_id = run_cli(["invite-link", "--person-id", str(created["person_id"])], env)
    assert by_id.returncode == 0, by_id.stderr
    first, second = by_email.stdout.strip(), by_id.stdout.strip()
    assert "/console/welcome/" in first and first != second
    with running_server(env) as server, server.client() as client:
        # The newer link retires the older one.
        path = "/console/welcome/"
        assert client.get(path + first.rsplit("/", 1)[1]).status_code == 404
        assert client.get(path + second.rsplit("/", 1)[1]).status_code == 200
    unknown = run_cli(["invite-link", "--email", "nobody@example.com"], env)
    assert unknown.returncode != 0
    assert "nobody@example.com" in unknown.stderr
    neither = run_cli(["invite-link"], env)
    assert neither.returncode != 0


def test_app_key_create_for_unknown_person_fails(tmp_path: Path) -> None:
    env = _env(tmp_path / "nobody.db")
    _init(env)
    done = run_cli(["app-key", "create", "--person-id", "424242"], env)
    assert done.returncode != 0
    assert "424242" in done.stderr
    assert "app_key" not in done.stdout


def _schema_snapshot(db: Path) -> tuple[list[tuple[str, str]], list[tuple[str]]]:
    conn = sqlite3.connect(db)
    try:
        objects = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").fetchall()
        versions = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    finally:
        conn.close()
    return objects, versions


def test_migrate_is_idempotent_and_keeps_data(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    env = _env(db)
    first = run_cli(["migrate"], env)
    assert first.returncode == 0, first.stderr
    before = _schema_snapshot(db)
    assert len(before[1]) == 1
    assert before[0]
    created = _init(env)
    second = run_cli(["migrate"], env)
    assert second.returncode == 0, second.stderr
    third = run_cli(["migrate"], env)
    assert third.returncode == 0, third.stderr
    assert _schema_snapshot(db) == before
    conn = sqlite3.connect(db)
    try:
        accounts = conn.execute("SELECT account_id FROM account").fetchall()
    finally:
        conn.close()
    assert accounts == [(created["account_id"],)]


def test_long_lived_processes_run_on_uvloop() -> None:
    """`dutyline worker` runs its loop on uvloop (as `serve` does through uvicorn)."""
    import uvloop

    from dutyline.cli import _run_fast

    seen: list[object] = []

    async def main() -> None:
        seen.append(asyncio.get_running_loop())

    _run_fast(main())
    assert isinstance(seen[0], uvloop.Loop)


def test_invite_link_names_the_configured_base_url_or_says_there_is_none(
        tmp_path: Path) -> None:
    env = _env(tmp_path / "base.db")
    run_cli(["init", "--owner-email", "boss@example.com"], env)
    bare = run_cli(["invite-link", "--email", "boss@example.com"], env)
    assert bare.stdout.startswith("http://127.0.0.1:8080/console/welcome/")
    assert "no base URL is configured" in bare.stderr and "DUTYLINE_BASE_URL" in bare.stderr
    configured = run_cli(["invite-link", "--email", "boss@example.com"],
                         {**env, "DUTYLINE_BASE_URL": "https://oncall.example.com/"})
    assert configured.stdout.startswith("https://oncall.example.com/console/welcome/")
    assert "base URL" not in configured.stderr
    (tmp_path / "dutyline.toml").write_text('base_url = "http://127.0.0.1:8123"\n')
    from_file = run_cli(["invite-link", "--email", "boss@example.com"], env, cwd=tmp_path)
    assert from_file.stdout.startswith("http://127.0.0.1:8123/console/welcome/")
    assert "base URL" not in from_file.stderr


def test_the_first_start_prints_links_of_the_configured_base_url(tmp_path: Path) -> None:
    env = {**_env(tmp_path / "first.db"), "DUTYLINE_BASE_URL": "https://oncall.example.com"}
    with running_server(env) as server:
        err = server.stderr()
    assert "curl -s -X POST 'https://oncall.example.com/team/list?app_key=" in err
    assert "  https://oncall.example.com/console/welcome/" in err
    assert f"127.0.0.1:{server.port}" not in err
