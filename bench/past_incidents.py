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
import sys
from typing import Any

from bench.harness import scratch_database
from bench.in_process import Calls, measure, print_table
from bench.incident_list import seed


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


def calls(incident_id: str) -> Calls:
    return {
        "/incident/info (baseline)": ("/incident/info", {"incident_id": incident_id}),
        "/incident/past/list, limit 5": ("/incident/past/list", {"incident_id": incident_id}),
        "/incident/past/list, limit 100": ("/incident/past/list",
                                           {"incident_id": incident_id, "limit": 100}),
    }


def check(name: str, data: Any) -> None:
    if "/incident/past/list" in name:
        assert data["items"], "no similar incident found"


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.past_incidents")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--incidents", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    with scratch_database("past", args.postgres) as url:
        key, channel_ids = asyncio.run(seed(url, args.incidents))
        incident_id = asyncio.run(_newest_incident(url, channel_ids[3]))
        timings = asyncio.run(measure(url, key, calls(incident_id), args.requests, check))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print_table(f"{backend}: {args.incidents} incidents, {args.requests} requests each, "
                "interleaved, one at a time", timings, "/incident/info (baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
