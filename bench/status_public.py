"""The public page of a status page with 100 components (10 sections) and 1,000 past
incidents (3 updates each, over 180 days), next to a bare ASGI baseline, in-process over
httpx's ASGI transport, one request at a time.

    .venv/bin/python -m bench.status_public [--postgres] [--requests 1000] [--cold 200]

- cached: the same page again (served from memory: no database at all);
- 304: the same page with its ETag in If-None-Match;
- cold: the page's change signal bumped before every request (`status_page.cache.invalidate`
  in a transaction of its own, not timed), so each one reads the page from the database and
  renders it (what the first view after every change costs);
- baselines: a bare ASGI app (bench/bare_asgi.py `fixed`) answering the very same bytes, and
  one answering an empty 304, through the same transport, interleaved with the others so all
  see the same machine. The ratios are bare p50 / dutyline p50: the share of the bare app's
  one-at-a-time throughput the page reaches.
Feeds (RSS, cached and cold) are measured the same way."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

import httpx

from bench.bare_asgi import fixed
from bench.harness import scratch_database

DAY = 86_400
COMPONENTS = 100
SECTIONS = 10
STATUSES = ("operational",) * 8 + ("degraded", "under_maintenance")


async def seed(url: str, incidents: int, now_s: int) -> int:
    from sqlalchemy import insert

    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.status_page import (
        status_change,
        status_change_update,
        status_component,
        status_page,
        status_section,
    )
    from dutyline.kit.ids import hex_id, numeric_id

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    page_id = numeric_id()
    try:
        async with db.transaction() as conn:
            await conn.execute(insert(status_page).values(
                page_id=page_id, account_id=1, page_name="Bench Cloud", url_name="bench",
                description="A large status page", created_at=now_s - 400 * DAY,
                updated_at=now_s - 3600))
            sections = [hex_id() for _ in range(SECTIONS)]
            await conn.execute(insert(status_section), [
                {"section_id": s, "page_id": page_id, "account_id": 1, "name": f"Region {i}",
                 "order_id": i, "created_at": now_s, "updated_at": now_s}
                for i, s in enumerate(sections)])
            components = [hex_id() for _ in range(COMPONENTS)]
            await conn.execute(insert(status_component), [
                {"component_id": c, "page_id": page_id, "section_id": sections[i % SECTIONS],
                 "account_id": 1, "name": f"Service {i}", "description": f"Service number {i}",
                 "status": STATUSES[i % len(STATUSES)], "order_id": i, "created_at": now_s,
                 "updated_at": now_s} for i, c in enumerate(components)])
            changes, updates = [], []
            for n in range(incidents):
                start = now_s - 2 * DAY - n * (180 * DAY // incidents)
                change_id = numeric_id()
                active = n < 2
                changes.append({
                    "change_id": change_id, "page_id": page_id, "account_id": 1,
                    "type": "maintenance" if n % 10 == 9 else "incident",
                    "title": f"Incident {n}: elevated errors on service {n % COMPONENTS}",
                    "description": "Requests failed for some customers.",
                    "status": ("identified" if active else
                               "completed" if n % 10 == 9 else "resolved"),
                    "affected_components": json.dumps([
                        {"component_id": components[n % COMPONENTS], "status": "degraded"}]),
                    "start_at_seconds": start, "close_at_seconds": 0 if active else start + 3600,
                    "created_at": start, "updated_at": start + 3600})
                for k, status in enumerate(("investigating", "identified", "resolved")):
                    if active and status == "resolved":
                        continue
                    updates.append({
                        "update_id": hex_id(), "change_id": change_id, "page_id": page_id,
                        "account_id": 1, "at_seconds": start + k * 1200, "status": status,
                        "description": f"Update {k} on incident {n}.", "component_changes": "[]",
                        "seq": k, "created_at": start + k * 1200})
            await conn.execute(insert(status_change), changes)
            await conn.execute(insert(status_change_update), updates)
    finally:
        await db.dispose()
    return page_id


async def measure(url: str, page_id: int, requests: int, cold: int) -> dict[str, list[float]]:
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.status_page import cache as page_cache

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning",
                        smtp_url="smtp://127.0.0.1:25")
    app = create_app(settings)
    names = ["page, cached", "page, cold (invalidated before each)", "rss, cached",
             "rss, cold", "bare ASGI, same bytes", "page, 304 (If-None-Match)",
             "bare ASGI, 304"]
    timings: dict[str, list[float]] = {n: [] for n in names}
    async with app.router.lifespan_context(app):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b")
        await app.state.runtime.signals.until_live()
        for _ in range(2):  # an address is kept from its second view on
            first = await client.get("/status/bench")
        assert first.status_code == 200, first.text[:500]
        assert first.text.count('class="st ') == COMPONENTS
        body = first.content
        etag = first.headers["etag"]
        bare = httpx.AsyncClient(transport=httpx.ASGITransport(app=fixed(body)),
                                 base_url="http://b")
        bare_304 = httpx.AsyncClient(transport=httpx.ASGITransport(app=fixed(b"", status=304)),
                                     base_url="http://b")
        db = app.state.runtime.db
        missed_304 = [0]

        async def timed(c: httpx.AsyncClient, path: str, name: str, status: int = 200,
                        headers: dict[str, str] | None = None) -> httpx.Response:
            started = time.perf_counter()
            r = await c.get(path, headers=headers)
            timings[name].append((time.perf_counter() - started) * 1000)
            if r.status_code != status and status == 304 and r.status_code == 200:
                # Rendered again in between (a new minute, or this process briefly unable
                # to vouch for the page's signal): counted, not timed as a 304.
                timings[name].pop()
                missed_304[0] += 1
            else:
                assert r.status_code == status, (name, r.status_code)
            return r

        async def invalidate() -> None:
            async with db.transaction() as conn:
                await page_cache.invalidate(conn, page_id)

        for i in range(requests):
            # Its ETag changes when the page is rendered again (each minute: "generated at").
            etag = (await timed(client, "/status/bench", names[0])).headers["etag"]
            await timed(bare, "/bare", names[4])
            await timed(client, "/status/bench", names[5], 304, {"If-None-Match": etag})
            await timed(bare_304, "/bare", names[6], 304)
            await timed(client, "/status/bench/history.rss", names[2])
            if i < cold:
                await invalidate()
                await timed(client, "/status/bench", names[1])
                await invalidate()
                await timed(client, "/status/bench/history.rss", names[3])
                # Both again, so the cached rows time what is kept in memory.
                await client.get("/status/bench")
                await client.get("/status/bench/history.rss")
        await client.aclose()
        await bare.aclose()
    print(f"page body {len(body) / 1024:.0f} KiB; If-None-Match answered 200 instead of 304 "
          f"{missed_304[0]} times (page rendered again in between)")
    return timings


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.status_public")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--incidents", type=int, default=1000)
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--cold", type=int, default=200)
    args = p.parse_args()
    now_s = int(time.time())
    with scratch_database("status", args.postgres) as url:
        page_id = asyncio.run(seed(url, args.incidents, now_s))
        timings = asyncio.run(measure(url, page_id, args.requests, args.cold))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}: {COMPONENTS} components in {SECTIONS} sections, {args.incidents} past "
          f"incidents with 3 updates each; {args.requests} cached and {args.cold} cold "
          "requests, one at a time\n")
    print("| request | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|")
    for name, values in timings.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"| {name} | {statistics.median(values):.3f} | {p99:.2f} | {values[-1]:.2f} |")
    p50 = {name: statistics.median(values) for name, values in timings.items()}
    print(f"\ncached hit: {p50['bare ASGI, same bytes'] / p50['page, cached']:.0%} of bare "
          f"(goal 60 %); 304: {p50['bare ASGI, 304'] / p50['page, 304 (If-None-Match)']:.0%} "
          "of bare (goal 80 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
