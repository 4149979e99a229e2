"""A public status page flooded with views does not take its server away from the people
running it: one real `dutyline serve` process, saturated for a few seconds by many
keep-alive connections asking for the page (a load generator in a process of its own), still
answers admin writes through the API promptly, and a change made during the flood shows on
the flooded page at once.

The goal is one second for each. Asserted: the typical write (the median) answers within it,
and no write and no change takes more than MAX_S. The worst case is not held to one second
here: on a 2-core machine shared with other work, a process starved of CPU misses it with or
without the flood. The figures (p50, p99, max, with the yielding and without) are measured by
bench/public_flood.py (bench/README.md)."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from tests.fixtures import flood
from tests.fixtures.server import Server, backends, run_cli, running_server, shared_database

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

CONNECTIONS = 64
FLOOD_S = 10.0
WRITES = 12
GOAL_S = 1.0  # the median write
MAX_S = 3.0  # every write, and the change on the page


@pytest.fixture(params=backends())
def database_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with shared_database(request.param, tmp_path) as env:
        yield env


async def _ok(client: httpx.AsyncClient, server: Server, key: str, path: str,
              body: dict[str, object]) -> dict[str, object]:
    reply = await client.post(f"{server.base_url}{path}", params={"app_key": key}, json=body)
    assert reply.status_code == 200, reply.text
    data: dict[str, object] = reply.json()["data"]
    return data


async def test_admin_writes_and_page_changes_go_through_a_flood_of_views(
        database_env: dict[str, str]) -> None:
    done = run_cli(["init"], database_env)
    assert done.returncode == 0, done.stderr
    key = json.loads(done.stdout)["app_key"]
    with running_server(database_env) as server:
        page_url = f"{server.base_url}/status/acme"
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            page = await _ok(client, server, key, "/status-page/create",
                             {"page_name": "Acme", "url_name": "acme"})
            comp = await _ok(client, server, key, "/status-page/component/upsert",
                             {"page_id": page["page_id"], "name": "Gateway-0"})
            assert "Gateway-0" in (await client.get(page_url)).text

            command = [sys.executable, flood.__file__, page_url, str(FLOOD_S),
                       str(CONNECTIONS)]
            async with await anyio.open_process(command) as load:
                assert load.stdout is not None
                output = b""
                async for chunk in load.stdout:  # until the flood is on
                    output += chunk
                    if b"\n" in output:
                        break
                assert output.startswith(b"flooding"), output
                writes: list[float] = []
                shown: list[float] = []
                for n in range(1, WRITES + 1):
                    began = time.monotonic()
                    await _ok(client, server, key, "/team/upsert", {"team_name": f"team-{n}"})
                    writes.append(time.monotonic() - began)
                    if n % 4:
                        continue
                    began = time.monotonic()
                    await _ok(client, server, key, "/status-page/component/upsert", {
                        "page_id": page["page_id"], "component_id": comp["component_id"],
                        "name": f"Gateway-{n}"})
                    writes.append(time.monotonic() - began)
                    while f"Gateway-{n}" not in (await client.get(page_url)).text:
                        assert time.monotonic() - began < 2 * MAX_S, "change not shown"
                    shown.append(time.monotonic() - began)
                flooding_still = load.returncode is None
                async for chunk in load.stdout:
                    output += chunk
                await load.wait()
    out = output.decode()
    stats = json.loads(out.strip().splitlines()[-1])
    print(f"flood: {stats}; admin writes p50 {statistics.median(writes):.3f} s, "
          f"max {max(writes):.3f} s, "
          f"page change shown max {max(shown):.3f} s")
    assert flooding_still, "the writes outlasted the flood: they were not measured under it"
    assert stats["failed"] == 0 and stats["not_ok"] == 0, stats
    assert stats["requests"] > 10 * CONNECTIONS  # the page was answered all along
    assert statistics.median(writes) < GOAL_S, writes
    assert max(writes) < MAX_S, writes
    assert max(shown) < MAX_S, shown
