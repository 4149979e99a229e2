"""/safari/mcp/server/list with 1,000 registered servers next to /team/list, and
/safari/mcp/server/get against unreachable servers, in-process over httpx's ASGI transport
(the whole operation layer: auth, rate limiter, decode, SQL, encode).

    .venv/bin/python -m bench.mcp_list [--postgres] [--servers 1000] [--requests 300]

The servers are bulk-inserted (four in five account-level, the rest spread over 25 teams; one
in three points at a loopback port nothing listens on and carries a list_error). List requests
run one at a time, interleaved with /team/list of the same page size, so both see the same
machine. `get` is timed against a server that accepts TCP and never answers (the slow case:
the probe must give up at connect_timeout) and against a closed port (refused at once)."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import time
from typing import Any

import httpx

from bench.harness import scratch_database

NOW_MS = 1_700_000_000_000
TEAMS = 25


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def seed(url: str, servers: int) -> tuple[str, list[int]]:
    from sqlalchemy import insert

    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.aisre import mcp_server
    from dutyline.db.tables.platform import team
    from dutyline.kit.ids import numeric_id, prefixed_id
    from dutyline.platform.account.service import create_account

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    dead = f"http://127.0.0.1:{closed_port()}/mcp"
    tools = json.dumps([{"name": f"tool{i}", "description": "does a thing",
                         "input_schema": {"type": "object"}} for i in range(5)])
    try:
        async with db.transaction() as conn:
            created = await create_account(conn, account_name="Bench", owner_name="Owner",
                                           owner_email="o@bench.example", now_s=NOW_MS // 1000)
            team_ids = [numeric_id() for _ in range(TEAMS)]
            await conn.execute(insert(team), [
                {"team_id": t, "account_id": created.account_id, "team_name": f"team-{i}",
                 "name_key": f"team-{i}", "status": "enabled", "creator_id": created.person_id,
                 "updated_by": created.person_id, "created_at": NOW_MS // 1000 + i,
                 "updated_at": NOW_MS // 1000 + i} for i, t in enumerate(team_ids)])
            rows = []
            for n in range(servers):
                unreachable = n % 3 == 0
                rows.append({
                    "server_id": prefixed_id("mcp"), "account_id": created.account_id,
                    "team_id": 0 if n % 5 else team_ids[n % TEAMS],
                    "server_name": f"server-{n}", "name_key": f"server-{n}",
                    "description": f"MCP server number {n}", "transport": "streamable-http",
                    "url": dead if unreachable else f"https://mcp{n}.example.com/mcp",
                    "header_names": '["Authorization"]', "headers_encrypted": "sealed",
                    "tools": "[]" if unreachable else tools, "tool_count": 0 if unreachable
                    else 5, "list_error": "connection refused: cannot connect to 127.0.0.1"
                    if unreachable else "", "created_by": created.person_id,
                    "created_at": NOW_MS + n, "updated_at": NOW_MS + n,
                })
            await conn.execute(insert(mcp_server), rows)
    finally:
        await db.dispose()
    return created.app_key, team_ids


async def silent_server() -> tuple[asyncio.Server, int]:
    """Accepts TCP and never answers: an MCP server that hangs in initialize."""

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up and closes
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


async def measure(
    url: str, key: str, requests: int, limit: int, servers: int
) -> dict[str, list[float]]:
    from dutyline.app import create_app
    from dutyline.config import Settings

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning",
                        allow_private_network=True)
    app = create_app(settings)
    names = [f"/safari/mcp/server/list limit {limit}", f"/team/list limit {limit}",
             "/safari/mcp/server/get, silent server (connect_timeout 1 s)",
             "/safari/mcp/server/get, closed port (connect_timeout 1 s)"]
    timings: dict[str, list[float]] = {n: [] for n in names}
    silent, silent_port = await silent_server()
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench",
                                     timeout=30) as client:
            async def call(path: str, body: dict[str, Any]) -> tuple[float, Any]:
                started = time.perf_counter()
                r = await client.post(path, params={"app_key": key}, json=body)
                elapsed = time.perf_counter() - started
                assert r.status_code == 200, r.text
                return elapsed * 1000, r.json()["data"]

            _, page = await call("/safari/mcp/server/list", {"limit": limit})
            assert len(page["servers"]) == limit, page
            assert page["total"] >= servers, page["total"]
            _, teams = await call("/team/list", {"limit": limit})
            assert len(teams["items"]) == min(limit, TEAMS)
            for i in range(requests):
                p = 1 + i % 5
                ms, _ = await call("/safari/mcp/server/list", {"limit": limit, "p": p})
                timings[names[0]].append(ms)
                ms, _ = await call("/team/list", {"limit": limit})
                timings[names[1]].append(ms)
            made = []
            for name, port in (("silent", silent_port), ("closed", closed_port())):
                _, record = await call("/safari/mcp/server/create", {
                    "server_name": name, "description": "bench",
                    "url": f"http://127.0.0.1:{port}/mcp", "connect_timeout": 1})
                made.append(record["server_id"])
            for _ in range(5):
                for name, server_id in zip(names[2:], made, strict=True):
                    ms, data = await call("/safari/mcp/server/get", {"server_id": server_id})
                    assert data["list_error"], data
                    timings[name].append(ms)
    silent.close()
    return timings


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.mcp_list")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--servers", type=int, default=1000)
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--limit", type=int, default=20)
    args = p.parse_args()
    with scratch_database("mcp", args.postgres) as url:
        key, _ = asyncio.run(seed(url, args.servers))
        timings = asyncio.run(measure(url, key, args.requests, args.limit, args.servers))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}: {args.servers} MCP servers (1 in 3 unreachable), {TEAMS} teams, "
          f"{args.requests} list requests each, one at a time\n")
    print("| request | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|")
    for name, values in timings.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"| {name} | {statistics.median(values):.1f} | {p99:.1f} | {values[-1]:.1f} |")
    mcp, team_ = (statistics.median(timings[n]) for n in list(timings)[:2])
    print(f"\nMCP list p50 / team list p50 = {mcp / team_:.2f} (goal <= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
