"""First pages of a burst of incidents, drained by the escalation engine, next to bare
webhook posts from one process in the same run (the first pages only;
bench/escalation_timing.py measures the whole escalation timeline).

    python -m bench.escalation [--incidents 2000] [--concurrency 16] [--rounds 2] [--postgres]

Per database: a fresh database (`dutyline migrate`, `dutyline init`), a channel whose
escalation rule pages one custom webhook (the receiver is bench/bare_asgi.py in its own
process on loopback). The burst: `--incidents` incidents opened through `/incident/create`
(in-process ASGI, the job loops off), so each waits as an `incident_event.dispatch` job.
Then ONE worker loop (`--concurrency` jobs at a time, in this process) runs until every first
page is delivered: event -> rule picked -> step -> delivery row and job -> signed POST ->
attempt recorded; pages/s = incidents / drain time; the statements the process sent
(its own progress reads left out) and its CPU time (all its threads) over the drain, per
page. The baseline: the same number of POSTs
of the same payload size with aiohttp (the deliveries' client, unguarded) from one process
at the same concurrency, to the same receiver. Both are
checked: every incident got exactly one successful delivery.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
from sqlalchemy import event, func, select

from bench.harness import free_port, scratch_database, stop_process, venv_bin
from dutyline.app import create_app
from dutyline.config import Settings
from dutyline.db.tables.notify import notify_delivery
from dutyline.work.worker import Worker


def _env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUTYLINE_")}
    env.update(DUTYLINE_DATABASE_URL=database_url, DUTYLINE_SECRET_KEY="bench-secret")
    return env


def wait_for_receiver(url: str) -> None:
    """Until the loopback receiver at `url` answers a POST (10 s at most)."""
    for _ in range(100):
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(url, json={}, timeout=1)
            return
        time.sleep(0.1)


def _init(database_url: str) -> str:
    env = _env(database_url)
    subprocess.run([venv_bin("dutyline"), "migrate"], env=env, check=True,
                   capture_output=True)
    out = subprocess.run([venv_bin("dutyline"), "init", "--account-name", "bench"], env=env,
                         check=True, capture_output=True, text=True).stdout
    return str(json.loads(out.strip().splitlines()[-1])["app_key"])


@contextlib.asynccontextmanager
async def _app(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            client.runtime = app.state.runtime  # type: ignore[attr-defined]
            yield client


async def _call(client: httpx.AsyncClient, key: str, path: str, body: dict[str, Any]) -> Any:
    reply = (await client.post(path, params={"app_key": key}, json=body)).json()
    if "data" not in reply:
        raise RuntimeError(f"{path}: {reply}")
    return reply["data"]


async def _pool(n: int, concurrency: int, make: Any) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)

    async def worker() -> None:
        while not queue.empty():
            await make(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def engine_round(database_url: str, receiver: str, args: argparse.Namespace,
                       tag: str) -> dict[str, float]:
    key = _init(database_url)
    settings = Settings(database_url=database_url, secret_key="bench-secret",
                        allow_private_network=True, run_workers=False,
                        rate_limit_per_second=0, rate_limit_per_minute=0, log_level="warning",
                        worker_concurrency=args.concurrency)
    async with _app(settings) as client:
        channel = await _call(client, key, "/channel/create", {"channel_name": f"b{tag}"})
        await _call(client, key, "/channel/escalate/rule/create", {
            "channel_id": channel["channel_id"], "template_id": "6321aad26c12104586a88916",
            "rule_name": "bench", "layers": [{"target": {"webhooks": [{
                "type": "custom", "settings": {"url": receiver, "secret": "s"}}]},
                "max_times": 0, "notify_step": 10, "escalate_window": 0}]})
        started = time.perf_counter()

        async def open_one(i: int) -> None:
            await _call(client, key, "/incident/create", {
                "title": f"bench incident {i}", "incident_severity": "Critical",
                "channel_id": channel["channel_id"]})

        await _pool(args.incidents, args.concurrency, open_one)
        opened_s = time.perf_counter() - started
        runtime = client.runtime  # type: ignore[attr-defined]
        stop = asyncio.Event()
        worker = Worker(runtime, concurrency=args.concurrency, idle_min_s=0.01,
                        idle_max_s=0.05)
        statements = 0
        watch = runtime.db.engine.sync_engine

        def count(*_: Any) -> None:
            nonlocal statements
            statements += 1

        started, cpu_started = time.perf_counter(), time.process_time()
        event.listen(watch, "before_cursor_execute", count)
        loop = asyncio.create_task(worker.run(stop))
        polls = 0
        while True:
            async with runtime.db.transaction(write=False) as conn:
                done = (await conn.execute(select(func.count()).select_from(
                    notify_delivery).where(notify_delivery.c.status == "success"))).scalar_one()
            polls += 1
            if done >= args.incidents:
                break
            await asyncio.sleep(0.05)
        drain_s = time.perf_counter() - started
        cpu_s = time.process_time() - cpu_started
        event.remove(watch, "before_cursor_execute", count)
        stop.set()
        await loop
        async with runtime.db.transaction(write=False) as conn:
            total = (await conn.execute(select(func.count()).select_from(notify_delivery))
                     ).scalar_one()
    if total != args.incidents:
        raise RuntimeError(f"{total} deliveries for {args.incidents} incidents")
    return {"opened_per_s": args.incidents / opened_s, "pages_per_s": args.incidents / drain_s,
            # The bench's own progress reads left out.
            "statements_per_page": (statements - polls) / args.incidents,
            "cpu_ms_per_page": cpu_s * 1000 / args.incidents}


async def bare_round(receiver: str, args: argparse.Namespace) -> float:
    body = b'{"event_time":0,"event_type":"i_assign","event_id":"x","incident":{}}' * 20
    # The client deliveries use (aiohttp), unguarded: what a POST costs at the least.
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as client:
        started = time.perf_counter()

        async def post(_: int) -> None:
            async with client.post(receiver, data=body,
                                   headers={"Content-Type": "application/json"}) as response:
                response.raise_for_status()
                await response.read()

        await _pool(args.incidents, args.concurrency, post)
        return args.incidents / (time.perf_counter() - started)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--incidents", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--postgres", action="store_true")
    args = p.parse_args()
    port = free_port()
    bare = subprocess.Popen([sys.executable, "-m", "bench.bare_asgi", "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    receiver = f"http://127.0.0.1:{port}/hook"
    results: dict[str, list[dict[str, float]]] = {}
    try:
        with contextlib.ExitStack() as databases:
            wait_for_receiver(receiver)
            for r in range(args.rounds):
                targets = [(name, databases.enter_context(scratch_database(f"esc{r}", pg)))
                           for name, pg in (("sqlite", False), ("postgres", True))
                           if args.postgres or not pg]
                for name, url in targets:
                    bare_rate = asyncio.run(bare_round(receiver, args))
                    got = asyncio.run(engine_round(url, receiver, args, f"{r}{name}"))
                    got["bare_posts_per_s"] = bare_rate
                    results.setdefault(name, []).append(got)
                    print(f"round {r + 1} {name}: opened {got['opened_per_s']:.0f}/s, first "
                          f"pages {got['pages_per_s']:.0f}/s, bare posts {bare_rate:.0f}/s, "
                          f"ratio {got['pages_per_s'] / bare_rate:.2f}, statements/page "
                          f"{got['statements_per_page']:.2f}, CPU ms/page "
                          f"{got['cpu_ms_per_page']:.2f}", file=sys.stderr)
    finally:
        stop_process(bare)
    print("| database | incidents | opened/s | first pages/s | bare posts/s | ratio "
          "| statements/page | CPU ms/page |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rows in results.items():
        pages = statistics.median(r["pages_per_s"] for r in rows)
        bare_rate = statistics.median(r["bare_posts_per_s"] for r in rows)
        opened = statistics.median(r["opened_per_s"] for r in rows)
        ratio = statistics.median(r["pages_per_s"] / r["bare_posts_per_s"] for r in rows)
        stmts = statistics.median(r["statements_per_page"] for r in rows)
        cpu = statistics.median(r["cpu_ms_per_page"] for r in rows)
        print(f"| {name} | {args.incidents} | {opened:.0f} | {pages:.0f} | {bare_rate:.0f} | "
              f"{ratio:.2f} | {stmts:.2f} | {cpu:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
