"""Admin writes and a page change while one `dutyline serve` process is flooded with views of
a public status page.

    .venv/bin/python -m bench.public_flood [--postgres] [--seconds 8] [--connections 64]
                                           [--writes 20] [--no-priority]

One server process on a fresh SQLite file (or PostgreSQL database). First, idle: --writes
`/team/upsert` calls one after another (their latency with nothing else running). Then the
flood: wrk (or bench/loadgen.py) keeps --connections keep-alive connections asking for the
page for --seconds; after one second of it the same writes run again, and every fourth is
followed by a rename of a component of the page, timed until the flooded page shows it.
Printed: the latency of the writes idle and under the flood (p50, p99, max), how long the
change took to show (max), and the views/s the flood got. `--no-priority` runs the server
with the public pages not yielding to urgent requests (api/priority.py): the figures the
yielding is there for."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

from bench.harness import (
    BENCH_DIR,
    WRK_DIR,
    free_port,
    post,
    scratch_database,
    stop_process,
    venv_bin,
)

_NO_PRIORITY = """
from dutyline.api import priority
priority.Priority.busy = property(lambda self: False)
from dutyline.cli import main
main()
"""


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return str(resp.read().decode())


def _write(url: str, body: dict[str, Any]) -> float:
    began = time.perf_counter()
    answer = post(url, body)
    assert "data" in answer, answer
    return time.perf_counter() - began


def _summary(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
            f"max {ordered[-1] * 1000:.0f} ms")


def _load(url: str, seconds: int, connections: int) -> subprocess.Popen[str]:
    if shutil.which("wrk"):
        cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s",
               "-s", str(WRK_DIR / "get.lua"), url]
    else:
        cmd = [sys.executable, "-m", "bench.loadgen", url, "get.lua", str(seconds),
               str(connections)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(BENCH_DIR.parent)})


def run(args: argparse.Namespace, database_url: str) -> dict[str, Any]:
    env = {**os.environ, "DUTYLINE_DATABASE_URL": database_url, "DUTYLINE_RUN_WORKERS": "0",
           "DUTYLINE_LOG_LEVEL": "warning", "DUTYLINE_RATE_LIMIT_PER_SECOND": "0",
           "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0", "DUTYLINE_SECRET_KEY": "bench-secret-key"}
    env.pop("DUTYLINE_REDIS_URL", None)
    init = subprocess.run([venv_bin("dutyline"), "init"], env=env, capture_output=True,
                          text=True, check=True, timeout=120)
    key = json.loads(init.stdout.strip().splitlines()[-1])["app_key"]
    port = free_port()
    serve = ([sys.executable, "-c", _NO_PRIORITY] if args.no_priority
             else [venv_bin("dutyline")])
    server = subprocess.Popen([*serve, "serve", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(f"{base}/healthz")
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("dutyline serve did not start") from None
                time.sleep(0.2)

        def api(path: str) -> str:
            return f"{base}{path}?app_key={key}"

        page = post(api("/status-page/create"), {"page_name": "Acme", "url_name": "acme"})
        page_id = page["data"]["page_id"]
        comp = post(api("/status-page/component/upsert"),
                    {"page_id": page_id, "name": "Gateway-0"})["data"]["component_id"]
        page_url = f"{base}/status/acme"
        _get(page_url)
        idle = [_write(api("/team/upsert"), {"team_name": f"idle-{n}"})
                for n in range(args.writes)]
        load = _load(page_url, args.seconds, args.connections)
        time.sleep(1.0)
        flooded: list[float] = []
        shown: list[float] = []
        for n in range(1, args.writes + 1):
            flooded.append(_write(api("/team/upsert"), {"team_name": f"flood-{n}"}))
            if n % 4 == 0:
                began = time.perf_counter()
                post(api("/status-page/component/upsert"), {
                    "page_id": page_id, "component_id": comp, "name": f"Gateway-{n}"})
                while f"Gateway-{n}" not in _get(page_url):
                    pass
                shown.append(time.perf_counter() - began)
        during = load.poll() is None
        out, err = load.communicate(timeout=args.seconds + 60)
        line = next((ln for ln in out.splitlines() if ln.startswith("WRKJSON ")), None)
        if line is None:
            raise RuntimeError(f"the load failed:\n{out}\n{err}")
        views = json.loads(line[len("WRKJSON "):])
    finally:
        stop_process(server)  # type: ignore[arg-type]
    return {"idle": idle, "flooded": flooded, "shown": shown, "during": during,
            "views_per_s": views["requests"] / (views["duration_us"] / 1e6),
            "view_errors": views.get("status_errors", 0) + views.get("read_errors", 0)}


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.public_flood", description=__doc__)
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--seconds", type=int, default=8)
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--writes", type=int, default=20)
    p.add_argument("--no-priority", action="store_true")
    args = p.parse_args()
    with scratch_database("public-flood", args.postgres) as url:
        result = run(args, url)
    db = "PostgreSQL" if args.postgres else "SQLite"
    mode = "public pages not yielding" if args.no_priority else "public pages yielding"
    print(f"{db}, {args.connections} connections flooding the page, {mode}")
    print(f"  writes idle:         {_summary(result['idle'])}")
    print(f"  writes under flood:  {_summary(result['flooded'])}"
          + ("" if result["during"] else "  (the flood ended before the last write)"))
    print(f"  change shown within: max {max(result['shown']) * 1000:.0f} ms")
    print(f"  flood: {result['views_per_s']:.0f} views/s, {result['view_errors']} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
