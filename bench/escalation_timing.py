"""Escalation timing: incidents opened over one minute, escalating through 3 layers
with repeats, paged by real `dutyline worker` processes; for every notification, the
lateness of its arrival at a loopback webhook receiver against its due time, and none twice,
none missing (the goal: 10,000 incidents opened over one minute, every page within 1 s).

    .venv/bin/python -m bench.escalation_timing [--postgres [--pg-server own|shared]]
        [--incidents 600] [--workers 2]
        [--spread 60] [--concurrency 16] [--open-by push|create] [--open-via serve|in-process]
        [--open-concurrency 16]

Timeline (the smallest the rule contract allows: `notify_step` >= 0.5 min, `escalate_window`
in whole minutes): 3 layers, each one custom webhook on the receiver, `max_times` 2,
`notify_step` 0.5 (30 s), `escalate_window` 1 (60 s). Per incident opened at t0 the pages
are due at t0 + 0 (layer 0), +30 (layer 0 repeat), +60 (layer 1; its escalation pre-empts the
second repeat, which would be due then too), +90 (layer 1 repeat), +120 (layer 2), +150,
+180 (layer 2's two repeats; the last layer never escalates): 7 pages per incident, the last
3 minutes after opening. `max_times` 2 is reached on the last layer only.

The incidents are opened by alerts, as in production: a `POST /event/push/alert/standard`
with a new alert key each (the channel does not group, so each opens its incident), sent over
loopback HTTP (aiohttp, at most `--open-concurrency` in flight, 16 by default) to a
`dutyline serve` of their own (job loops off, rate limits off), incident i at start +
i * spread / N; t0 is the moment its push returned (committed), and the incident is found by
its alert key after the run.
`--open-via in-process` sends them through this process's app instead (httpx's ASGI
transport: about 10 ms of this process's CPU per incident), and
`--open-by create` opens them through `/incident/create` (about four times a push's CPU).
The report gives the CPU seconds each group of processes used (bench/cpu_account.py). Pages go out
from `--workers` `dutyline worker` processes (`DUTYLINE_WORKER_CONCURRENCY=--concurrency`).
The receiver (its own process, uvicorn) appends "arrival time, Idempotency-Key" per POST to
a file. After the run the keys are joined
to the `notify_delivery` rows (incident, layer); per (incident, layer) the k-th distinct key to
arrive is the layer's k-th page, due at t0 + 60 * layer + 30 * k. Duplicates: a key that
arrived more than once; missing: expected pages (7 per incident) that never arrived.

`--postgres` runs on a throwaway cluster of the bench's own with PostgreSQL's stock settings
(bench/pg_cluster.py: autovacuum on, as deployments run); `--pg-server shared` runs on the
server at DUTYLINE_BENCH_PG instead (this machine's has autovacuum off).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import aiohttp

from bench.cpu_account import CpuAccount
from bench.escalation import _app, _call, _init, wait_for_receiver
from bench.harness import PG_BASE, free_port, pg_exec, stop_process, venv_bin
from bench.pg_cluster import own_cluster

ROOT = Path(__file__).resolve().parents[1]
LAYERS, MAX_TIMES, STEP_S, WINDOW_S = 3, 2, 30, 60


def _offsets() -> list[tuple[int, int]]:
    """(layer, k) of every page of one incident, with its offset from t0 in seconds."""
    slots = []
    for layer in range(LAYERS):
        repeats = MAX_TIMES if layer == LAYERS - 1 else (WINDOW_S // STEP_S) - 1
        slots += [(layer, k) for k in range(repeats + 1)]
    return slots


def receiver_app(out_path: str) -> Any:
    out = open(out_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.startup":
                        await send({"type": "lifespan.startup.complete"})
                    elif message["type"] == "lifespan.shutdown":
                        out.close()
                        await send({"type": "lifespan.shutdown.complete"})
                        return
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        key = ""
        for name, value in scope["headers"]:
            if name == b"idempotency-key":
                key = value.decode()
        if key:
            out.write(f"{time.time():.4f} {key}\n")
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    return app


def _receive_main(port: int, out_path: str) -> None:
    import uvicorn

    uvicorn.run(receiver_app(out_path), host="127.0.0.1", port=port, log_level="warning",
                access_log=False, lifespan="on")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(url: str, args: argparse.Namespace, receiver: str, log_path: str) -> dict[str, Any]:
    from sqlalchemy import select

    from dutyline.config import Settings
    from dutyline.db.tables.incident import alert
    from dutyline.db.tables.notify import notify_delivery

    key = _init(url)
    settings = Settings(database_url=url, secret_key="bench-secret",
                        allow_private_network=True, run_workers=False,
                        rate_limit_per_second=0, rate_limit_per_minute=0, log_level="warning")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUTYLINE_")}
    env.update(DUTYLINE_DATABASE_URL=url, DUTYLINE_SECRET_KEY="bench-secret",
               DUTYLINE_LOG_LEVEL="warning", DUTYLINE_ALLOW_PRIVATE_NETWORK="1",
               DUTYLINE_WORKER_CONCURRENCY=str(args.concurrency),
               # Kept in front: `PYTHONPATH=<other checkout>/src` runs that code's workers.
               PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"),
                                                        str(ROOT)])))
    procs: list[asyncio.subprocess.Process] = []
    opened: dict[str, float] = {}
    load_start = os.getloadavg()
    async with _app(settings) as client:
        channel = await _call(client, key, "/channel/create", {"channel_name": "timing"})
        layer = {"target": {"webhooks": [{"type": "custom",
                                          "settings": {"url": receiver, "secret": "s"}}]},
                 "max_times": MAX_TIMES, "notify_step": STEP_S / 60,
                 "escalate_window": WINDOW_S // 60}
        await _call(client, key, "/channel/escalate/rule/create", {
            "channel_id": channel["channel_id"], "template_id": "6321aad26c12104586a88916",
            "rule_name": "timing", "layers": [layer] * LAYERS})
        cpu = CpuAccount(_process_group).__enter__()  # ended after the wait, below
        ingest: aiohttp.ClientSession | None = None
        try:
            for _ in range(args.workers):
                procs.append(await asyncio.create_subprocess_exec(
                    venv_bin("dutyline"), "worker", cwd=ROOT, env=env,
                    stdin=asyncio.subprocess.DEVNULL))
            # The workers are up once a warm-up incident (a channel of its own, one layer,
            # no repeats) has had its page: `dutyline worker` takes seconds to start here.
            warm = await _call(client, key, "/channel/create", {"channel_name": "warm-up"})
            await _call(client, key, "/channel/escalate/rule/create", {
                "channel_id": warm["channel_id"], "template_id": "6321aad26c12104586a88916",
                "rule_name": "warm-up", "layers": [{**layer, "max_times": 0}]})
            await _call(client, key, "/incident/create", {
                "title": "warm-up", "incident_severity": "Critical",
                "channel_id": warm["channel_id"]})
            waited = time.time()
            for _ in range(600):
                if await asyncio.to_thread(Path(log_path).read_text):
                    break
                await asyncio.sleep(0.2)
            print(f"workers up: warm-up page after {time.time() - waited:.1f} s",
                  file=sys.stderr, flush=True)
            integration = await _call(client, key, "/integration/create", {
                "channel_id": channel["channel_id"], "integration_name": "timing"})
            push_params = {"integration_key": integration["integration_key"]}
            by_alert: dict[str, float] = {}
            # Alerts come in as in production: over HTTP, to a `dutyline serve` of their own
            # (job loops off), from a light client here; `--open-via in-process` sends them
            # through this process's app instead (httpx's ASGI transport: costly).
            if args.open_via == "serve":
                port = free_port()
                procs.append(await asyncio.create_subprocess_exec(
                    venv_bin("dutyline"), "serve", "--host", "127.0.0.1", "--port", str(port),
                    cwd=ROOT, env={**env, "DUTYLINE_RUN_WORKERS": "0",
                                   "DUTYLINE_RATE_LIMIT_PER_SECOND": "0",
                                   "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0"},
                    stdin=asyncio.subprocess.DEVNULL))
                ingest = aiohttp.ClientSession(f"http://127.0.0.1:{port}")
                await _wait_healthy(ingest)
            start = time.time()
            behind: list[float] = []
            # At most --open-concurrency opens in flight: an open that cannot keep the pace
            # waits here, and the pacing shortfall is printed.
            lanes = asyncio.Semaphore(args.open_concurrency)

            async def post(path: str, body: dict[str, Any],
                           params: dict[str, str] | None = None) -> Any:
                if ingest is None:
                    reply = await client.post(path, params=params or {"app_key": key},
                                              json=body)
                    return reply.json()
                async with ingest.post(path, params=params or {"app_key": key},
                                       json=body) as answer:
                    return await answer.json()

            async def open_one(i: int) -> None:
                due = start + i * args.spread / args.incidents
                await asyncio.sleep(max(0.0, due - time.time()))
                async with lanes:
                    behind.append(time.time() - due)
                    if args.open_by == "create":
                        reply = await post("/incident/create", {
                            "title": f"timing incident {i}", "incident_severity": "Critical",
                            "channel_id": channel["channel_id"]})
                        if "data" not in reply:
                            raise RuntimeError(f"create: {reply}")
                        opened[reply["data"]["incident_id"]] = time.time()
                        return
                    reply = await post(
                        "/event/push/alert/standard",
                        {"title_rule": f"timing incident {i}", "event_status": "Critical",
                         "alert_key": f"timing-{i}", "labels": {"n": str(i)}}, push_params)
                    if "data" not in reply:
                        raise RuntimeError(f"push: {reply}")
                by_alert[f"timing-{i}"] = time.time()

            await asyncio.gather(*(open_one(i) for i in range(args.incidents)))
            open_s = time.time() - start
            print(f"opened {args.incidents} in {open_s:.1f} s (pacing behind p99 "
                  f"{_pct(behind, .99):.2f} s)", file=sys.stderr, flush=True)
            expected = len(_offsets()) * args.incidents
            last_open = max([*opened.values(), *by_alert.values()])
            deadline = last_open + (LAYERS - 1) * WINDOW_S + MAX_TIMES * STEP_S + 30
            while time.time() < deadline:
                text = await asyncio.to_thread(Path(log_path).read_text)
                if text.count("\n") >= expected + 1:
                    break
                await asyncio.sleep(2)
            await asyncio.sleep(5)  # late duplicates, if any
        finally:
            cpu.__exit__()
            if ingest is not None:
                await ingest.close()
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
            for proc in procs:
                await proc.wait()
        async with client.runtime.db.transaction(write=False) as conn:  # type: ignore[attr-defined]
            for alert_key, incident_id in (await conn.execute(
                    select(alert.c.alert_key, alert.c.incident_id).where(
                        alert.c.alert_key.in_(list(by_alert))))).all():
                opened[incident_id] = by_alert[alert_key]
            rows = (await conn.execute(select(
                notify_delivery.c.delivery_id, notify_delivery.c.incident_id,
                notify_delivery.c.layer_idx, notify_delivery.c.status,
                notify_delivery.c.attempts))).all()
    return {"opened": opened, "rows": rows, "open_s": open_s,
            "load": (load_start, os.getloadavg()), "cpu": cpu}


async def _wait_healthy(session: aiohttp.ClientSession) -> None:
    for _ in range(300):
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get("/healthz") as reply:
                if reply.status == 200:
                    return
        await asyncio.sleep(0.2)
    raise RuntimeError("dutyline serve did not come up")


def _process_group(pid: int, cmdline: str) -> str | None:
    """Where a process's CPU time goes in the report (None: not this run's)."""
    if pid == os.getpid():
        return "opener (bench)"
    if "dutyline worker" in cmdline:
        return "workers"
    if "dutyline serve" in cmdline:
        return "serve (ingest)"
    if "escalation_timing receive" in cmdline:
        return "receiver"
    if cmdline.startswith("postgres") or "/bin/postgres" in cmdline:
        return "postgres"
    return None


def report(name: str, args: argparse.Namespace, got: dict[str, Any], log_path: str) -> None:
    arrivals: list[tuple[float, str]] = []
    with open(log_path) as f:
        for line in f:
            stamp, dkey = line.split()
            arrivals.append((float(stamp), dkey))
    by_delivery = {r.delivery_id: r for r in got["rows"] if r.incident_id in got["opened"]}
    warm_up = {r.delivery_id for r in got["rows"]} - set(by_delivery)
    arrivals = [(when, dkey) for when, dkey in arrivals if dkey not in warm_up]
    posts = Counter(dkey for _, dkey in arrivals)
    first: dict[str, float] = {}
    for when, dkey in arrivals:
        first.setdefault(dkey, when)
    per_slot: dict[tuple[str, int], list[float]] = defaultdict(list)
    unknown = 0
    for key, t in first.items():
        row = by_delivery.get(key)
        if row is None:
            unknown += 1
            continue
        per_slot[(row.incident_id, int(row.layer_idx))].append(t)
    slots = _offsets()
    late: list[float] = []
    by_offset: dict[int, list[float]] = defaultdict(list)
    missing = extra = 0
    chain: list[tuple[int, float]] = []
    gaps: list[float] = []
    for incident_id, t0 in got["opened"].items():
        for layer in range(LAYERS):
            times = sorted(per_slot.get((incident_id, layer), []))
            ks = [k for (lay, k) in slots if lay == layer]
            missing += max(0, len(ks) - len(times))
            extra += max(0, len(times) - len(ks))
            for k, t in zip(ks, times, strict=False):
                offset = layer * WINDOW_S + k * STEP_S
                late.append(t - (t0 + offset))
                by_offset[offset].append(t - (t0 + offset))
                chain.append((offset, t))
        chain.sort()
        # Between consecutive pages of an incident: how far each lands from the previous one
        # plus its interval (the engine plans every page from the layer's start, so a late
        # page should not carry its lateness into the next).
        for (o0, t0_), (o1, t1) in itertools.pairwise(chain):
            gaps.append(t1 - t0_ - (o1 - o0))
        chain.clear()
    dupes = sum(1 for c in posts.values() if c > 1)
    statuses = Counter(r.status for r in by_delivery.values())
    l0, l1 = got["load"]
    print(f"{name}: {len(got['opened'])} of {args.incidents} incidents opened (by "
          f"{args.open_by}) over {got['open_s']:.1f} s, "
          f"{args.workers} worker processes x {args.concurrency}; load average "
          f"{l0[0]:.1f} at start, {l1[0]:.1f} at end")
    print(f"  expected pages {len(slots) * args.incidents}, posts received {len(arrivals)}, "
          f"distinct keys {len(posts)}, duplicates {dupes}, missing {missing}, "
          f"extra {extra}, unknown keys {unknown}; delivery rows {len(by_delivery)} "
          f"{dict(statuses)}")
    print("  " + got["cpu"].report(per=len(slots) * args.incidents, unit="page"))
    if late:
        print(f"  lateness all pages: p50 {_pct(late, .5):.2f} s, p99 {_pct(late, .99):.2f} s, "
              f"max {max(late):.2f} s, min {min(late):.2f} s, within 1 s: "
              f"{sum(x <= 1 for x in late) / len(late):.1%}")
    if gaps:
        print(f"  lateness against the previous page + its interval (the engine's own due "
              f"time): p50 {_pct(gaps, .5):.2f} s, p99 {_pct(gaps, .99):.2f} s, "
              f"max {max(gaps):.2f} s")
    for offset in sorted(by_offset):
        xs = by_offset[offset]
        print(f"  +{offset:3d} s: {len(xs):6d} pages, p50 {_pct(xs, .5):6.2f} s, "
              f"p99 {_pct(xs, .99):6.2f} s, max {max(xs):6.2f} s")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "receive":
        _receive_main(int(sys.argv[2]), sys.argv[3])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--incidents", type=int, default=600)
    p.add_argument("--spread", type=float, default=60.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--pg-server", choices=("own", "shared"), default="own",
                   help="own: a throwaway cluster with stock settings (bench/pg_cluster.py); "
                        "shared: the server at DUTYLINE_BENCH_PG")
    p.add_argument("--open-by", choices=("push", "create"), default="push")
    p.add_argument("--open-via", choices=("serve", "in-process"), default="serve")
    p.add_argument("--open-concurrency", type=int, default=16)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="dutyline-bench-esct-")
    log_path = f"{tmp}/arrivals.txt"
    open(log_path, "w").close()
    port = free_port()
    recv = subprocess.Popen([sys.executable, "-m", "bench.escalation_timing", "receive",
                             str(port), log_path], cwd=ROOT)
    receiver = f"http://127.0.0.1:{port}/hook"
    pg_name = ""
    with contextlib.ExitStack() as stack:
        # Its own cluster with PostgreSQL's stock settings (autovacuum on), unless --pg-server
        # shared: the server at DUTYLINE_BENCH_PG (this machine's runs with autovacuum off).
        pg_base = (stack.enter_context(own_cluster())
                   if args.postgres and args.pg_server == "own" else PG_BASE)
        try:
            wait_for_receiver(receiver)
            if args.postgres:
                pg_name = f"dutyline_bench_esct_{os.getpid()}_{secrets.token_hex(3)}"
                asyncio.run(pg_exec(f'CREATE DATABASE "{pg_name}"', pg_base))
                url, name = f"{pg_base}/{pg_name}", f"PostgreSQL ({args.pg_server})"
            else:
                url, name = f"sqlite+aiosqlite:///{tmp}/timing.db", "SQLite"
            got = asyncio.run(run(url, args, receiver, log_path))
            report(name, args, got, log_path)
        finally:
            stop_process(recv)
            shutil.rmtree(tmp, ignore_errors=True)
            if pg_name:
                with contextlib.suppress(Exception):
                    asyncio.run(pg_exec(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)',
                                         pg_base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
