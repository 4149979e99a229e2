"""The config file and the base URL end to end: real `dutyline` processes, the file read
by every command and by `serve --workers N`'s processes, `config show`, and links in
notifications that name the address `serve` listens on when no base URL is configured."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.dispatch.support import create_rule, layer, make_channel, make_integration, rule_body
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.server import Server, run_cli, running_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

LINKS = re.compile(r"^links in notifications use (?P<url>\S+) \((?P<why>.*)\)$", re.MULTILINE)
KEY = re.compile(r"app_key=(?P<key>[^']+)'")


def _sqlite(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'd.db'}"


def test_config_show_masks_secrets_and_says_where_each_setting_came_from(
        tmp_path: Path) -> None:
    (tmp_path / "dutyline.toml").write_text(
        'smtp_url = "smtp://mailer:mail-pass@mail.example.com:587"\n'
        'telegram_bot_token = "123:tg-secret"\n'
        "worker_concurrency = 8\n"
        "rate_limit_per_second = 7\n")
    env = {"DUTYLINE_SECRET_KEY": "env-secret", "DUTYLINE_WORKER_CONCURRENCY": "3",
           "DUTYLINE_REDIS_URL": "redis://:redis-pass@cache:6379/0"}
    file = str((tmp_path / "dutyline.toml").resolve())

    shown = run_cli(["config", "show"], env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    for secret in ("mail-pass", "tg-secret", "env-secret", "redis-pass"):
        assert secret not in out
    lines = {line.split()[0]: line for line in out.splitlines() if not line.startswith("#")}
    assert f"# config file: {file}" in out
    assert "smtp://mailer:******@mail.example.com:587" in lines["smtp_url"]
    assert lines["smtp_url"].endswith(f"[file {file}]")
    assert "******" in lines["telegram_bot_token"]
    assert lines["secret_key"].split()[1] == "******"
    assert lines["secret_key"].endswith("[env DUTYLINE_SECRET_KEY]")
    assert lines["worker_concurrency"].split()[1] == "3"  # the environment wins
    assert lines["rate_limit_per_second"].split()[1] == "7"
    assert lines["llm_api_key"].split()[1:] == ["(unset)", "[default]"]

    as_json = run_cli(["config", "show", "--json"], env, cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    rows = {r["name"]: r for r in doc["settings"]}
    assert doc["config_file"] == file
    assert rows["worker_concurrency"] == {"name": "worker_concurrency", "value": 3,
                                          "variable": "DUTYLINE_WORKER_CONCURRENCY",
                                          "source": "environment"}
    assert (rows["rate_limit_per_second"]["value"], rows["rate_limit_per_second"]["source"]) == (
        7, file)
    assert rows["telegram_bot_token"]["value"] == "******"
    assert rows["redis_url"]["value"] == "redis://:******@cache:6379/0"
    assert rows["base_url"]["source"] == "default"


def test_a_bad_config_file_ends_any_command_with_its_message(tmp_path: Path) -> None:
    env = {"DUTYLINE_DATABASE_URL": _sqlite(tmp_path)}
    missing = run_cli(["--config", "nope.toml", "migrate"], env, cwd=tmp_path)
    assert missing.returncode == 1
    assert "Error: config file not found: nope.toml" in missing.stderr

    (tmp_path / "dutyline.toml").write_text('databse_url = "sqlite+aiosqlite:///x.db"\n')
    for args in (["migrate"], ["config", "show"], ["serve", "--port", "1"]):
        done = run_cli(args, env, cwd=tmp_path)
        assert done.returncode == 1, args
        assert "unknown setting 'databse_url' (did you mean 'database_url'?)" in done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "d.db").exists()  # nothing ran
    # Help still works beside a broken file.
    assert run_cli(["serve", "--help"], env, cwd=tmp_path).returncode == 0


def _preview_detail_url(server: Server, key: str) -> str:
    with server.client() as client:
        reply = client.post("/template/preview", params={"app_key": key},
                            json={"type": "sms", "content": "{{.DetailUrl}}"})
    assert reply.status_code == 200, reply.text + server.stderr()
    content: str = reply.json()["data"]["content"]
    return content


def test_serve_workers_read_the_file_and_link_to_the_port_they_listen_on(
        tmp_path: Path) -> None:
    config = tmp_path / "conf" / "settings.toml"
    config.parent.mkdir()
    config.write_text(f'database_url = "{_sqlite(tmp_path)}"\nmax_body_bytes = 4096\n')
    # --host 0.0.0.0 is no address for a link: 127.0.0.1 with the port served.
    with running_server(
            global_args=["--config", str(config)], args=["--host", "0.0.0.0", "--workers", "2"],
            cwd=tmp_path) as server:
        err = server.stderr()
        [links] = LINKS.findall(err)
        assert links[0] == server.base_url
        assert "--host 0.0.0.0 is no address to link to, so 127.0.0.1" in links[1]
        assert "set DUTYLINE_BASE_URL" in links[1]
        found = KEY.search(err)
        assert found, err
        key = found["key"]
        assert f"curl -s -X POST '{server.base_url}/team/list" in err
        # Answered by the worker processes, which read the file and the base URL from the
        # environment `serve` left them.
        for _ in range(4):
            assert _preview_detail_url(server, key).startswith(
                f"{server.base_url}/console/incidents/")
            with server.client() as client:
                big = client.post("/team/list", params={"app_key": key},
                                  content=b'{"x": "' + b"a" * 5000 + b'"}',
                                  headers={"Content-Type": "application/json"})
            assert big.status_code == 413, big.text
    assert (tmp_path / "d.db").exists()  # the file's database_url


def test_a_configured_base_url_is_kept_and_named_in_the_banner(tmp_path: Path) -> None:
    (tmp_path / "dutyline.toml").write_text(
        f'database_url = "{_sqlite(tmp_path)}"\nbase_url = "https://oncall.example.com/"\n')
    file = str((tmp_path / "dutyline.toml").resolve())
    with running_server(cwd=tmp_path) as server:
        err = server.stderr()
        [links] = LINKS.findall(err)
        assert links == ("https://oncall.example.com", f"base_url in {file}")
        found = KEY.search(err)
        assert found, err
        assert _preview_detail_url(server, found["key"]).startswith(
            "https://oncall.example.com/console/incidents/")
    with running_server({"DUTYLINE_BASE_URL": "https://env.example.com"}, cwd=tmp_path) as again:
        [links] = LINKS.findall(again.stderr())
        assert links == ("https://env.example.com", "DUTYLINE_BASE_URL")


@pytest.mark.anyio
async def test_a_page_links_to_the_port_serve_listens_on(
        api: Api, owner: Person, database_url: str) -> None:
    got: list[dict[str, Any]] = []
    arrived = threading.Event()

    async def hook(request: Request) -> JSONResponse:
        got.append(json.loads(await request.body()))
        arrived.set()
        return JSONResponse({"ok": True})

    env = {"DUTYLINE_DATABASE_URL": database_url, "DUTYLINE_SECRET_KEY": "test-secret-key",
           "DUTYLINE_RUN_WORKERS": "1", "DUTYLINE_ALLOW_PRIVATE_NETWORK": "1"}
    with serve_asgi(Starlette(routes=[Route("/hook", hook, methods=["POST"])])) as receiver:
        channel_id = await make_channel(api, owner)
        await create_rule(api, owner, rule_body(channel_id, [
            layer(webhooks=[{"type": "custom", "settings": {"url": receiver + "/hook"}}])]))
        integration_key = await make_integration(api, owner, channel_id)
        with running_server(env) as server:
            async with httpx.AsyncClient(base_url=server.base_url, trust_env=False) as client:
                pushed = await client.post("/event/push/alert/standard",
                                           params={"integration_key": integration_key},
                                           json={"title_rule": "db down", "alert_key": "db",
                                                 "event_status": "Critical"})
            assert pushed.status_code == 200, pushed.text
            assert await asyncio.to_thread(arrived.wait, 60), server.stderr()
    incident = got[0]["incident"]
    assert incident["detail_url"] == (
        f"{server.base_url}/console/incidents/{incident['incident_id']}")
    assert not server.base_url.endswith(":8080")
