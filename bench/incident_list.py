"""/incident/list with 100,000 incidents stored: p50/p99 of filtered pages, in-process over
httpx's ASGI transport (the whole operation layer: auth, rate limiter, decode, SQL, encode).

    .venv/bin/python -m bench.incident_list [--postgres] [--incidents 100000] [--requests 300]
                                            [--member]

The incidents are bulk-inserted straight into the table (one account, 10 channels, spread
over 60 days, the three severities and progresses, a few other accounts' rows mixed in), so
the figures are about reading, not about creating. Requests run one at a time: this measures
a page's latency, not throughput.

--titles N draws titles from N recurring ones (default 0: every title unique), so that the
`frequency` of each record (incident/query/repository.py `frequent`, read within `sources`)
finds earlier incidents of the same title. --compare-frequency measures every page with and
without that count (the sources read without it), alternating in the same run.

--member reads as a plain member instead of the owner: three of the ten channels are
private and the member's team owns one of them, so every page also filters out the incidents
of the two private channels the member cannot see (incident/visibility.py)."""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import sys
import time
from typing import Any

import httpx

from bench.harness import scratch_database
from bench.in_process import _p, seed_account

DAY = 86_400
NOW = 1_700_000_000
SPAN_DAYS = 60


async def _member_key(conn: Any, account_id: int, team_channel: int) -> str:
    """A plain member in a team that owns `team_channel`, and their app key."""
    from sqlalchemy import insert, select, update

    from dutyline.db.tables.channel import channel
    from dutyline.db.tables.platform import member, member_role, role, team, team_member
    from dutyline.kit.ids import numeric_id
    from dutyline.platform.app_key import keys

    person_id, team_id = numeric_id(), numeric_id()
    await conn.execute(insert(member).values(
        member_id=person_id, account_id=account_id, member_name="Reader",
        email="reader@bench.example", status="enabled", created_at=NOW, updated_at=NOW))
    role_id = (await conn.execute(select(role.c.role_id).where(
        role.c.account_id == account_id, role.c.builtin == "member"))).scalar_one()
    await conn.execute(insert(member_role).values(member_id=person_id, role_id=role_id,
                                                  account_id=account_id))
    await conn.execute(insert(team).values(
        team_id=team_id, account_id=account_id, team_name="Readers", name_key="readers",
        creator_id=person_id, created_at=NOW, updated_at=NOW))
    await conn.execute(insert(team_member).values(team_id=team_id, person_id=person_id,
                                                  account_id=account_id))
    await conn.execute(update(channel).where(channel.c.channel_id == team_channel)
                       .values(team_id=team_id))
    issued = await keys.issue(conn, account_id=account_id, person_id=person_id,
                              key_name="bench", now_s=NOW)
    return str(issued.app_key)


async def seed(url: str, incidents: int, as_member: bool = False,
               titles: int = 0, now: int = NOW) -> tuple[str, list[int]]:
    """`incidents` rows started over the SPAN_DAYS before `now`; (the reader's key, the
    channel ids)."""
    from sqlalchemy import insert

    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.incident import incident

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    rng = random.Random(7)
    try:
        async with db.transaction() as conn:
            created, channel_ids = await seed_account(conn, now, channels=10,
                                                      private=3 if as_member else 0)
            key = (await _member_key(conn, created.account_id, channel_ids[0]) if as_member
                   else created.app_key)
        batch: list[dict[str, Any]] = []
        for n in range(incidents):
            # One row in ten belongs to other accounts: the account filter has work to do.
            account_id = created.account_id if n % 10 else 1 + n % 7
            start = now - rng.randrange(SPAN_DAYS * DAY)
            progress = rng.choices(["Triggered", "Processing", "Closed"], [1, 1, 8])[0]
            severity = rng.choice(["Critical", "Warning", "Info"])
            closed = progress == "Closed"
            batch.append({
                "incident_id": secrets.token_hex(12), "account_id": account_id,
                "channel_id": rng.choice(channel_ids), "num": f"{n:08X}",
                "title": f"{rng.choice(['db', 'api', 'disk', 'cpu'])} alert "
                         f"{rng.randrange(titles) if titles else n}",
                "incident_severity": severity, "incident_status": "Ok" if closed else severity,
                "progress": progress, "start_time": start, "last_time": start,
                "end_time": start + 600 if closed else 0,
                "close_time": start + 600 if closed else 0,
                "created_at": start, "updated_at": start,
            })
            if len(batch) == 5000:
                async with db.transaction() as conn:
                    await conn.execute(insert(incident), batch)
                batch = []
        if batch:
            async with db.transaction() as conn:
                await conn.execute(insert(incident), batch)
        # What autovacuum does soon after a bulk load (PostgreSQL 13+ also vacuums after
        # inserts): statistics for the planner, and the visibility map that lets a count
        # read only the index. SQLite is left without statistics, as `dutyline` leaves it.
        if db.is_postgres:
            async with db.engine.connect() as conn:
                auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await auto.exec_driver_sql("VACUUM ANALYZE incident")
    finally:
        await db.dispose()
    return key, channel_ids


async def measure(url: str, key: str, channel_ids: list[int],
                  requests: int, compare_frequency: bool = False) -> dict[str, list[float]]:
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.incident.query import repository as repo

    counted = repo.sources

    async def not_counted(conn: Any, incident_ids: Any, *, frequency: bool = True) -> Any:
        return await counted(conn, incident_ids, frequency=False)

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    window = {"start_time": NOW - 31 * DAY + 1, "end_time": NOW + 1}
    bodies: dict[str, dict[str, Any]] = {
        "window only, newest 20": {**window},
        "Triggered+Processing, Critical": {**window, "progress": "Triggered,Processing",
                                           "incident_severity": "Critical"},
        "one channel, Closed, page 5": {**window, "channel_ids": [channel_ids[3]],
                                        "progress": "Closed", "p": 5},
        "title contains 'disk'": {**window, "query": "disk", "limit": 50},
    }
    timings: dict[str, list[float]] = {name: [] for name in [*bodies, "cursor: next page"]}
    # CPU ms of the whole process (event loop + database driver threads) per request: on a
    # shared, noisy machine a steadier figure than wall time.
    cpu_ms: list[list[float]] = [[]]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            async def call(body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
                started, cpu = time.perf_counter(), time.process_time()
                r = await client.post("/incident/list", params={"app_key": key}, json=body)
                elapsed = time.perf_counter() - started
                cpu_ms[-1].append((time.process_time() - cpu) * 1000)
                assert r.status_code == 200, r.text
                return elapsed * 1000, r.json()["data"]

            for body in bodies.values():  # warm-up, and a check that pages are not empty
                _, data = await call(body)
                assert data["items"], body
            cursor_name = "Triggered+Processing, Critical"
            if compare_frequency:
                for _ in range(requests):
                    for variant, count in (("without frequency", not_counted),
                                           ("with frequency", counted)):
                        repo.sources = count  # type: ignore[assignment]
                        for name, body in bodies.items():
                            cpu_ms.append([])
                            ms, data = await call(body)
                            label = f"{name}, {variant}"
                            timings.setdefault(label, []).append(ms)
                            timings.setdefault(f"{label} (CPU)", []).extend(cpu_ms[-1])
                repo.sources = counted  # type: ignore[assignment]
                for name in [*bodies, "cursor: next page"]:
                    timings.pop(name, None)
                return timings
            for _ in range(requests):
                cursor = ""
                for name, body in bodies.items():
                    cpu_ms.append([])
                    ms, data = await call(body)
                    timings[name].append(ms)
                    timings[f"{name} (CPU)"] = [*timings.get(f"{name} (CPU)", []), *cpu_ms[-1]]
                    if name == cursor_name:
                        cursor = data["search_after_ctx"]
                cpu_ms.append([])
                ms, _ = await call({**bodies[cursor_name], "search_after_ctx": cursor})
                timings["cursor: next page"].append(ms)
                timings["cursor: next page (CPU)"] = [*timings.get("cursor: next page (CPU)", []),
                                                      *cpu_ms[-1]]
    return timings


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.incident_list")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--incidents", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--titles", type=int, default=0,
                   help="draw titles from this many recurring ones (0: all unique)")
    p.add_argument("--compare-frequency", action="store_true",
                   help="every page with and without the frequency count, alternating")
    p.add_argument("--member", action="store_true",
                   help="read as a member who cannot see 2 of the 10 channels (private)")
    args = p.parse_args()
    with scratch_database("incidents", args.postgres) as url:
        started = time.perf_counter()
        key, channel_ids = asyncio.run(seed(url, args.incidents, args.member, args.titles))
        seeded = time.perf_counter() - started
        timings = asyncio.run(measure(url, key, channel_ids, args.requests,
                                      args.compare_frequency))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    reader = "a member who cannot see 2 private channels" if args.member else "the owner"
    print(f"{backend}: {args.incidents} incidents (seeded in {seeded:.0f} s), "
          f"{args.requests} requests per page kind, one at a time, as {reader}\n")
    print("| page | wall p50 ms | wall p99 ms | CPU p50 ms | CPU p99 ms |\n"
          "|---|---:|---:|---:|---:|")
    for name, values in timings.items():
        if name.endswith("(CPU)"):
            continue
        cpu = timings[f"{name} (CPU)"]
        print(f"| {name} | {_p(values, 0.5):.1f} | {_p(values, 0.99):.1f} | "
              f"{_p(cpu, 0.5):.1f} | {_p(cpu, 0.99):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
