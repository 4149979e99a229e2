"""Count what one request costs in database work: SQL statements, pool checkouts, pings and
(on SQLite) aiosqlite thread hops, per /team/list and /team/upsert call.

    python -m bench.trace_requests [--postgres] [--requests 200]

Runs the app in-process (httpx ASGITransport, no server, no timing: counts only), on a fresh
SQLite file or a fresh PostgreSQL database that it drops at the end. Counts are exact and do
not depend on machine noise, so they explain the throughput figures of http_bench.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import secrets
import subprocess
import sys
from typing import Any

from bench.harness import scratch_database, venv_bin


def make_accounts(env: dict[str, str]) -> dict[str, str]:
    keys = {}
    for role in ("list", "write"):
        out = subprocess.run([venv_bin("dutyline"), "init", "--account-name", f"trace-{role}"],
                             env=env, capture_output=True, check=True, timeout=120)
        keys[role] = json.loads(out.stdout.decode().strip().splitlines()[-1])["app_key"]
    return keys


async def trace(env: dict[str, str], keys: dict[str, str], requests: int,
                concurrency: int) -> dict[str, dict[str, float]]:
    import aiosqlite.core
    import httpx
    from sqlalchemy import event

    from dutyline.app import create_app
    from dutyline.config import Settings

    settings = Settings.from_env({**env, "DUTYLINE_RATE_LIMIT_PER_SECOND": "0",
                                  "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0",
                                  "DUTYLINE_LOG_LEVEL": "warning"})
    app = create_app(settings)
    engine = app.state.runtime.db.engine
    counts: collections.Counter[str] = collections.Counter()
    statements: collections.Counter[str] = collections.Counter()

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _stmt(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        counts["sql statements (incl. BEGIN)"] += 1
        statements[" ".join(statement.split())[:90]] += 1

    @event.listens_for(engine.sync_engine.pool, "checkout")
    def _checkout(*_: Any) -> None:
        counts["pool checkouts"] += 1

    @event.listens_for(engine.sync_engine.pool, "connect")
    def _connect(*_: Any) -> None:
        counts["new DB connections opened (pool churn)"] += 1

    @event.listens_for(engine.sync_engine.pool, "close")
    def _close(*_: Any) -> None:
        counts["DB connections closed (pool churn)"] += 1

    @event.listens_for(engine.sync_engine.pool, "reset")
    def _reset(*_: Any) -> None:
        counts["pool reset-on-return (ROLLBACK)"] += 1

    dialect = engine.sync_engine.dialect
    original_ping = dialect.do_ping

    def counting_ping(dbapi_connection: Any) -> bool:
        counts["pre-ping round trips"] += 1
        return bool(original_ping(dbapi_connection))

    dialect.do_ping = counting_ping  # type: ignore[method-assign]
    original_execute = aiosqlite.core.Connection._execute

    async def counting_execute(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        counts["aiosqlite thread hops"] += 1
        return await original_execute(self, fn, *args, **kwargs)

    aiosqlite.core.Connection._execute = counting_execute  # type: ignore[method-assign]
    results: dict[str, dict[str, float]] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for i in range(25):
            r = await client.post(f"/team/upsert?app_key={keys['list']}",
                                  json={"team_name": f"seed-{i:02d}"})
            r.raise_for_status()
        for label, path, role in (("/team/list", "/team/list", "list"),
                                  ("/team/upsert", "/team/upsert", "write")):
            for _ in range(5):  # warm the statement caches
                await client.post(f"{path}?app_key={keys[role]}",
                                  json={"team_name": f"w-{secrets.token_hex(6)}"})
            counts.clear()
            statements.clear()
            async def one(path: str = path, role: str = role) -> None:
                body = {} if role == "list" else {"team_name": f"t-{secrets.token_hex(8)}"}
                r = await client.post(f"{path}?app_key={keys[role]}", json=body)
                r.raise_for_status()

            for _ in range(requests // concurrency):
                await asyncio.gather(*(one() for _ in range(concurrency)))
            done = requests // concurrency * concurrency
            results[label] = {k: v / done for k, v in sorted(counts.items())}
            results[label + " statements"] = {k: v / done for k, v in statements.most_common()}
    await app.state.runtime.db.dispose()
    aiosqlite.core.Connection._execute = original_execute  # type: ignore[method-assign]
    return results


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.trace_requests")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--requests", type=int, default=320)
    p.add_argument("--concurrency", type=int, default=1,
                   help="requests in flight at once (32 shows the pool churn wrk sees)")
    args = p.parse_args()
    with scratch_database("trace", args.postgres) as url:
        env = {**os.environ, "DUTYLINE_DATABASE_URL": url, "DUTYLINE_RUN_WORKERS": "0"}
        results = asyncio.run(trace(env, make_accounts(env), args.requests,
                                    args.concurrency))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"per request, averaged over {args.requests} ({backend}, "
          f"{args.concurrency} in flight):")
    for label, values in results.items():
        print(f"\n{label}")
        for k, v in values.items():
            print(f"  {v:6.2f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
