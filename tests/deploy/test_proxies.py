"""docs/deploy.md's reverse proxies, each serving its documented file (docs/deploy/nginx.conf,
docs/deploy/Caddyfile) with Debian's package on loopback, with a certificate made here, in
front of a real `dutyline serve` that trusts it as its proxy: TLS and HTTP/2, the console's
live list unbuffered, the runners' WebSocket, the body limits, the client's real address (and
a forged one ignored), and Secure cookies.

The clients connect from loopback addresses of their own (127.0.0.5 through the proxy,
127.0.0.3 straight to the server), so the address dutyline records shows which one it took."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from websockets.asyncio.client import connect

from dutyline.db.engine import Database
from dutyline.db.tables.web import console_sign_in_failure
from tests.fixtures.caddy import running_caddy
from tests.fixtures.nginx import LISTEN, Front, running_nginx
from tests.fixtures.server import Server, free_port, running_server
from tests.web.live_support import (
    Seeded,
    csrf_of,
    next_event,
    open_stream,
    seed_owner,
    server_env,
    sign_in,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("proxies")]
FRONTS = {"nginx": running_nginx, "caddy": running_caddy}

CLIENT = "127.0.0.5"  # the browser's address, as nginx sees it
STRANGER = "127.0.0.3"  # a peer that reaches the server directly, not the proxy
FORGED = "203.0.113.9"


@dataclass
class Deployment:
    front: Front
    server: Server
    owner: Seeded
    database_url: str

    def api(self, client: httpx.Client, path: str, body: dict[str, Any],
            **headers: str) -> httpx.Response:
        return client.post(path, params={"app_key": self.owner.app_key}, json=body,
                           headers=headers)


@pytest.fixture(scope="module", params=sorted(FRONTS))
def deployment(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp(request.param)
    url = f"sqlite+aiosqlite:///{folder / 'dutyline.db'}"
    port = free_port()
    with FRONTS[request.param](upstream_port=port, folder=folder / "front") as front:
        env = {**server_env(url), "DUTYLINE_TRUSTED_PROXIES": LISTEN,
               "DUTYLINE_BASE_URL": front.https_url}
        with running_server(env, port=port) as server:
            owner = asyncio.run(seed_owner(url))
            yield Deployment(front, server, owner, url)


def curl(front: Front, *args: str) -> str:
    done = subprocess.run(
        ["curl", "-sS", "--cacert", front.ca_file, "--interface", CLIENT, *args],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tls_and_http2_and_plain_http_redirected(deployment: Deployment) -> None:
    front = deployment.front
    answered = curl(front, "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                    f"{front.https_url}/healthz")
    assert answered == "2 200"
    redirect = curl(front, "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                    f"{front.http_url}/console/")
    code, location = redirect.split(" ")
    assert code in {"301", "308"} and location.startswith(f"https://{LISTEN}")
    assert location.endswith("/console/"), location


def _audited_ip(d: Deployment, request_id: str) -> str:
    with d.server.client() as direct:
        found = d.api(direct, "/audit/search", {
            "start_time": int(time.time()) - 3600, "end_time": int(time.time()) + 60,
            "request_id": request_id}).json()
    assert "data" in found, found
    [entry] = found["data"]["docs"]
    return str(entry["ip"])


def _failure_subjects(url: str) -> set[str]:
    async def read() -> set[str]:
        db = Database(url)
        try:
            async with db.connect() as conn:
                rows = await conn.execute(select(console_sign_in_failure.c.subject))
                return set(rows.scalars())
        finally:
            await db.dispose()
    return asyncio.run(read())


def test_the_client_address_is_the_real_one_and_a_forged_header_is_ignored(
        deployment: Deployment) -> None:
    d = deployment
    stranger = httpx.Client(base_url=d.server.base_url, timeout=10.0, trust_env=False,
                            transport=httpx.HTTPTransport(local_address=STRANGER))
    with d.front.client(CLIENT) as browser, stranger:
        # Through the proxy, a header the client made up is replaced by nginx.
        through = d.api(browser, "/team/upsert", {"team_name": "Via proxy"},
                        **{"X-Forwarded-For": FORGED})
        assert through.status_code == 200, through.text
        assert _audited_ip(d, through.json()["request_id"]) == CLIENT
        # Straight to the server from an address it does not trust: the header is ignored.
        direct = d.api(stranger, "/team/upsert", {"team_name": "Direct"},
                       **{"X-Forwarded-For": FORGED})
        assert direct.status_code == 200, direct.text
        assert _audited_ip(d, direct.json()["request_id"]) == STRANGER
        # The sign-in back-off counts the real client, not the proxy nor the forged one.
        form = browser.get("/console/sign-in", headers={"X-Forwarded-For": FORGED})
        failed = browser.post("/console/sign-in", headers={"X-Forwarded-For": FORGED},
                              data={"email": "nobody@acme.example", "password": "wrong!",
                                    "csrf_token": csrf_of(form.text)})
        assert failed.status_code == 401, failed.text
    subjects = _failure_subjects(d.database_url)
    assert f"ip:{CLIENT}" in subjects
    assert f"ip:{FORGED}" not in subjects and f"ip:{LISTEN}" not in subjects


def test_console_cookies_are_secure_and_the_live_list_is_not_buffered(
        deployment: Deployment) -> None:
    d = deployment
    with d.front.client(CLIENT) as web, d.front.client(CLIENT) as api:
        sign_in(web, d.owner)
        session = [c for c in web.cookies.jar if "dutyline_session" in c.name]
        assert [(c.name, c.secure) for c in session] == [("__Host-dutyline_session", True)]
        # Opened and answered before the incident exists: its row can only come through an
        # open stream, within the read timeout, if nginx passes each event on at once.
        with open_stream(web, read_timeout=30.0) as events:
            made = d.api(api, "/incident/create", {"incident_severity": "Critical",
                                                   "title": "through the proxy"})
            assert made.status_code == 200, made.text
            assert "through the proxy" in next_event(events, "incident-new")


def test_the_runner_websocket_upgrades_through_nginx(deployment: Deployment) -> None:
    d = deployment
    with d.front.client(CLIENT) as client:
        node = d.api(client, "/safari/worknode/create", {"name": "edge"}).json()["data"]
        made = d.api(client, "/safari/runner/key/create",
                     {"worknode_id": node["worknode_id"]}).json()["data"]
    ws_url = f"wss://{LISTEN}:{d.front.https_port}/safari/worknode/ws?token={made['key']}"

    async def dial() -> dict[str, Any]:
        async with connect(ws_url, ssl=d.front.ssl_context(), open_timeout=10) as ws:
            welcome: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
            await ws.send(json.dumps({"id": "msg_1", "type": "heartbeat", "timestamp": 0,
                                      "payload": {"worknode_id": node["worknode_id"],
                                                  "version": "v0.3.1"}}))
            with d.server.client() as direct:
                for _ in range(250):
                    info = d.api(direct, "/safari/worknode/info",
                                 {"worknode_id": node["worknode_id"]}).json()["data"]
                    if info["online"]:
                        break
                    await asyncio.sleep(0.02)
            welcome["online"] = info["online"]
            return welcome

    welcome = asyncio.run(dial())
    assert welcome["type"] == "welcome" and welcome["online"] is True


def test_bodies_past_the_limits_are_refused(deployment: Deployment, tmp_path: Path) -> None:
    d = deployment
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        # Past nginx's client_max_body_size 51m and Caddy's max_size 51MB.
        fh.truncate(52 * 1024 * 1024)
    status = curl(d.front, "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                  "-H", "Content-Type: application/json", "--data-binary", f"@{big}",
                  f"{d.front.https_url}/incident/create?app_key={d.owner.app_key}")
    assert status == "413"
    # Within nginx's limit, past dutyline's own (1 MiB): dutyline's envelope says so.
    with d.front.client(CLIENT) as client:
        answer = client.post("/incident/create", params={"app_key": d.owner.app_key},
                             content=b"{" + b" " * (2 * 1024 * 1024) + b"}",
                             headers={"Content-Type": "application/json"})
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "EntityTooLarge"
