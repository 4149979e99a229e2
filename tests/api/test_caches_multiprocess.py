"""Scale-out proof for the per-process caches: two real `dutyline serve` processes on one
database (a SQLite file, and PostgreSQL when configured). A write on one process (or from the
CLI, a third process) makes the other's cached app keys and public pages stale within a
second: a revoked key is refused by both, a renamed component shows on both."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.server import Server, backends, run_cli, running_server, shared_database
from tests.fixtures.signals import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]


@pytest.fixture(params=backends())
def database_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with shared_database(request.param, tmp_path) as env:
        yield env


async def _call(client: httpx.AsyncClient, server: Server, path: str, key: str,
                body: dict[str, Any]) -> httpx.Response:
    return await client.post(f"{server.base_url}{path}", params={"app_key": key}, json=body)


async def _ok(client: httpx.AsyncClient, server: Server, path: str, key: str,
              body: dict[str, Any]) -> Any:
    reply = await _call(client, server, path, key, body)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


async def test_a_revoked_key_is_refused_by_every_process(database_env: dict[str, str]) -> None:
    done = run_cli(["init"], database_env)
    assert done.returncode == 0, done.stderr
    owner = json.loads(done.stdout)["app_key"]
    with running_server(database_env) as first, running_server(database_env) as second:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            made = await _ok(client, first, "/app-key/create", owner, {"key_name": "doomed"})
            by_cli = await _ok(client, second, "/app-key/create", owner, {"key_name": "cli"})
            servers = (first, second)
            # Used on both, repeatedly: each process now answers them from memory.
            for server in servers * 3:
                for key in (made["app_key"], by_cli["app_key"]):
                    assert (await _call(client, server, "/team/list", key, {})).status_code \
                        == 200

            async def refused_everywhere(key: str) -> bool:
                statuses = [(await _call(client, s, "/team/list", key, {})).status_code
                            for s in servers]
                assert set(statuses) <= {200, 401}
                return statuses == [401, 401]

            # Revoked through the API of the first process.
            started = time.monotonic()
            await _ok(client, first, "/app-key/delete", owner, {"key_id": made["key_id"]})
            await eventually(lambda: refused_everywhere(made["app_key"]),
                             what="the revoked key refused by both processes")
            api_s = time.monotonic() - started
            # Revoked by a third process, the operator's shell.
            started = time.monotonic()
            revoked = run_cli(["app-key", "revoke", str(by_cli["key_id"])], database_env)
            assert revoked.returncode == 0, revoked.stderr
            await eventually(lambda: refused_everywhere(by_cli["app_key"]),
                             what="the key revoked from the shell refused by both processes")
            cli_s = time.monotonic() - started
            # The owner's key, untouched, still works on both.
            for server in servers:
                assert (await _call(client, server, "/team/list", owner, {})).status_code == 200
    print(f"revocation refused everywhere after {api_s:.3f} s (API), {cli_s:.3f} s (CLI)")


async def test_a_role_change_is_seen_by_every_process(database_env: dict[str, str]) -> None:
    done = run_cli(["init"], database_env)
    assert done.returncode == 0, done.stderr
    owner = json.loads(done.stdout)["app_key"]
    with running_server(database_env) as first, running_server(database_env) as second:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            roles = await _ok(client, first, "/role/list", owner, {})
            admin_role = next(r for r in roles["items"] if "admin" in r["role_name"].lower())
            invited = await _ok(client, first, "/member/invite", owner, {"members": [
                {"email": "ada@example.com", "member_name": "Ada",
                 "role_ids": [admin_role["role_id"]]}]})
            person_id = invited["items"][0]["member_id"]
            key = (await _ok(client, first, "/app-key/create", owner,
                             {"key_name": "ada", "person_id": person_id}))["app_key"]
            servers = (first, second)
            names = (f"team-{n}" for n in range(10_000))
            for server in servers * 3:
                reply = await _call(client, server, "/team/upsert", key,
                                    {"team_name": next(names)})
                assert reply.status_code == 200, reply.text

            async def denied_everywhere() -> bool:
                codes = [(await _call(client, s, "/team/upsert", key, {
                    "team_name": next(names)})).json().get("error", {}).get("code")
                    for s in servers]
                return codes == ["AccessDenied", "AccessDenied"]

            await _ok(client, first, "/member/role/update", owner, {
                "member_id": person_id, "role_ids": []})
            await eventually(denied_everywhere, what="the revoked role refused by both")


async def test_a_status_page_change_shows_on_every_process(
    database_env: dict[str, str],
) -> None:
    done = run_cli(["init"], database_env)
    assert done.returncode == 0, done.stderr
    owner = json.loads(done.stdout)["app_key"]
    with running_server(database_env) as first, running_server(database_env) as second:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            page = await _ok(client, first, "/status-page/create", owner,
                             {"page_name": "Acme", "url_name": "acme"})
            comp = await _ok(client, first, "/status-page/component/upsert", owner,
                             {"page_id": page["page_id"], "name": "Gateway-before"})
            servers = (first, second)
            etags = {}
            for server in servers * 3:  # both now serve it from memory
                r = await client.get(f"{server.base_url}/status/acme")
                assert r.status_code == 200 and "Gateway-before" in r.text
                assert r.headers["cache-control"] == "public, max-age=5"
                etags[server.port] = r.headers["etag"]
            for server in servers:
                r = await client.get(f"{server.base_url}/status/acme",
                                     headers={"If-None-Match": etags[server.port]})
                assert r.status_code == 304

            await _ok(client, second, "/status-page/component/upsert", owner, {
                "page_id": page["page_id"], "component_id": comp["component_id"],
                "name": "Gateway-after"})

            async def shown_everywhere() -> bool:
                texts = [(await client.get(f"{s.base_url}/status/acme")).text for s in servers]
                return all("Gateway-after" in t and "Gateway-before" not in t for t in texts)

            await eventually(shown_everywhere, what="the renamed component on both processes")
            for server in servers:
                r = await client.get(f"{server.base_url}/status/acme",
                                     headers={"If-None-Match": etags[server.port]})
                assert r.status_code == 200
