"""Retention over a simulated month of a busy account: the database's size day by day with
the retention job against without it, and the p50/p99 of a read endpoint while a prune
runs against idle, measured in the same run.

    .venv/bin/python -m bench.retention [--postgres] [--days 30] [--incidents-per-day 500]
        [--retention-days 7] [--requests 300] [--backlog-days 3]

Each simulated day stores, per incident: its alert and 5 raw alert events, 4 incident
events, 3 deliveries with an attempt each (a webhook's request and answer, about 1 KB),
2 notification-rule claims and an audit entry; plus 20 console sessions a day. Rows are
bulk-inserted with the day's timestamps (the API would take hours for a month); incidents
close the same day but one in twenty, which stays open (its events are never pruned).
With pruning, `work/retention.py`'s prune runs at the end of each day, as the hourly job
would, with every per-event retention set to --retention-days so that a month spans
several retention windows (claims and expired sessions keep their 3 days); incidents and
alerts themselves are never pruned, so they still grow. Size is the pages in use (SQLite:
page_count - freelist_count; freed pages are reused) or pg_database_size after a plain
VACUUM (what autovacuum does), and of it the pruned tables with their indexes (SQLite's
dbstat, pg_total_relation_size).

Latency: after the month (pruned), a backlog of --backlog-days days of rows past their
retention is added; /incident/list (a day's window, 20 a page) is called one at a time,
first idle (the baseline), then while one prune deletes the backlog in the same process,
as the workers inside `serve` would."""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from typing import Any

from sqlalchemy import Boolean, Integer, Table, insert, text

from bench.in_process import _p, migrated_database, seed_account

DAY = 86_400
START = 1_700_000_000
BODY = "x" * 480


def _row(table: Table, **values: Any) -> dict[str, Any]:
    out = dict(values)
    for column in table.columns:
        if column.name in out or column.nullable or column.server_default is not None \
                or column.autoincrement is True:
            continue
        out[column.name] = (False if isinstance(column.type, Boolean)
                            else 1 if isinstance(column.type, Integer) else "x")
    return out


def _settings(url: str, retention_days: int) -> Any:
    from dutyline.config import Settings

    return Settings(
        database_url=url, secret_key="bench", rate_limit_per_second=0,
        rate_limit_per_minute=0, run_workers=False, log_level="warning",
        audit_retention_days=retention_days, incident_event_retention_days=retention_days,
        delivery_retention_days=retention_days,
        delivery_attempt_retention_days=retention_days,
        alert_event_retention_days=retention_days)


async def _store_day(db: Any, owner: Any, channel_id: int, day_start: int, per_day: int,
                     rng: random.Random, tag: str) -> None:
    from dutyline.db.tables.dispatch import channel_notify_sent
    from dutyline.db.tables.incident import alert, alert_event, incident, incident_event
    from dutyline.db.tables.notify import notify_attempt, notify_delivery
    from dutyline.db.tables.platform import audit_log
    from dutyline.db.tables.web import console_session

    account_id, person_id = owner.account_id, owner.person_id
    rows: dict[Table, list[dict[str, Any]]] = {t: [] for t in (
        incident, alert, alert_event, incident_event, notify_delivery, notify_attempt,
        channel_notify_sent, audit_log, console_session)}
    for i in range(per_day):
        at = day_start + rng.randrange(DAY - 3600)
        name = f"{tag}-{i}"
        open_ = i % 20 == 0
        rows[incident].append(_row(
            incident, incident_id=name, account_id=account_id, channel_id=channel_id,
            num=name, title=f"disk full on host {i}", incident_severity="Critical",
            incident_status="Critical", progress="Triggered" if open_ else "Closed",
            start_time=at, last_time=at, close_time=0 if open_ else at + 1800,
            created_at=at, updated_at=at))
        rows[alert].append(_row(
            alert, alert_id=name, account_id=account_id, channel_id=channel_id,
            integration_id=1, alert_key=name, alert_severity="Critical",
            alert_status="Critical", start_time=at, last_time=at,
            end_time=0 if open_ else at + 1800, incident_id=name, created_at=at,
            updated_at=at))
        for k in range(5):
            rows[alert_event].append(_row(
                alert_event, event_id=f"{name}-{k}", alert_id=name, account_id=account_id,
                channel_id=channel_id, integration_id=1, event_status="Critical",
                event_severity="Critical", title="disk full", description=BODY[:300],
                event_time=at + k * 60, created_at=at + k * 60))
        for k, kind in enumerate(("created", "assigned", "acked", "resolved")):
            rows[incident_event].append(_row(
                incident_event, account_id=account_id, incident_id=name, kind=kind,
                payload='{"by": 1}', created_at=at + k * 300))
        for k in range(3):
            delivery = f"{name}-d{k}"
            rows[notify_delivery].append(_row(
                notify_delivery, delivery_id=delivery, account_id=account_id,
                incident_id=name, channel="webhook", status="success", attempts=1,
                content='{"to": "ops"}', created_at=at, updated_at=at))
            rows[notify_attempt].append(_row(
                notify_attempt, delivery_id=delivery, account_id=account_id, incident_id=name,
                channel="webhook", attempt=1, status="success", request_body=BODY,
                response_body=BODY, event_time_ms=at * 1000))
        for k in range(2):
            rows[channel_notify_sent].append(_row(
                channel_notify_sent, rule_id=f"r{k}", event_id=rng.getrandbits(62),
                incident_id=name, created_at=at))
        rows[audit_log].append(_row(
            audit_log, account_id=account_id, member_id=person_id, request_id=name,
            operation="/incident/ack", outcome="ok", is_write=True, body=BODY[:200],
            created_at=at * 1000))
    for k in range(20):
        rows[console_session].append(_row(
            console_session, session_hash=f"{tag}-s{k}", account_id=account_id, member_id=person_id,
            created_at=day_start, last_seen_at=day_start, expires_at=day_start + 7 * DAY))
    for table, values in rows.items():
        for n in range(0, len(values), 5000):
            async with db.transaction() as conn:
                await conn.execute(insert(table), values[n:n + 5000])


async def _size(db: Any) -> tuple[int, int]:
    """(bytes in use, of which the tables retention prunes and their indexes)."""
    from dutyline.work.retention import RULES

    pruned = [rule.name for rule in RULES]
    async with db.engine.connect() as conn:
        if db.is_postgres:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await auto.exec_driver_sql("VACUUM")
            total = (await auto.execute(text(
                "SELECT pg_database_size(current_database())"))).scalar() or 0
            part = sum([(await auto.execute(text("SELECT pg_total_relation_size(:t)"),
                                            {"t": name})).scalar() or 0 for name in pruned])
            return int(total), int(part)
        pages = (await conn.exec_driver_sql("PRAGMA page_count")).scalar() or 0
        free = (await conn.exec_driver_sql("PRAGMA freelist_count")).scalar() or 0
        size = (await conn.exec_driver_sql("PRAGMA page_size")).scalar() or 0
        per_table = dict((await conn.exec_driver_sql(
            "SELECT s.tbl_name, SUM(d.pgsize) FROM dbstat d "
            "JOIN sqlite_schema s ON s.name = d.name GROUP BY s.tbl_name")).all())
        return int((pages - free) * size), int(sum(per_table.get(n, 0) for n in pruned))


async def simulate(postgres: bool, days: int, per_day: int, retention_days: int,
                   prune: bool) -> tuple[list[tuple[int, int]], Any]:
    """Sizes at the end of each day; and, for the pruned run, what the latency part needs
    (the database left in place: url, drop, key, account)."""
    from dutyline.db.engine import Database
    from dutyline.work import retention

    url, drop = await migrated_database("retention", postgres)
    settings = _settings(url, retention_days)
    db = Database(url)
    rng = random.Random(7)
    sizes: list[tuple[int, int]] = []
    try:
        async with db.transaction() as conn:
            created, (channel_id,) = await seed_account(conn, START, channels=1)
        for day in range(days):
            await _store_day(db, created, channel_id, START + day * DAY, per_day,
                             rng, f"d{day}")
            if prune:
                await retention.prune(db, settings, now_ms=(START + (day + 1) * DAY) * 1000)
            sizes.append(await _size(db))
    finally:
        await db.dispose()
    if not prune:
        await drop()
        return sizes, None
    return sizes, (url, drop, created, channel_id)


async def latency(state: Any, days: int, per_day: int, retention_days: int,
                  backlog_days: int, requests: int) -> dict[str, Any]:
    import httpx

    from dutyline.app import create_app
    from dutyline.db.engine import Database
    from dutyline.work import retention

    url, drop, created, channel_id = state
    settings = _settings(url, retention_days)
    now = START + days * DAY
    db = Database(url)
    rng = random.Random(9)
    try:
        for n in range(backlog_days):
            await _store_day(db, created, channel_id,
                             now - (retention_days + 2 + n) * DAY, per_day, rng, f"late{n}")
        app = create_app(settings)
        body = {"start_time": now - DAY, "end_time": now, "limit": 20}
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
            async def call() -> float:
                started = time.perf_counter()
                r = await client.post("/incident/list", params={"app_key": created.app_key},
                                      json=body)
                assert r.status_code == 200, r.text
                return (time.perf_counter() - started) * 1000

            for _ in range(20):
                await call()
            idle = [await call() for _ in range(requests)]
            started = time.perf_counter()
            pruning = asyncio.create_task(retention.prune(db, settings, now_ms=now * 1000))
            during: list[float] = []
            while not pruning.done():
                during.append(await call())
            pruned = await pruning
            took = time.perf_counter() - started
    finally:
        await db.dispose()
        await drop()
    return {"idle": idle, "during": during, "pruned": sum(pruned.values()), "seconds": took}


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.retention")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--incidents-per-day", type=int, default=500)
    p.add_argument("--retention-days", type=int, default=7)
    p.add_argument("--backlog-days", type=int, default=3)
    p.add_argument("--requests", type=int, default=300)
    a = p.parse_args()
    backend = "PostgreSQL" if a.postgres else "SQLite"
    kept, state = asyncio.run(simulate(a.postgres, a.days, a.incidents_per_day,
                                       a.retention_days, prune=True))
    grown, _ = asyncio.run(simulate(a.postgres, a.days, a.incidents_per_day,
                                    a.retention_days, prune=False))
    print(f"{backend}: {a.days} days of {a.incidents_per_day} incidents a day, per-event "
          f"retention {a.retention_days} days\n")
    print("| day | MB with pruning | MB without | without / with | per-event tables MB, "
          "with | without |\n|---:|---:|---:|---:|---:|---:|")
    marks = sorted({a.retention_days, 2 * a.retention_days, a.days // 2, a.days})
    for day in (d for d in marks if 0 < d <= a.days):
        (w, wp), (wo, wop) = kept[day - 1], grown[day - 1]
        print(f"| {day} | {w / 1e6:.1f} | {wo / 1e6:.1f} | {wo / w:.2f} | {wp / 1e6:.1f} | "
              f"{wop / 1e6:.1f} |")
    steady = a.retention_days + 1
    if a.days > steady:
        print(f"\ngrowth from day {steady} to day {a.days}: with pruning "
              f"x{kept[-1][0] / kept[steady - 1][0]:.2f} (per-event tables "
              f"x{kept[-1][1] / kept[steady - 1][1]:.2f}), without "
              f"x{grown[-1][0] / grown[steady - 1][0]:.2f} "
              f"(x{grown[-1][1] / grown[steady - 1][1]:.2f})")
    lat = asyncio.run(latency(state, a.days, a.incidents_per_day, a.retention_days,
                              a.backlog_days, a.requests))
    idle, during = lat["idle"], lat["during"]
    print(f"\n/incident/list while a prune deletes {lat['pruned']} rows in "
          f"{lat['seconds']:.1f} s ({len(during)} requests) against idle ({len(idle)}):\n")
    print("| | p50 ms | p99 ms |\n|---|---:|---:|")
    print(f"| idle (baseline) | {_p(idle, 0.5):.1f} | {_p(idle, 0.99):.1f} |")
    print(f"| while pruning | {_p(during, 0.5):.1f} | {_p(during, 0.99):.1f} |")
    print(f"| ratio | {_p(during, 0.5) / _p(idle, 0.5):.2f} | "
          f"{_p(during, 0.99) / _p(idle, 0.99):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
