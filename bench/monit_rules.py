"""Alert rules evaluating every minute against one real Prometheus (the goal: 500 enabled
rules, every evaluation starts within 2 s of its schedule).

A `prometheus` (Debian's package) scrapes itself every second on a loopback port; N rules
(`* * * * *`, a PromQL instant query each, a threshold that a share of them meets so some
alerts are really ingested) are created through the service; `dutyline worker` processes
fire the schedules and run the evaluations. For each of two consecutive minutes, the lag of
each rule's evaluation start (its `last_eval_at_ms`) behind the due minute, and how long
evaluations took.

    .venv/bin/python -m bench.monit_rules [--postgres] [--rules 500] [--workers 2]
        [--firing 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.in_process import migrated_database

ROOT = Path(__file__).resolve().parents[1]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prometheus(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which("prometheus")
    if exe is None:
        sys.exit("prometheus is not installed (apt-get install -y prometheus)")
    port = _free_port()
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: prometheus\n"
                      f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
    proc = subprocess.Popen([exe, f"--config.file={config}",
                             f"--storage.tsdb.path={folder / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            got = httpx.post(f"{url}/api/v1/query", data={"query": "up"}, timeout=1).json()
            if got["data"]["result"]:
                return proc, url
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    proc.kill()
    sys.exit("prometheus did not start")


async def _seed(url: str, prom_url: str, rules: int, firing: float) -> None:
    """Account, channel, data source and rules, through the app's own operations."""
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.platform.account.service import create_account

    settings = Settings(database_url=url, secret_key="bench", run_workers=False,
                        allow_private_network=True, rate_limit_per_second=1_000_000,
                        rate_limit_per_minute=10_000_000, log_level="warning")
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        runtime = app.state.runtime
        async with runtime.db.transaction() as conn:
            owner = await create_account(conn, account_name="Bench", owner_name="Owner",
                                         owner_email="o@bench.example", now_s=int(time.time()))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench",
                                     params={"app_key": owner.app_key}) as client:
            async def call(path: str, body: dict[str, Any]) -> Any:
                reply = (await client.post(path, json=body)).json()
                assert "data" in reply, reply
                return reply["data"]

            channel_id = (await call("/channel/create", {"channel_name": "Bench"}))["channel_id"]
            ds_id = (await call("/monit/datasource/create", {
                "type_ident": "prometheus", "name": "prom", "address": prom_url,
                "edge_cluster_name": "default", "payload": {"prometheus": {}}}))["id"]
            firing_every = round(1 / firing) if firing > 0 else 0
            for n in range(rules):
                fires = bool(firing_every) and n % firing_every == 0
                await call("/monit/rule/create", {
                    "name": f"rule {n}", "ds_type": "prometheus", "ds_ids": [ds_id],
                    "cron_pattern": "* * * * *", "channel_ids": [channel_id],
                    "labels": {"n": str(n)},
                    "rule_configs": {
                        "queries": [{"name": "A", "expr": 'up{job="prometheus"}'}],
                        "check_threshold": {"enabled": True,
                                            "critical": "$A > 0" if fires else "$A > 1",
                                            "push_recovery_event": True}}})


async def bench(postgres: bool, rules: int, workers: int, firing: float) -> None:
    from sqlalchemy import select

    from dutyline.db.engine import Database
    from dutyline.db.tables.monit import monit_rule

    folder = Path(tempfile.mkdtemp(prefix="bench-prom-"))
    prom, prom_url = _prometheus(folder)
    url, drop = await migrated_database("monit", postgres)
    procs: list[asyncio.subprocess.Process] = []
    db = Database(url)
    results: dict[int, list[Any]] = {}
    try:
        started = time.time()
        await _seed(url, prom_url, rules, firing)
        seeded = time.time()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DUTYLINE_DATABASE_URL": url,
               "DUTYLINE_SECRET_KEY": "bench", "DUTYLINE_LOG_LEVEL": "warning",
               "DUTYLINE_ALLOW_PRIVATE_NETWORK": "1", "DUTYLINE_WORKER_CONCURRENCY": "8"}
        exe = str(Path(sys.executable).parent / "dutyline")
        for _ in range(workers):
            procs.append(await asyncio.create_subprocess_exec(
                exe, "worker", cwd=ROOT, env=env, stdin=asyncio.subprocess.DEVNULL))
        # Steady state: the first minute measured starts at least 20 s after the workers
        # were launched (their start-up is not the scheduler's lag).
        first = (int(time.time() + 20) // 60 + 1) * 60
        print(f"{rules} rules seeded in {seeded - started:.1f} s; measuring the minutes "
              f"{time.strftime('%H:%M', time.gmtime(first))} and "
              f"{time.strftime('%H:%M', time.gmtime(first + 60))} UTC", flush=True)
        for minute in (first, first + 60):
            await asyncio.sleep(max(0.0, minute + 55 - time.time()))
            async with db.connect() as conn:
                results[minute] = list(await conn.execute(select(
                    monit_rule.c.last_eval_at_ms, monit_rule.c.last_eval_ms,
                    monit_rule.c.last_error, monit_rule.c.firing_count)))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            await p.wait()
        prom.terminate()
        prom.wait()
        await db.dispose()
        await drop()
        shutil.rmtree(folder, ignore_errors=True)
    backend = "PostgreSQL" if postgres else "SQLite"
    print(f"{backend}: {rules} rules every minute, {workers} worker processes "
          f"(concurrency 8 each), one Prometheus")
    for minute, rows in results.items():
        lags = [(r.last_eval_at_ms - minute * 1000) / 1000 for r in rows
                if minute * 1000 <= r.last_eval_at_ms < (minute + 60) * 1000]
        took = [r.last_eval_ms for r in rows if r.last_eval_at_ms >= minute * 1000]
        errors = sum(1 for r in rows if r.last_error)
        firing_now = sum(1 for r in rows if r.firing_count)
        print(f"  {time.strftime('%H:%M', time.gmtime(minute))}: evaluated {len(lags)}/{rules}"
              f", start lag p50 {_pct(lags, .5):.2f} s p99 {_pct(lags, .99):.2f} s max "
              f"{max(lags, default=float('nan')):.2f} s, within 2 s: "
              f"{sum(x <= 2 for x in lags)}; evaluation p50 {_pct(took, .5):.0f} ms p99 "
              f"{_pct(took, .99):.0f} ms; errors {errors}; rules firing {firing_now}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--rules", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--firing", type=float, default=0.1)
    args = parser.parse_args()
    asyncio.run(bench(args.postgres, args.rules, args.workers, args.firing))


if __name__ == "__main__":
    main()
