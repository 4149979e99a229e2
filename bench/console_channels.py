"""The console's Channels pages (signed in as the owner) on an account of 500 channels and
20,000 incidents spread over them (a fifth of them open), with the statements each costs.

    .venv/bin/python -m bench.console_channels [--postgres] [--channels 500] [--requests 200]

The pages are asked for over httpx's ASGI transport, in-process, one request at a time (as
bench/console_list.py does): the wall time is the server's whole work for the request
(session, roles, queries, template) with no network; the Teams page is measured beside
them, as the scale of a page of the same kind on the same machine at the same time. Issue
36's figure: p99 under 50 ms."""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import sys
import time
from typing import Any

import httpx

from bench.console_list import Statements, owner_session
from bench.harness import scratch_database
from bench.in_process import _p, seed_account

DAY = 86_400


async def seed(url: str, channels: int, incidents: int, now: int) -> list[int]:
    """The account (owner o@bench.example), its channels and their incidents: channel ids."""
    from sqlalchemy import insert

    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.incident import incident

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    rng = random.Random(11)
    try:
        async with db.transaction() as conn:
            created, channel_ids = await seed_account(conn, now, channels=channels)
        batch: list[dict[str, Any]] = []
        for n in range(incidents):
            start = now - rng.randrange(60 * DAY)
            progress = rng.choices(["Triggered", "Processing", "Closed"], [1, 1, 8])[0]
            closed = progress == "Closed"
            batch.append({
                "incident_id": secrets.token_hex(12), "account_id": created.account_id,
                "channel_id": rng.choice(channel_ids), "num": f"{n:08X}",
                "title": f"alert {n}", "incident_severity": "Warning",
                "incident_status": "Ok" if closed else "Warning", "progress": progress,
                "start_time": start, "last_time": start, "end_time": start + 600 if closed else 0,
                "close_time": start + 600 if closed else 0, "created_at": start,
                "updated_at": start,
            })
            if len(batch) == 5000:
                async with db.transaction() as conn:
                    await conn.execute(insert(incident), batch)
                batch = []
        if batch:
            async with db.transaction() as conn:
                await conn.execute(insert(incident), batch)
    finally:
        await db.dispose()
    return channel_ids


async def measure(url: str, channel_id: int, requests: int) -> dict[str, Any]:
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.web import security

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    runtime = app.state.runtime
    paths = {"list": "/console/channels", "list by latest incident":
             "/console/channels?sort=recent", "list, page 10": "/console/channels?p=10",
             "search": "/console/channels?q=ch4", "channel": f"/console/channels/{channel_id}",
             # A page of the same kind in the same run, for scale on a busy machine.
             "teams (baseline)": "/console/teams"}
    timings: dict[str, list[float]] = {name: [] for name in paths}
    statements: dict[str, int] = {}
    async with app.router.lifespan_context(app):
        stmts = Statements(runtime.db)
        token = await owner_session(runtime)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            client.headers["Cookie"] = f"{security.SESSION_COOKIE}={token}"
            for name, path in paths.items():
                stmts.start()
                r = await client.get(path)
                assert r.status_code == 200, (path, r.status_code)
                statements[name] = stmts.count
            for _ in range(requests):
                for name, path in paths.items():
                    started = time.perf_counter()
                    r = await client.get(path)
                    timings[name].append((time.perf_counter() - started) * 1000)
                    assert r.status_code == 200, r.status_code
    return {"timings": timings, "statements": statements}


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.console_channels")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--channels", type=int, default=500)
    p.add_argument("--incidents", type=int, default=20_000)
    p.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    with scratch_database("console-channels", args.postgres) as url:
        ids = asyncio.run(seed(url, args.channels, args.incidents, now=int(time.time())))
        result = asyncio.run(measure(url, ids[0], args.requests))
    t, s = result["timings"], result["statements"]
    print(f"{'PostgreSQL' if args.postgres else 'SQLite'}: {args.channels} channels, "
          f"{args.incidents:,} incidents, {args.requests} requests each, in-process\n")
    print("| page | wall p50 ms | wall p99 ms | statements |\n|---|---:|---:|---:|")
    for name in t:
        print(f"| {name} | {_p(t[name], 0.5):.1f} | {_p(t[name], 0.99):.1f} | {s[name]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
