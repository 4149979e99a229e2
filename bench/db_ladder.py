"""CPU cost of each layer of a /team/list request, in-process, one request at a time.

    python -m bench.db_ladder [--postgres] [--iterations 300] [--rounds 5]

Each rung adds one piece of what the endpoint does, using dutyline's own code:

  0 empty        an awaited no-op (the loop's floor)
  1 transaction  runtime.db.transaction(write=False) entered and left: pool checkout, BEGIN,
                 COMMIT, reset-on-return
  2 + auth       ... plus DatabaseAuthenticator.authenticate (one query)
  3 + page       ... plus team repository list_page (one query, 20 rows)
  4 + encode     ... plus building the 20 TeamItem structs and the msgspec envelope
  5 floor        (SQLite only) the SQL of rungs 2-3, run on the stdlib sqlite3 driver in this
                 thread: BEGIN, the two SELECTs with rows fetched, COMMIT; no SQLAlchemy

Rungs are interleaved in every round (0,1,2,3,4, 0,1,2,...) and the median over rounds is
reported as process CPU µs per iteration (all threads, so aiosqlite's worker threads count),
which depends little on how busy the shared machine is. No HTTP and no concurrency: the
difference between rung 4 and the server's CPU per request (http_bench) is Starlette, uvicorn,
the handler's own work and the cost of 32 requests in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.harness import scratch_database
from bench.trace_requests import make_accounts


async def ladder(env: dict[str, str], keys: dict[str, str], iterations: int,
                 rounds: int) -> dict[str, list[float]]:
    from dutyline.api.envelope import success_body
    from dutyline.api.operation import Context
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.platform.team import repository, service
    from dutyline.platform.team.schemas import TeamListResponse

    settings = Settings.from_env({**env, "DUTYLINE_RATE_LIMIT_PER_SECOND": "0",
                                  "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0",
                                  "DUTYLINE_LOG_LEVEL": "warning"})
    app = create_app(settings)
    runtime = app.state.runtime
    db, auth = runtime.db, runtime.authenticator
    key = keys["list"]

    async with db.transaction() as conn:
        caller = await auth.authenticate(conn, key)
        assert caller is not None
        for i in range(25):
            ctx = Context(None, caller, runtime, "seed", "en", "127.0.0.1")
            await service.upsert_team(conn, ctx.actor,
                                      team=service.TeamChanges(team_name=f"seed-{i:02d}"))

    async def empty() -> None:
        await asyncio.sleep(0)

    async def transaction() -> None:
        async with db.transaction(write=False):
            pass

    async def with_auth() -> None:
        async with db.transaction(write=False) as conn:
            await auth.authenticate(conn, key)

    async def with_page() -> None:
        async with db.transaction(write=False) as conn:
            c = await auth.authenticate(conn, key)
            assert c is not None
            await conn.run_sync(lambda sync: repository.list_page_sync(
                sync, c.account_id, person_id=None, query="", orderby="created_at", asc=False,
                offset=0, limit=20))

    async def with_encode() -> None:
        async with db.transaction(write=False) as conn:
            c = await auth.authenticate(conn, key)
            assert c is not None
            total, rows = await conn.run_sync(lambda sync: repository.list_page_sync(
                sync, c.account_id, person_id=None, query="", orderby="created_at",
                asc=False, offset=0, limit=20))
        items = service._items(rows)
        assert len(items) == 20
        success_body("0" * 32, TeamListResponse(p=1, limit=20, total=total, items=items))

    async def one_unit() -> None:
        # What /team/list does with a known key: the page and its records in one unit.
        actor = Context(None, caller, runtime, "0", "en").actor
        total, items = await db.run_sync(lambda sync: service.list_teams_sync(
            sync, actor, offset=0, limit=20), write=False)
        success_body("0" * 32, TeamListResponse(p=1, limit=20, total=total, items=items))

    rungs: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("0 empty (awaited no-op)", empty),
        ("1 transaction (checkout, BEGIN, COMMIT, reset)", transaction),
        ("2 + auth query", with_auth),
        ("3 + team page query (20 rows)", with_page),
        ("4 + TeamItem structs + msgspec envelope", with_encode),
        ("6 one unit: known key, run_sync(list_teams_sync) + envelope", one_unit),
    ]
    if db.is_sqlite:
        rungs.append(("5 floor: same SQL on stdlib sqlite3, sync, no SQLAlchemy",
                      await _raw_sqlite_rung(db, key, caller.account_id)))
    results: dict[str, list[float]] = {name: [] for name, _ in rungs}
    for _, fn in rungs:  # warm caches and the pool
        for _ in range(20):
            await fn()
    for _ in range(rounds):
        for name, fn in rungs:
            c0 = time.process_time()
            for _ in range(iterations):
                await fn()
            results[name].append((time.process_time() - c0) * 1e6 / iterations)
    await db.dispose()
    return results


async def _raw_sqlite_rung(db: Any, key: str, account_id: int
                           ) -> Callable[[], Awaitable[None]]:
    """The floor: the statements of rungs 2-3 (the SQL bench/bare_sql.py compiles from
    dutyline's own), run with the stdlib driver on this thread, in a transaction, rows
    fetched; nothing else."""
    import hashlib
    import sqlite3

    from bench.bare_sql import compiled

    (caller_sql, caller_names, caller_bound), (page_sql, page_names, page_bound) = compiled(
        False)
    values = {"key_hash": hashlib.sha256(key.encode()).hexdigest(), "account_id": account_id,
              "offset": 0, "limit": 20}
    caller_args = tuple(values.get(n, caller_bound.get(n)) for n in caller_names)
    page_args = tuple(values.get(n, page_bound.get(n)) for n in page_names)
    conn = sqlite3.connect(db.engine.url.database, isolation_level=None)

    async def raw() -> None:
        conn.execute("BEGIN")
        conn.execute(caller_sql, caller_args).fetchall()
        conn.execute(page_sql, page_args).fetchall()
        conn.execute("COMMIT")

    return raw


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.db_ladder")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    with scratch_database("ladder", args.postgres) as url:
        env = {**os.environ, "DUTYLINE_DATABASE_URL": url, "DUTYLINE_RUN_WORKERS": "0"}
        results = asyncio.run(ladder(env, make_accounts(env), args.iterations, args.rounds))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}: process CPU µs per iteration, median of {args.rounds} interleaved rounds "
          f"x {args.iterations}\n")
    print("| rung | CPU µs | added by this rung | per round |\n|---|---:|---:|---|")
    previous = 0.0
    for name, values in results.items():
        m = statistics.median(values)
        print(f"| {name} | {m:.0f} | {m - previous:+.0f} | "
              + " ".join(f"{v:.0f}" for v in values) + " |")
        previous = m
    return 0


if __name__ == "__main__":
    sys.exit(main())
