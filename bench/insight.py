"""/insight/* with 100,000 incidents stored: p50/p99 in-process over httpx's ASGI transport
(the whole operation layer: auth, rate limiter, decode, SQL, encode), against two baselines
measured in the same run, interleaved: `/team/list` (the cheapest authenticated operation)
and a bare SQL count of the same window's incidents (the floor of reading the window).

    .venv/bin/python -m bench.insight [--postgres] [--incidents 100000] [--requests 50]

The data is bulk-inserted (executemany in batches of 5,000): one account in Europe/Paris with
10 channels in 5 teams and 20 members, incidents over 60 days up to NOW (one row in ten of
other accounts), 70 % acknowledged, 80 % closed (a quarter of them by the system), 1-5 alerts
each, 1-2 responders, and the event stream the figures read: created, assigned (10 % of them
escalations, 5 % reassignments), acked, resolved (some by the auto-resolve timeout). The
31-day windows end at NOW (2023-11-14) and so hold Paris's change to winter time (29 Oct)."""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import sys
import time
from typing import Any

import httpx
import msgspec

from bench.harness import scratch_database
from bench.in_process import _p

DAY = 86_400
NOW = 1_700_000_000
SPAN_DAYS = 60
BATCH = 5_000


async def seed(url: str, incidents: int) -> tuple[str, int]:
    from sqlalchemy import insert, update

    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.channel import channel
    from dutyline.db.tables.incident import incident, incident_event
    from dutyline.db.tables.platform import account, member, team
    from dutyline.kit.ids import numeric_id
    from dutyline.platform.account.service import create_account

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    rng = random.Random(11)
    try:
        async with db.transaction() as conn:
            created = await create_account(conn, account_name="Bench", owner_name="Owner",
                                           owner_email="o@bench.example", now_s=NOW)
            account_id = created.account_id
            await conn.execute(update(account).where(account.c.account_id == account_id)
                               .values(time_zone="Europe/Paris"))
            team_ids = [numeric_id() for _ in range(5)]
            await conn.execute(insert(team), [
                {"team_id": t, "account_id": account_id, "team_name": f"team{i}",
                 "name_key": f"team{i}", "creator_id": 1, "created_at": NOW, "updated_at": NOW}
                for i, t in enumerate(team_ids)])
            channel_ids = [numeric_id() for _ in range(10)]
            await conn.execute(insert(channel), [
                {"channel_id": c, "account_id": account_id, "creator_id": 1,
                 "team_id": team_ids[i % 5], "channel_name": f"ch{i}", "name_key": f"ch{i}",
                 "created_at": NOW, "updated_at": NOW} for i, c in enumerate(channel_ids)])
            people = [numeric_id() for _ in range(20)]
            await conn.execute(insert(member), [
                {"member_id": p, "account_id": account_id, "member_name": f"p{i}",
                 "email": f"p{i}@bench.example", "status": "enabled", "created_at": NOW,
                 "updated_at": NOW} for i, p in enumerate(people)])
        rows: list[dict[str, Any]] = []
        evs: list[dict[str, Any]] = []

        async def flush() -> None:
            async with db.transaction() as conn:
                if rows:
                    await conn.execute(insert(incident), rows)
                if evs:
                    await conn.execute(insert(incident_event), evs)
            rows.clear()
            evs.clear()

        def event(aid: int, iid: str, kind: str, t: int, person: int,
                  payload: dict[str, Any]) -> None:
            evs.append({"account_id": aid, "incident_id": iid, "kind": kind, "person_id": person,
                        "payload": msgspec.json.encode(payload).decode(), "created_at": t})

        for n in range(incidents):
            aid = account_id if n % 10 else 1 + n % 7
            iid = secrets.token_hex(12)
            start = NOW - rng.randrange(SPAN_DAYS * DAY)
            acked = rng.random() < 0.7
            closed = rng.random() < 0.8
            ack = start + rng.randrange(30, 3600) if acked else 0
            close = max(start, ack) + rng.randrange(60, 7200) if closed else 0
            system_close = closed and rng.random() < 0.25
            responders = [{"person_id": p, "assigned_at": start,
                           "acknowledged_at": ack if acked and i == 0 else 0}
                          for i, p in enumerate(rng.sample(people, rng.randint(1, 2)))]
            alerts = rng.randint(1, 5)
            severity = rng.choice(["Critical", "Warning", "Info"])
            rows.append({
                "incident_id": iid, "account_id": aid, "channel_id": rng.choice(channel_ids),
                "num": f"{n:08X}", "title": f"alert {n}", "incident_severity": severity,
                "incident_status": "Ok" if closed else severity,
                "progress": "Closed" if closed else ("Processing" if acked else "Triggered"),
                "start_time": start, "last_time": start, "ack_time": ack, "close_time": close,
                "end_time": close, "closer_id": 0 if system_close or not closed else people[0],
                "responders": msgspec.json.encode(responders).decode(),
                "alert_cnt": alerts, "alert_event_cnt": alerts * rng.randint(1, 4),
                "created_at": start, "updated_at": start,
            })
            event(aid, iid, "created", start, 0, {})
            roll = rng.random()
            kind = "escalate" if roll < 0.1 else ("reassign" if roll < 0.15 else "assign")
            event(aid, iid, "assigned", start + 1, 0 if kind == "escalate" else people[1],
                  {"assignment": {"type": kind, "layer_idx": 1 if kind == "escalate" else 0}})
            if acked:
                event(aid, iid, "acked", ack, responders[0]["person_id"], {})
            if closed:
                reason = rng.choice(["auto_resolve_timeout", "recovered"])
                event(aid, iid, "resolved", close, 0 if system_close else people[0],
                      {"reason": reason} if system_close else {})
            if len(rows) == BATCH:
                await flush()
        await flush()
        if db.is_postgres:
            # What autovacuum does soon after a bulk load: statistics and the visibility map
            # (index-only scans). SQLite is left without statistics, as dutyline leaves it.
            async with db.engine.connect() as conn:
                auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await auto.exec_driver_sql("VACUUM ANALYZE incident")
                await auto.exec_driver_sql("VACUUM ANALYZE incident_event")
    finally:
        await db.dispose()
    return created.app_key, account_id


async def measure(url: str, key: str, account_id: int,
                  requests: int) -> dict[str, tuple[list[float], list[float]]]:
    from sqlalchemy import func, select

    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.db.tables.incident import incident

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    w31 = {"start_time": NOW - 31 * DAY, "end_time": NOW}
    w60 = {"start_time": NOW - SPAN_DAYS * DAY, "end_time": NOW}
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "baseline: /team/list": ("/team/list", {}),
        "/insight/account, 31 days, one item": ("/insight/account", w31),
        "/insight/account, 31 days, per day": ("/insight/account",
                                               {**w31, "aggregate_unit": "day"}),
        "/insight/account, 60 days, per week, split hours": (
            "/insight/account", {**w60, "aggregate_unit": "week", "split_hours": True}),
        "/insight/channel, 31 days, per day": ("/insight/channel",
                                               {**w31, "aggregate_unit": "day"}),
        "/insight/responder, 31 days": ("/insight/responder", w31),
        "/insight/incident/list, 31 days, page 1": ("/insight/incident/list", w31),
    }
    names = [*calls, "baseline: SQL count of the 31-day window"]
    out: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in names}
    count = (select(func.count()).select_from(incident)
             .where(incident.c.account_id == account_id, incident.c.deleted_at == 0,
                    incident.c.start_time >= w31["start_time"],
                    incident.c.start_time < w31["end_time"]))
    async with app.router.lifespan_context(app):
        db = app.state.runtime.db
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            async def call(path: str, body: dict[str, Any]) -> tuple[float, float]:
                started, cpu = time.perf_counter(), time.process_time()
                r = await client.post(path, params={"app_key": key}, json=body)
                assert r.status_code == 200, r.text
                return ((time.perf_counter() - started) * 1000,
                        (time.process_time() - cpu) * 1000)

            async def bare() -> tuple[float, float]:
                started, cpu = time.perf_counter(), time.process_time()
                async with db.transaction() as conn:
                    n = (await conn.execute(count)).scalar_one()
                assert n > 0
                return ((time.perf_counter() - started) * 1000,
                        (time.process_time() - cpu) * 1000)

            first = await client.post("/insight/account", params={"app_key": key}, json=w31)
            item = first.json()["data"]["items"][0]
            print("31-day figures:", {k: item[k] for k in (
                "total_incident_cnt", "mean_seconds_to_ack", "acknowledgement_pct",
                "total_incidents_escalated", "total_incidents_timeout_closed",
                "noise_reduction_pct")})
            for path, body in calls.values():  # warm-up
                await call(path, body)
            for _ in range(requests):
                for name, (path, body) in calls.items():
                    wall, cpu = await call(path, body)
                    out[name][0].append(wall)
                    out[name][1].append(cpu)
                wall, cpu = await bare()
                out[names[-1]][0].append(wall)
                out[names[-1]][1].append(cpu)
    return out


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.insight")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--incidents", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=50)
    args = p.parse_args()
    with scratch_database("insight", args.postgres) as url:
        started = time.perf_counter()
        key, account_id = asyncio.run(seed(url, args.incidents))
        seeded = time.perf_counter() - started
        timings = asyncio.run(measure(url, key, account_id, args.requests))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"\n{backend}: {args.incidents} incidents (seeded in {seeded:.0f} s), "
          f"{args.requests} rounds, one request at a time, interleaved\n")
    base = _p(timings["baseline: /team/list"][0], 0.5)
    print("| operation | wall p50 ms | wall p99 ms | CPU p50 ms | p50 / team-list p50 |\n"
          "|---|---:|---:|---:|---:|")
    for name, (wall, cpu) in timings.items():
        print(f"| {name} | {_p(wall, 0.5):.1f} | {_p(wall, 0.99):.1f} | "
              f"{_p(cpu, 0.5):.1f} | {_p(wall, 0.5) / base:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
