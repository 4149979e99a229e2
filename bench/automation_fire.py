"""Automation benches, two figures:

1. `fire`: throughput of `POST /safari/automation/triggers/{id}/fire` (bearer token, body
   context, one write transaction queuing a run and its job) next to the bare ASGI app
   (bench/bare_asgi.py), both in-process over httpx's ASGI transport with the same
   concurrency, in the same run, so the ratio is the cost of the endpoint itself.
2. `schedule`: rules fired by `dutyline worker` processes on the durable scheduler; for every
   run, the lateness of its creation against its due minute; none twice, none missing.
   The contract's cron forms take a fixed minute, so a rule fires at most hourly: the load
   of N rules firing every minute is made of N rules due at minute m and N more due at m + 1
   (2N rules in all), two consecutive minutes with N fires each.

    .venv/bin/python -m bench.automation_fire fire [--postgres] [--requests 2000] [--concurrency 8]
    .venv/bin/python -m bench.automation_fire schedule [--postgres] [--rules 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench import bare_asgi
from bench.in_process import migrated_database

ROOT = Path(__file__).resolve().parents[1]


async def _owner(url: str) -> Any:
    from dutyline.db.engine import Database
    from dutyline.platform.account.service import create_account

    db = Database(url)
    try:
        async with db.transaction() as conn:
            return await create_account(conn, account_name="Bench", owner_name="Owner",
                                        owner_email="o@bench.example", now_s=int(time.time()))
    finally:
        await db.dispose()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _hammer(client: httpx.AsyncClient, path: str, headers: dict[str, str],
                  requests: int, concurrency: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    left = iter(range(requests))

    async def one_lane() -> None:
        for _ in left:
            started = time.perf_counter()
            r = await client.post(path, json={"text": "disk full on db-1"}, headers=headers)
            latencies.append(time.perf_counter() - started)
            assert r.status_code == 200, r.text

    started = time.perf_counter()
    await asyncio.gather(*(one_lane() for _ in range(concurrency)))
    return requests / (time.perf_counter() - started), latencies


async def bench_fire(postgres: bool, requests: int, concurrency: int) -> None:
    from dutyline.app import create_app
    from dutyline.config import Settings

    url, drop = await migrated_database("auto", postgres)
    try:
        owner = await _owner(url)
        settings = Settings(database_url=url, secret_key="bench", run_workers=False,
                            rate_limit_per_second=10**6, rate_limit_per_minute=10**8,
                            log_level="warning")
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
                made = await client.post(
                    "/safari/automation/rule/create", params={"app_key": owner.app_key},
                    json={"name": "bench", "prompt": "p", "cron_expr": "9 * * *",
                          "enabled": True, "schedule_trigger_enabled": False,
                          "http_post_trigger_enabled": True})
                data = made.json()["data"]
                path, token = data["http_post_trigger_url"], data["http_post_token"]
                auth = {"Authorization": f"Bearer {token}"}
                await _hammer(client, path, auth, 100, concurrency)  # warm-up
                bare_transport = httpx.ASGITransport(app=bare_asgi.app)
                async with httpx.AsyncClient(transport=bare_transport,
                                             base_url="http://b") as bare:
                    bare_rps, bare_lat = await _hammer(bare, "/", {}, requests, concurrency)
                fire_rps, fire_lat = await _hammer(client, path, auth, requests, concurrency)
    finally:
        await drop()
    backend = "PostgreSQL" if postgres else "SQLite"
    print(f"{backend}: {requests} requests, concurrency {concurrency}, in-process ASGI")
    print(f"  bare ASGI   {bare_rps:8.0f} req/s  p50 {_pct(bare_lat, .5) * 1e3:6.2f} ms  "
          f"p99 {_pct(bare_lat, .99) * 1e3:6.2f} ms")
    print(f"  fire        {fire_rps:8.0f} req/s  p50 {_pct(fire_lat, .5) * 1e3:6.2f} ms  "
          f"p99 {_pct(fire_lat, .99) * 1e3:6.2f} ms  ({fire_rps / bare_rps:.1%} of bare)")


async def _bulk_rules(db: Any, actor: Any, rules: int, minutes: list[int], now_ms: int) -> None:
    from sqlalchemy import insert

    from dutyline.aisre.automation.service import SCHEDULE, SCHEDULE_KIND
    from dutyline.db.tables.automation import automation_rule, automation_trigger
    from dutyline.db.tables.scheduler import work_schedule as schedule
    from dutyline.kit.cron import next_after
    from dutyline.kit.ids import prefixed_id

    rule_rows, trigger_rows, schedule_rows = [], [], []
    for i in range(rules):
        for m in minutes:
            cron = f"{(m // 60) % 60} * * * *"
            rule_id = prefixed_id("arule")
            rule_rows.append({
                "rule_id": rule_id, "account_id": actor.account_id, "team_id": 0,
                "owner_id": actor.person_id, "name": f"rule {i} {cron}", "enabled": True,
                "cron_expr": cron, "timezone": "UTC", "prompt": "check things",
                "created_at": now_ms, "updated_at": now_ms})
            trigger_rows.append({
                "trigger_id": prefixed_id("atrig"), "rule_id": rule_id,
                "account_id": actor.account_id, "kind": SCHEDULE, "enabled": True,
                "created_at": now_ms, "updated_at": now_ms})
            schedule_rows.append({
                "kind": SCHEDULE_KIND, "owner_id": rule_id, "cron_expr": cron,
                "timezone": "UTC", "next_fire_at": next_after(cron, "UTC", now_ms),
                "created_at": now_ms, "updated_at": now_ms})
    async with db.transaction() as conn:
        await conn.execute(insert(automation_rule), rule_rows)
        await conn.execute(insert(automation_trigger), trigger_rows)
        await conn.execute(insert(schedule), schedule_rows)


async def bench_schedule(postgres: bool, rules: int, workers: int) -> None:
    from sqlalchemy import select
    from tests.fixtures.fake_llm import fake_llm

    from dutyline.api.actor import Actor
    from dutyline.db.engine import Database
    from dutyline.db.tables.automation import automation_run
    from dutyline.kit.clock import SystemClock

    url, drop = await migrated_database("auto", postgres)
    procs: list[asyncio.subprocess.Process] = []
    db = Database(url)
    try:
        owner = await _owner(url)
        actor = Actor(account_id=owner.account_id, person_id=owner.person_id,
                      clock=SystemClock(), is_admin=True)
        now = time.time()
        # Rows written in bulk (the service path costs ~40 ms a rule on a busy machine, and
        # every rule must be in before its due minute); the values are the service's own.
        # At least 75 s ahead: seeding (~20 s) and the workers' start-up (up to ~40 s on a
        # loaded machine) must be over before the first due minute, or it measures start-up.
        first_minute = (int(now + 75) // 60 + 1) * 60
        minutes = [first_minute, first_minute + 60]
        await _bulk_rules(db, actor, rules, minutes, int(now * 1000))
        seeded = time.time()
        with fake_llm() as llm:
            llm.script = []
            # src first: a copy of another revision (a baseline) runs its own code.
            env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
                   "DUTYLINE_DATABASE_URL": url,
                   "DUTYLINE_SECRET_KEY": "bench", "DUTYLINE_LOG_LEVEL": "warning",
                   "DUTYLINE_LLM_BASE_URL": llm.base_url, "DUTYLINE_LLM_API_KEY": llm.api_key,
                   "DUTYLINE_LLM_MODEL": "fake", "DUTYLINE_ALLOW_PRIVATE_NETWORK": "1",
                   "DUTYLINE_WORKER_CONCURRENCY": "8"}
            exe = str(Path(sys.executable).parent / "dutyline")
            for _ in range(workers):
                procs.append(await asyncio.create_subprocess_exec(
                    exe, "worker", cwd=ROOT, env=env, stdin=asyncio.subprocess.DEVNULL))
            print(f"{2 * rules} rules seeded in {seeded - now:.1f} s; due at "
                  f"{time.strftime('%H:%M', time.gmtime(minutes[0]))} and "
                  f"{time.strftime('%H:%M', time.gmtime(minutes[1]))} UTC", flush=True)
            deadline = minutes[1] + 45
            while time.time() < deadline:
                async with db.connect() as conn:
                    rows = (await conn.execute(select(
                        automation_run.c.due_at, automation_run.c.created_at,
                        automation_run.c.rule_id, automation_run.c.status))).all()
                finished = sum(r.status in ("succeeded", "failed") for r in rows)
                if len(rows) >= 2 * rules and finished == len(rows):
                    break
                await asyncio.sleep(1)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            await p.wait()
        await db.dispose()
        await drop()
    backend = "PostgreSQL" if postgres else "SQLite"
    print(f"{backend}: {rules} rules due each minute, two minutes, {workers} worker processes")
    for m in minutes:
        due = [r for r in rows if r.due_at == m * 1000]
        late = [(r.created_at - r.due_at) / 1000 for r in due]
        per_rule = {r.rule_id for r in due}
        statuses = statistics.multimode([r.status for r in due]) if due else []
        print(f"  {time.strftime('%H:%M', time.gmtime(m))}: runs {len(due)} (distinct rules "
              f"{len(per_rule)}), lateness p50 {_pct(late, .5):.2f} s p99 {_pct(late, .99):.2f}"
              f" s max {max(late):.2f} s, within 2 s: {sum(x <= 2 for x in late)}; "
              f"status {statuses}" if due else "  no runs")
    others = [r for r in rows if r.due_at not in (minutes[0] * 1000, minutes[1] * 1000)]
    print(f"  runs at other times: {len(others)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["fire", "schedule"])
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rules", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.what == "fire":
        asyncio.run(bench_fire(args.postgres, args.requests, args.concurrency))
    else:
        asyncio.run(bench_schedule(args.postgres, args.rules, args.workers))


if __name__ == "__main__":
    main()
