"""/healthz, /readyz, /metrics, and what the logs say (and never say)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dutyline.config import Settings
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.server import run_cli, running_server

pytestmark = pytest.mark.anyio


async def test_healthz_and_readyz_answer_200(api: Api) -> None:
    health = await api.raw("GET", "/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    ready = await api.raw("GET", "/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ok"})


@pytest.mark.parametrize("where", ["removed-directory", "closed-port"])
async def test_readyz_is_503_when_the_database_is_unreachable(
    settings: Settings, tmp_path: Path, where: str
) -> None:
    directory = tmp_path / "data"
    if where == "removed-directory":
        url = f"sqlite+aiosqlite:///{directory / 'd.db'}"
    else:
        url = "postgresql+asyncpg://postgres@127.0.0.1:1/nothing"
    async with make_api(settings.with_(database_url=url)) as api:
        if where == "removed-directory":
            # The engine creates its directory and an empty 0600 database file when built;
            # take them away under the running app (and put a file in the directory's place,
            # so nothing can quietly recreate it).
            shutil.rmtree(directory)
            directory.write_text("not a directory")
        health = await api.raw("GET", "/healthz")
        assert health.status_code == 200  # the process is up
        ready = await api.raw("GET", "/readyz")
        assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})
        # An operation cannot even authenticate: an envelope, not a crash.
        call = await api.raw("POST", "/team/list", params={"app_key": "k"}, json={})
        assert call.status_code >= 500
        assert call.headers["Service-Request-Id"] == call.json()["request_id"]
        assert call.json()["error"]["code"] in ("InternalError", "ServiceUnavailable")


def _samples(text: str, name: str) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found[(sample.labels["operation"], sample.labels["code"])] = sample.value
    return found


async def test_metrics_count_requests_by_operation_and_code(api: Api, owner: Person) -> None:
    for _ in range(3):
        assert (await api.call("/team/list", {}, key=owner.key)).status == 200
    assert (await api.call("/team/list", {}, key="nope")).status == 401
    assert (await api.call("/team/list", {"p": 0}, key=owner.key)).status == 400
    assert (await api.call("/team/upsert", {"team_name": "m"}, key=owner.key)).status == 200
    response = await api.raw("GET", "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    counts = _samples(response.text, "dutyline_requests_total")
    assert counts[("/team/list", "OK")] == 3
    assert counts[("/team/list", "Unauthorized")] == 1
    assert counts[("/team/list", "InvalidParameter")] == 1
    assert counts[("/team/upsert", "OK")] == 1
    latency = [s for f in text_string_to_metric_families(response.text) for s in f.samples
               if s.name == "dutyline_request_duration_seconds_count"
               and s.labels["operation"] == "/team/list"]
    assert [s.value for s in latency] == [5]
    assert owner.key not in response.text


@pytest.mark.slow
@pytest.mark.xdist_group("multiprocess")
def test_a_real_server_logs_a_500_as_json_with_request_id_and_never_the_key(
    tmp_path: Path,
) -> None:
    db = tmp_path / "obs.db"
    env = {"DUTYLINE_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "DUTYLINE_LOG_JSON": "1"}
    done = run_cli(["init"], env)
    assert done.returncode == 0, done.stderr
    key = json.loads(done.stdout)["app_key"]
    with running_server(env) as server, server.client() as client:
        assert client.post("/team/list", params={"app_key": key}, json={}).status_code == 200
        # Break the database under the running server: the next team query fails.
        conn = sqlite3.connect(db)
        try:
            conn.execute("DROP TABLE team_member")
            conn.execute("DROP TABLE team")
            conn.commit()
        finally:
            conn.close()
        failed = client.post("/team/list", params={"app_key": key}, json={},
                             headers={"Authorization": f"Bearer {key}"})
        assert failed.status_code == 500
        body = failed.json()
        assert body["error"]["code"] == "InternalError"
        assert "Traceback" not in failed.text
        assert "team" not in body["error"]["message"]
        rid = body["request_id"]
        server.stop()
        log = server.stderr()
    events = []
    for line in log.splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    logged = [e for e in events if e.get("request_id") == rid and e["level"] == "error"]
    assert len(logged) == 1, log
    assert logged[0]["operation"] == "/team/list"
    assert "no such table" in logged[0].get("exception", "")
    # The access line of the same call says what the client got.
    access = [e for e in events if e.get("request_id") == rid and e["event"] == "request"]
    assert [(e["status"], e["code"]) for e in access] == [(500, "InternalError")]
    assert key not in log
