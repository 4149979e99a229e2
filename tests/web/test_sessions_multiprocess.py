"""Scale-out proof for the console's session cache (web/session_cache.py): two real
`dutyline serve` processes on one database (a SQLite file, and PostgreSQL when configured),
each having resolved a session from its memory. A session ended through one process (signed
out, or ended from another session's page), a member's role taken away and a member removed
are seen by both: the next pages of both refuse what they no longer allow."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dutyline.api.actor import Actor
from dutyline.db.engine import Database
from dutyline.kit.clock import SystemClock
from dutyline.web import service as signin
from tests.fixtures.server import Server, backends, run_cli, running_server, shared_database
from tests.fixtures.signals import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

COOKIE = "dutyline_session"  # the name over plain HTTP
_CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')
_SESSION_IDS = re.compile(r'name="session_id" value="([0-9a-f]{20})"')


@pytest.fixture(params=backends())
def database_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with shared_database(request.param, tmp_path) as env:
        yield env


async def _session_for(env: dict[str, str], account_id: int, person_id: int) -> str:
    """A new session's token for the person, as a sign-in would have made it."""
    db = Database(env["DUTYLINE_DATABASE_URL"])
    try:
        async with db.transaction() as conn:
            caller = await signin.caller_of(conn, account_id=account_id, person_id=person_id)
            assert caller is not None
            actor = Actor(account_id=caller.account_id, person_id=caller.person_id,
                      clock=SystemClock(), is_admin=caller.is_admin, credential="session")
            return await signin.start_session(conn, actor, user_agent="tests", ip="127.0.0.1")
    finally:
        await db.dispose()


def _cookie(token: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={token}"}


async def _page(client: httpx.AsyncClient, server: Server, token: str,
                path: str = "/console/members") -> httpx.Response:
    return await client.get(f"{server.base_url}{path}", headers=_cookie(token))


async def _post(client: httpx.AsyncClient, server: Server, token: str, path: str,
                form: dict[str, str] | None = None) -> httpx.Response:
    page = await _page(client, server, token, "/console/me")
    found = _CSRF.search(page.text)
    assert found, page.text
    return await client.post(f"{server.base_url}{path}", headers=_cookie(token),
                             data={"csrf_token": found[1], **(form or {})})


async def _api(client: httpx.AsyncClient, server: Server, key: str, path: str,
               body: dict[str, Any]) -> Any:
    reply = await client.post(f"{server.base_url}{path}", params={"app_key": key}, json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


def _statuses(*answers: httpx.Response) -> list[int]:
    return [a.status_code for a in answers]


async def test_an_ended_session_is_refused_by_every_process(
        database_env: dict[str, str]) -> None:
    done = run_cli(["init"], database_env)
    assert done.returncode == 0, done.stderr
    owner = json.loads(done.stdout)
    account_id, person_id = owner["account_id"], owner["person_id"]
    signed_out = await _session_for(database_env, account_id, person_id)
    ended = await _session_for(database_env, account_id, person_id)
    kept = await _session_for(database_env, account_id, person_id)
    with running_server(database_env) as first, running_server(database_env) as second:
        servers = (first, second)
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            for server in servers * 3:  # each process now knows them from memory
                for token in (signed_out, ended, kept):
                    assert (await _page(client, server, token)).status_code == 200

            async def refused_everywhere(token: str) -> bool:
                codes = [(await _page(client, s, token)).status_code for s in servers]
                assert set(codes) <= {200, 303}
                return codes == [303, 303]

            # Signed out through the first process.
            out = await _post(client, first, signed_out, "/console/sign-out")
            assert out.status_code == 303
            await eventually(lambda: refused_everywhere(signed_out),
                             what="the signed-out session refused by both processes")
            # Ended from another session's page, through the second process.
            me = await _page(client, second, kept, "/console/me")
            own = signin.public_id(signin.Session(signin.token_hash(kept), 0, 0, 0, 0, 0, "",
                                                  "", False))
            others = [i for i in _SESSION_IDS.findall(me.text) if i != own]
            assert len(others) == 1
            revoked = await _post(client, second, kept, "/console/me/sessions/revoke",
                                  {"session_id": others[0]})
            assert revoked.status_code == 303
            await eventually(lambda: refused_everywhere(ended),
                             what="the ended session refused by both processes")
            assert _statuses(*[await _page(client, s, kept) for s in servers]) == [200, 200]


async def test_role_changes_and_removal_reach_the_sessions_of_every_process(
        database_env: dict[str, str]) -> None:
    done = run_cli(["init"], database_env)
    assert done.returncode == 0, done.stderr
    owner = json.loads(done.stdout)
    key = owner["app_key"]
    with running_server(database_env) as first, running_server(database_env) as second:
        servers = (first, second)
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            roles = await _api(client, first, key, "/role/list", {})
            admin_role = next(r for r in roles["items"] if "admin" in r["role_name"].lower())
            invited = await _api(client, first, key, "/member/invite", {"members": [
                {"email": "ada@example.com", "member_name": "Ada",
                 "role_ids": [admin_role["role_id"]]}]})
            ada = invited["items"][0]["member_id"]
            token = await _session_for(database_env, owner["account_id"], ada)
            for server in servers * 3:
                assert (await _page(client, server, token, "/console/members/new")
                        ).status_code == 200

            async def everywhere(path: str, status: int) -> bool:
                codes = [(await _page(client, s, token, path)).status_code for s in servers]
                return codes == [status, status]

            await _api(client, second, key, "/member/role/update",
                       {"member_id": ada, "role_ids": []})
            await eventually(lambda: everywhere("/console/members/new", 403),
                             what="the taken role refused by both processes")
            assert await everywhere("/console/members", 200)  # still signed in
            await _api(client, first, key, "/member/delete", {"member_id": ada})
            await eventually(lambda: everywhere("/console/members", 303),
                             what="the removed member signed out of both processes")
