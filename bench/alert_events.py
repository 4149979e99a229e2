"""/alert-event/list with 200,000 raw events stored (20,000 alerts, 30 days): p50/p99 of a
page against /alert/info as the baseline, interleaved in the same run, in-process over httpx's
ASGI transport (the whole operation layer).

    .venv/bin/python -m bench.alert_events [--postgres] [--events 200000] [--requests 200]

Rows are bulk-inserted straight into `alert` and `alert_event` (one account, 10 channels, a
tenth of the rows in other accounts). The list reads the account's events of a window through
`ix_alert_event_account_time` (migration 0007), joined to their alerts by key for the
visibility rule."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.http_bench import PG_BASE, _pg_exec
from bench.incident_list import _p

DAY = 86_400
NOW = 1_700_000_000
SPAN_DAYS = 30


async def seed(url: str, events: int) -> tuple[str, str, list[int]]:
    from sqlalchemy import insert

    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.channel import channel
    from dutyline.db.tables.incident import alert, alert_event
    from dutyline.kit.ids import numeric_id
    from dutyline.platform.account.service import create_account

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    rng = random.Random(11)
    try:
        async with db.transaction() as conn:
            created = await create_account(conn, account_name="Bench", owner_name="Owner",
                                           owner_email="o@bench.example", now_s=NOW)
            channel_ids = [numeric_id() for _ in range(10)]
            await conn.execute(insert(channel), [
                {"channel_id": c, "account_id": created.account_id, "creator_id": 1,
                 "channel_name": f"ch{i}", "name_key": f"ch{i}", "created_at": NOW,
                 "updated_at": NOW} for i, c in enumerate(channel_ids)])
        alerts: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        first_alert = ""
        per_alert = 10
        for n in range(events // per_alert):
            account_id = created.account_id if n % 10 else 1 + n % 7
            alert_id = secrets.token_hex(12)
            first_alert = first_alert or (alert_id if account_id == created.account_id else "")
            channel_id = rng.choice(channel_ids)
            start = NOW - rng.randrange(SPAN_DAYS * DAY)
            severity = rng.choice(["Critical", "Warning", "Info"])
            alerts.append({
                "alert_id": alert_id, "account_id": account_id, "channel_id": channel_id,
                "integration_id": 1, "alert_key": alert_id, "title": f"alert {n}",
                "alert_severity": severity, "alert_status": severity, "event_cnt": per_alert,
                "start_time": start, "last_time": start, "end_time": start + 1,
                "created_at": start, "updated_at": start})
            for k in range(per_alert):
                rows.append({
                    "event_id": secrets.token_hex(12), "alert_id": alert_id,
                    "account_id": account_id, "channel_id": channel_id, "integration_id": 1,
                    "event_status": severity, "event_severity": severity,
                    "title": f"alert {n}", "event_time": start + k * 60,
                    "created_at": start + k * 60})
            if len(rows) >= 10_000:
                async with db.transaction() as conn:
                    await conn.execute(insert(alert), alerts)
                    await conn.execute(insert(alert_event), rows)
                alerts, rows = [], []
        if rows:
            async with db.transaction() as conn:
                await conn.execute(insert(alert), alerts)
                await conn.execute(insert(alert_event), rows)
        if db.is_postgres:
            async with db.engine.connect() as conn:
                auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await auto.exec_driver_sql("VACUUM ANALYZE alert")
                await auto.exec_driver_sql("VACUUM ANALYZE alert_event")
    finally:
        await db.dispose()
    return created.app_key, first_alert, channel_ids


async def measure(url: str, key: str, alert_id: str, channel_ids: list[int],
                  requests: int) -> dict[str, list[float]]:
    from dutyline.app import create_app
    from dutyline.config import Settings

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    day = {"start_time": NOW - DAY, "end_time": NOW}
    calls = {
        "/alert/info (baseline)": ("/alert/info", {"alert_id": alert_id}),
        "/alert-event/list, a day, 20": ("/alert-event/list", day),
        "/alert-event/list, a day, Critical, one channel": (
            "/alert-event/list", {**day, "severities": "Critical",
                                  "channel_ids": [channel_ids[2]]}),
        "/alert-event/list, 31 days, page 5 of 100": (
            "/alert-event/list", {"start_time": NOW - 31 * DAY + 1, "end_time": NOW,
                                  "p": 5, "limit": 100}),
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

            for name, (path, body) in calls.items():
                _, _, data = await call(path, body)
                if name == "/alert-event/list, a day, 20":
                    assert data["total"] > 20, data["total"]
            for _ in range(requests):
                for name, (path, body) in calls.items():
                    wall, cpu, _ = await call(path, body)
                    timings.setdefault(name, []).append(wall)
                    timings.setdefault(f"{name} (CPU)", []).append(cpu)
    return timings


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.alert_events")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--events", type=int, default=200_000)
    p.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dutyline-events-"))
    db_name = None
    try:
        if args.postgres:
            db_name = f"dutyline_events_{os.getpid()}_{secrets.token_hex(3)}"
            asyncio.run(_pg_exec(f'CREATE DATABASE "{db_name}"'))
            url = f"{PG_BASE}/{db_name}"
        else:
            url = f"sqlite+aiosqlite:///{tmp / 'events.db'}"
        key, alert_id, channel_ids = asyncio.run(seed(url, args.events))
        timings = asyncio.run(measure(url, key, alert_id, channel_ids, args.requests))
    finally:
        if db_name:
            asyncio.run(_pg_exec(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)'))
        shutil.rmtree(tmp, ignore_errors=True)
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}: {args.events} events, {args.requests} requests each, interleaved, "
          "one at a time\n")
    print("| operation | wall p50 ms | wall p99 ms | CPU p50 ms | CPU p99 ms | "
          "CPU p50 / baseline |\n|---|---:|---:|---:|---:|---:|")
    base = _p(timings["/alert/info (baseline) (CPU)"], 0.5)
    for name, values in timings.items():
        if name.endswith("(CPU)"):
            continue
        cpu = timings[f"{name} (CPU)"]
        print(f"| {name} | {_p(values, 0.5):.1f} | {_p(values, 0.99):.1f} | "
              f"{_p(cpu, 0.5):.1f} | {_p(cpu, 0.99):.1f} | {_p(cpu, 0.5) / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
