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
import random
import secrets
import sys
from typing import Any

from bench.harness import scratch_database
from bench.in_process import Calls, measure, print_table, seed_account

DAY = 86_400
NOW = 1_700_000_000
SPAN_DAYS = 30


async def seed(url: str, events: int) -> tuple[str, str, list[int]]:
    from sqlalchemy import insert

    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.incident import alert, alert_event

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    rng = random.Random(11)
    try:
        async with db.transaction() as conn:
            created, channel_ids = await seed_account(conn, NOW, channels=10)
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


def calls(alert_id: str, channel_ids: list[int]) -> Calls:
    day = {"start_time": NOW - DAY, "end_time": NOW}
    return {
        "/alert/info (baseline)": ("/alert/info", {"alert_id": alert_id}),
        "/alert-event/list, a day, 20": ("/alert-event/list", day),
        "/alert-event/list, a day, Critical, one channel": (
            "/alert-event/list", {**day, "severities": "Critical",
                                  "channel_ids": [channel_ids[2]]}),
        "/alert-event/list, 31 days, page 5 of 100": (
            "/alert-event/list", {"start_time": NOW - 31 * DAY + 1, "end_time": NOW,
                                  "p": 5, "limit": 100}),
    }


def check(name: str, data: Any) -> None:
    if name == "/alert-event/list, a day, 20":
        assert data["total"] > 20, data["total"]


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.alert_events")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--events", type=int, default=200_000)
    p.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    with scratch_database("events", args.postgres) as url:
        key, alert_id, channel_ids = asyncio.run(seed(url, args.events))
        timings = asyncio.run(measure(url, key, calls(alert_id, channel_ids), args.requests,
                                      check))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print_table(f"{backend}: {args.events} events, {args.requests} requests each, "
                "interleaved, one at a time", timings, "/alert/info (baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
