"""The shape shared by the in-process read benchmarks (bench/past_incidents.py,
bench/alert_events.py): the app on a scratch database (bench/harness.py) driven over httpx's
ASGI transport (the whole operation layer), a baseline call and the measured calls interleaved one
at a time, and a table of wall and CPU times with the CPU ratio against the baseline."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from bench.harness import PG_BASE, pg_exec

# name -> (path, body); the first is the baseline.
Calls = dict[str, tuple[str, dict[str, Any]]]
# Checks a warm-up answer (name, data); raises when the data cannot be what is measured.
Check = Callable[[str, Any], None]


async def migrated_database(prefix: str, postgres: bool
                            ) -> tuple[str, Callable[[], Awaitable[None]]]:
    """A new migrated database for a bench inside a running event loop: (URL, drop)."""
    from dutyline.db.migrate import upgrade

    if postgres:
        name = f"bench_{prefix}_{secrets.token_hex(4)}"
        await pg_exec(f'CREATE DATABASE "{name}"')
        url = f"{PG_BASE}/{name}"

        async def drop() -> None:
            await pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        folder = tempfile.mkdtemp(prefix=f"bench-{prefix}-")
        url = f"sqlite+aiosqlite:///{folder}/bench.db"

        async def drop() -> None:
            shutil.rmtree(folder, ignore_errors=True)
    await asyncio.to_thread(upgrade, url)
    return url, drop


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def seed_account(conn: Any, now_s: int, channels: int = 0,
                       private: int = 0) -> tuple[Any, list[int]]:
    """An account made as `dutyline init` makes one (its owner's key in .app_key) and
    `channels` channels in it, the first `private` of them private."""
    from sqlalchemy import insert

    from dutyline.db.tables.channel import channel
    from dutyline.kit.ids import numeric_id
    from dutyline.platform.account.service import create_account

    created = await create_account(conn, account_name="Bench", owner_name="Owner",
                                   owner_email="o@bench.example", now_s=now_s)
    ids = [numeric_id() for _ in range(channels)]
    if ids:
        await conn.execute(insert(channel), [
            {"channel_id": c, "account_id": created.account_id, "creator_id": 1,
             "channel_name": f"ch{i}", "name_key": f"ch{i}", "created_at": now_s,
             "updated_at": now_s, "is_private": i < private} for i, c in enumerate(ids)])
    return created, ids


async def measure(url: str, key: str, calls: Calls, requests: int,
                  check: Check) -> dict[str, list[float]]:
    """{name: wall ms per call, "<name> (CPU)": process CPU ms per call}."""
    from dutyline.app import create_app
    from dutyline.config import Settings

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
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

            for name, (path, body) in calls.items():  # warm-up and a check of the answers
                check(name, (await call(path, body))[2])
            for _ in range(requests):
                for name, (path, body) in calls.items():
                    wall, cpu, _ = await call(path, body)
                    timings.setdefault(name, []).append(wall)
                    timings.setdefault(f"{name} (CPU)", []).append(cpu)
    return timings


def print_table(heading: str, timings: dict[str, list[float]], baseline: str) -> None:
    print(heading + "\n")
    print("| operation | wall p50 ms | wall p99 ms | CPU p50 ms | CPU p99 ms | "
          "CPU p50 / baseline |\n|---|---:|---:|---:|---:|---:|")
    base = _p(timings[f"{baseline} (CPU)"], 0.5)
    for name, values in timings.items():
        if name.endswith("(CPU)"):
            continue
        cpu = timings[f"{name} (CPU)"]
        print(f"| {name} | {_p(values, 0.5):.1f} | {_p(values, 0.99):.1f} | "
              f"{_p(cpu, 0.5):.1f} | {_p(cpu, 0.99):.1f} | {_p(cpu, 0.5) / base:.2f} |")
