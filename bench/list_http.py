"""The incident list over HTTP at 100,000 incidents: `POST /incident/list` and the console's
`GET /console/incidents` served by `dutyline serve`, each against a bare ASGI app that runs
the same SQL (bench/list_bare.py), alternating in the same run.

    python -m bench.list_http [--postgres] [--incidents 100000] [--seconds 5] [--rounds 3]
                              [--profile] [--keep-profile DIR]

The incidents are bulk-inserted as bench/incident_list.py inserts them (one account, 10
channels, spread over the 60 days before now; the page's 7-day window holds about 10,500 of
the account's incidents). Then, in-process, the app answers each request a few times while
SQLAlchemy's `before_cursor_execute` records what it sends; the statements of the last
(warm) request of each route, with their parameters, are what the bare app replays on every
request: the API call's (the window's count, the page, the names and sources of its 25
rows) and the console page's (its session, the person's roles, the list without its total,
the counts by progress, the live cursor, the filter options). The app key resolves from the
process's auth cache after the first call, as in dutyline, so neither side looks it up per
request.

Load is wrk (2 threads, 32 connections; `apt-get install -y wrk`), the server pinned to CPU 0
and wrk to CPU 1; per round, the bare app then dutyline for each route. The table gives
medians over the rounds: req/s, the ratio to the bare run just before it, server CPU µs per
request (`/proc/<pid>/stat` around each run: steadier than req/s on a shared machine) and its
ratio, and wrk's p50/p99 at 32 connections. PostgreSQL's own CPU is in its server processes,
not in either figure. --profile then records dutyline under each route with py-spy (200 Hz,
the thread holding the GIL) and prints where the time goes."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import Bench, Server, venv_bin

WINDOW_S = 7 * 86_400
PAGE_SIZE = 25
SECRET = "bench-list-http"
API, PAGE = "POST /incident/list", "GET /console/incidents"


async def record(url: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """The console session, and the statements (with parameters) of a warm request of each
    route, run in-process."""
    import httpx
    from sqlalchemy import event

    from bench.console_list import _session
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.web import security

    settings = Settings(database_url=url, secret_key=SECRET, rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    runtime = app.state.runtime
    seen: list[tuple[str, list[Any]]] = []

    def on_statement(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "change_signal" not in statement:  # the signal watcher's poll, not the request's
            seen.append((statement, list(parameters or ())))

    engines = [runtime.db.engine.sync_engine]
    if getattr(runtime.db, "_sync", None) is not None:
        engines.append(runtime.db._sync.engine)
    out: dict[str, Any] = {"routes": {}}
    async with app.router.lifespan_context(app):
        await asyncio.wait_for(runtime.signals.until_live(), 10)
        token, _ = await _session(runtime)
        out["cookie"] = f"{security.SESSION_COOKIE}={token}"
        for engine in engines:
            event.listen(engine, "before_cursor_execute", on_statement)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            calls = {
                API: lambda: client.post("/incident/list", params={"app_key": key}, json=body),
                PAGE: lambda: client.get("/console/incidents",
                                         headers={"Cookie": out["cookie"]}),
            }
            for route, call in calls.items():
                for _ in range(4):  # the last one is warm: keys and statements cached
                    seen.clear()
                    r = await call()
                    assert r.status_code == 200, (route, r.status_code, r.text[:300])
                out["routes"][route] = list(seen)
    return out


def settle(pid: int, timeout: float = 30.0) -> None:
    """Until the server has finished the requests still in flight when wrk stopped (its CPU
    time stops moving), so they are not run during the next measurement."""
    from bench.harness import process_cpu_seconds

    deadline, last = time.monotonic() + timeout, process_cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = process_cpu_seconds(pid)
        if now - last < 0.01:
            return
        last = now


def _check(server: Server, route: str, body: str, cookie: str) -> None:
    """Both servers answer the route with a full page."""
    import urllib.request

    method, path = route.split(" ", 1)
    url = server.url(path, "owner" if method == "POST" else None)
    req = urllib.request.Request(url, data=body.encode() if method == "POST" else None,
                                 method=method, headers={"Content-Type": "application/json",
                                                         "Cookie": cookie})
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
    if server.name == "dutyline":
        rows = (len(json.loads(text)["data"]["items"]) if method == "POST"
                else text.count('<li id="incident-'))
        if rows != PAGE_SIZE:
            raise RuntimeError(f"{route}: {rows} rows, not {PAGE_SIZE}")


def profile(bench: Bench, server: Server, url: str, script: str, body: str, seconds: int,
            keep: Path | None, label: str) -> str:
    import shutil
    import subprocess

    from bench.http_bench import summarise_profile

    py_spy = venv_bin("py-spy")
    if shutil.which(py_spy) is None and not Path(py_spy).exists():
        return "py-spy is not installed (pip install py-spy into the venv); no profile taken"
    raw = bench.tmp / f"profile-{label}.txt"
    rec = subprocess.Popen(
        [*bench.wrk_prefix, py_spy, "record", "--pid", str(server.proc.pid), "--duration",
         str(seconds), "--rate", "200", "--format", "raw", "--threads", "--gil",
         "--nonblocking", "--output", str(raw)], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT)
    time.sleep(1.0)
    load = bench.wrk(url, script, seconds, body=body)
    out, _ = rec.communicate(timeout=seconds + 60)
    settle(server.proc.pid)
    if rec.returncode != 0 or not raw.exists():
        return f"py-spy failed ({rec.returncode}): {out.decode(errors='replace')[-2000:]}"
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(raw, keep / raw.name)
    return (f"Profile of dutyline under {label}: py-spy 200 Hz, --gil, {seconds}s, "
            f"{load['rps']:.0f} req/s while sampled, "
            f"{load['status_errors'] + load['socket_errors']} errors\n\n"
            + summarise_profile(raw, top=12))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.list_http", description=__doc__)
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--incidents", type=int, default=100_000)
    p.add_argument("--seconds", type=int, default=5, help="per measurement")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--no-pin", dest="pin", action="store_false")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--wrk-cpus", default="1")
    p.add_argument("--profile", action="store_true", help="py-spy dutyline under each route")
    p.add_argument("--profile-seconds", type=int, default=8)
    p.add_argument("--keep-profile", type=Path, default=None,
                   help="a directory to copy py-spy's raw collapsed stacks to")
    args = p.parse_args(argv)
    from bench.incident_list import seed

    bench = Bench(args)
    backend = "PostgreSQL" if args.postgres else "SQLite"
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    profiles: list[str] = []
    try:
        url = bench.database_url("list-http", args.postgres)
        started = time.perf_counter()
        now = int(time.time())
        key, _ = asyncio.run(seed(url, args.incidents, now=now))
        seeded = time.perf_counter() - started
        body = {"start_time": now + 1 - WINDOW_S, "end_time": now + 1, "limit": PAGE_SIZE}
        recorded = asyncio.run(record(url, key, body))
        spec = bench.tmp / "statements.json"
        spec.write_text(json.dumps({"database_url": url, "routes": recorded["routes"]}))
        pythonpath = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        bare = bench.start("bare-sql", [sys.executable, "-m", "bench.list_bare",
                                        "--statements", str(spec)],
                           {**os.environ, **pythonpath})
        env = {**bench.dutyline_env(url), "DUTYLINE_SECRET_KEY": SECRET}
        duty = bench.start("dutyline", [venv_bin("dutyline"), "serve"], env)
        for server in (bare, duty):
            server.keys = {"owner": key}
        os.environ["WRK_COOKIE"] = recorded["cookie"]  # bench/wrk/get.lua sends it
        wire = json.dumps(body)
        targets = {API: ("post.lua", "/incident/list", "owner"),
                   PAGE: ("get.lua", "/console/incidents", None)}
        for route in targets:
            for server in (bare, duty):
                _check(server, route, wire, recorded["cookie"])
        for script, path, role in targets.values():
            for server in (bare, duty):
                bench.wrk(server.url(path, role), script, args.warmup, body=wire)
                settle(server.proc.pid)
        for r in range(args.rounds):
            for route, (script, path, role) in targets.items():
                runs = results.setdefault(route, {"bare": [], "dutyline": []})
                for name, server in (("bare", bare), ("dutyline", duty)):
                    runs[name].append(bench.wrk(server.url(path, role), script, args.seconds,
                                                body=wire, pid=server.proc.pid))
                    settle(server.proc.pid)
                print(f"round {r + 1} {route}: bare {runs['bare'][-1]['rps']:.0f} req/s, "
                      f"dutyline {runs['dutyline'][-1]['rps']:.0f} req/s", file=sys.stderr)
        if args.profile:
            for route, (script, path, role) in targets.items():
                profiles.append(profile(bench, duty, duty.url(path, role), script, wire,
                                        args.profile_seconds, args.keep_profile,
                                        route.split(" ", 1)[1].strip("/").replace("/", "-")))
    finally:
        bench.close()
        os.environ.pop("WRK_COOKIE", None)
    print(report(args, backend, seeded, recorded["routes"], results))
    for text in profiles:
        print("\n" + text)
    return 0


def report(args: argparse.Namespace, backend: str, seeded: float,
           routes: dict[str, list[Any]], results: dict[str, dict[str, list[dict[str, Any]]]]
           ) -> str:
    def med(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r.get(key, 0) for r in runs)

    lines = [f"{backend}: {args.incidents:,} incidents (seeded in {seeded:.0f} s), 7-day window "
             f"(~10,500 of them), {PAGE_SIZE} rows; {args.rounds} rounds x {args.seconds}s, "
             f"wrk {args.threads} threads {args.connections} connections; medians over rounds",
             "", "| route | statements | bare req/s | dutyline req/s | **ratio** | bare CPU µs/req"
             " | dutyline CPU µs/req | CPU ratio | bare p50 / p99 ms | dutyline p50 / p99 ms "
             "| errors |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for route, runs in results.items():
        bare, duty = runs["bare"], runs["dutyline"]
        ratio = statistics.median(d["rps"] / b["rps"] for b, d in zip(bare, duty, strict=True))
        cpu_b, cpu_d = med(bare, "cpu_us_per_req"), med(duty, "cpu_us_per_req")
        errors = sum(x["status_errors"] + x["socket_errors"] for x in [*bare, *duty])
        lines.append(
            f"| `{route}` | {len(routes[route])} | {med(bare, 'rps'):,.0f} | "
            f"{med(duty, 'rps'):,.0f} | **{ratio:.2f}** | {cpu_b:,.0f} | {cpu_d:,.0f} | "
            f"{cpu_b / (cpu_d or 1):.2f} | {med(bare, 'p50_us') / 1000:.1f} / "
            f"{med(bare, 'p99_us') / 1000:.1f} | {med(duty, 'p50_us') / 1000:.1f} / "
            f"{med(duty, 'p99_us') / 1000:.1f} | {errors} |")
        per_round = ", ".join(f"{d['rps'] / b['rps']:.2f}" for b, d in zip(bare, duty,
                                                                            strict=True))
        lines.append(f"|  | ratio per round: {per_round} | | | | | | | | | |")
    for route, statements in routes.items():
        lines += ["", f"{route} statements ({len(statements)}):"]
        lines += [f"  {' '.join(sql.split())[:120]}" for sql, _ in statements]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
