"""/incident/past/list with 100,000 incidents stored (10,000 per channel): p50/p99 against
/incident/info of the same incident as the baseline, measured interleaved in the same run,
in-process over httpx's ASGI transport (the whole operation layer).

    .venv/bin/python -m bench.past_incidents [--postgres] [--incidents 100000] [--requests 200]

The incidents are bulk-inserted as bench/incident_list.py does (one account, 10 channels, 60
days). The similarity scoring reads a bounded candidate set chosen by SQL (the channel's 300
most recent earlier incidents, plus 50 of the same grouping key), so its cost should not grow
with the channel's history: run with --incidents 10000 and 100000 to compare."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.http_bench import PG_BASE, _pg_exec
from bench.incident_list import _p, seed


async def _newest_incident(url: str, channel_id: int) -> str:
    from sqlalchemy import select

    from dutyline.db.engine import Database
    from dutyline.db.tables.incident import incident

    db = Database(url)
    try:
        async with db.transaction(write=False) as conn:
            return str((await conn.execute(
                select(incident.c.incident_id).where(incident.c.channel_id == channel_id)
                .order_by(incident.c.start_time.desc()).limit(1))).scalar_one())
    finally:
        await db.dispose()


async def measure(url: str, key: str, incident_id: str,
                  requests: int) -> dict[str, list[float]]:
    from dutyline.app import create_app
    from dutyline.config import Settings

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    calls = {
        "/incident/info (baseline)": ("/incident/info", {"incident_id": incident_id}),
        "/incident/past/list, limit 5": ("/incident/past/list", {"incident_id": incident_id}),
        "/incident/past/list, limit 100": ("/incident/past/list",
                                           {"incident_id": incident_id, "limit": 100}),
    }
    timings: dict[str, list[float]] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            async def call(path: str, body: dict[str, Any]) -> tuple[float, float, Any]:
                started, cpu = time.perf_counter(), time.process_time()
                r = await client.post(path, params={"app_key": key}, json=body)
                wall = (time.perf_counter() - started) * 1000
                assert r.status_code == 200, r.text
                return wall, (time.process_time() - cpu) * 1000, r.json()["data"]

            for path, body in calls.values():  # warm-up and a check of the answers
                _, _, data = await call(path, body)
                if path.endswith("past/list"):
                    assert data["items"], "no similar incident found"
            for _ in range(requests):
                for name, (path, body) in calls.items():
                    wall, cpu, _ = await call(path, body)
                    timings.setdefault(name, []).append(wall)
                    timings.setdefault(f"{name} (CPU)", []).append(cpu)
    return timings


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.past_incidents")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--incidents", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dutyline-past-"))
    db_name = None
    try:
        if args.postgres:
            db_name = f"dutyline_past_{os.getpid()}_{secrets.token_hex(3)}"
            asyncio.run(_pg_exec(f'CREATE DATABASE "{db_name}"'))
            url = f"{PG_BASE}/{db_name}"
        else:
            url = f"sqlite+aiosqlite:///{tmp / 'past.db'}"
        key, channel_ids = asyncio.run(seed(url, args.incidents))
        incident_id = asyncio.run(_newest_incident(url, channel_ids[3]))
        timings = asyncio.run(measure(url, key, incident_id, args.requests))
    finally:
        if db_name:
            asyncio.run(_pg_exec(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)'))
        shutil.rmtree(tmp, ignore_errors=True)
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}: {args.incidents} incidents, {args.requests} requests each, "
          "interleaved, one at a time\n")
    print("| operation | wall p50 ms | wall p99 ms | CPU p50 ms | CPU p99 ms | "
          "CPU p50 / baseline |\n|---|---:|---:|---:|---:|---:|")
    base = _p(timings["/incident/info (baseline) (CPU)"], 0.5)
    for name, values in timings.items():
        if name.endswith("(CPU)"):
            continue
        cpu = timings[f"{name} (CPU)"]
        print(f"| {name} | {_p(values, 0.5):.1f} | {_p(values, 0.99):.1f} | "
              f"{_p(cpu, 0.5):.1f} | {_p(cpu, 0.99):.1f} | {_p(cpu, 0.5) / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
