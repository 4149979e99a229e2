"""Download of a mapping schema's rows as CSV (`/enrichment/mapping/data/download`): rows/s and
the growth of the server process's resident memory, against writing the same rows with
Python's `csv` module to a file (the goals: peak RSS grows by under 50 MB whatever the row
count; throughput at least half of the csv module's).

    python -m bench.enrichment_download [--rows 1000000] [--small 100000] [--postgres]

One `dutyline serve` process; two schemas (source `host`, results `owner`, `team`, `service`)
loaded by CSV upload with `--small` and `--rows` rows. Each download streams to a file while a
thread samples the server's VmRSS every 5 ms; growth = peak during the download - RSS just
before it. The baseline writes the same rows (already in memory as tuples) with csv.writer.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.harness import Bench, Server, post, venv_bin

GOAL_RSS_MB = 50.0
GOAL_RATIO = 0.5
UPLOAD_ROWS = 400_000  # per upload request (the cap is 50 MB and 1,000,000 rows)


def row(i: int) -> tuple[str, str, str, str]:
    return (f"host-{i:08d}.prod.example.com", f"owner-{i % 997}", f"team-{i % 41}",
            f"service-{i % 311}")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def load(server: Server, name: str, n: int) -> str:
    created = post(server.url("/enrichment/mapping/schema/create", "owner"), {
        "schema_name": name, "source_labels": ["host"],
        "result_labels": ["owner", "team", "service"]})
    schema_id: str = created["data"]["schema_id"]
    for start in range(0, n, UPLOAD_ROWS):
        lines = ["host,owner,team,service"] + [
            ",".join(row(i)) for i in range(start, min(n, start + UPLOAD_ROWS))]
        url = (server.url("/enrichment/mapping/data/upload", "owner")
               + f"&schema_id={schema_id}&truncate={'true' if start == 0 else 'false'}")
        request = urllib.request.Request(url, data=("\n".join(lines) + "\n").encode(),
                                         method="POST", headers={"Content-Type": "text/csv"})
        with urllib.request.urlopen(request, timeout=900) as response:
            body = response.read()
            if b'"data"' not in body:
                raise RuntimeError(f"upload failed: {body[:300]!r}")
    return schema_id


def download(server: Server, schema_id: str, out: Path) -> dict[str, Any]:
    pid = server.proc.pid
    before = rss_kb(pid)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_kb(pid))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    request = urllib.request.Request(
        server.url("/enrichment/mapping/data/download", "owner"),
        data=json.dumps({"schema_id": schema_id}).encode(), method="POST",
        headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    size = 0
    with urllib.request.urlopen(request, timeout=900) as response, out.open("wb") as fh:
        while chunk := response.read(1 << 16):
            fh.write(chunk)
            size += len(chunk)
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    with out.open("rb") as fh:
        lines = sum(1 for _ in fh) - 1
    return {"rows": lines, "seconds": elapsed, "bytes": size, "rss_before_mb": before / 1024,
            "rss_growth_mb": (peak[0] - before) / 1024}


def csv_baseline(n: int, out: Path) -> float:
    rows = [row(i) for i in range(n)]
    started = time.perf_counter()
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["host", "owner", "team", "service"])
        writer.writerows(rows)
    return time.perf_counter() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--small", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    p.add_argument("--no-pin", dest="pin", action="store_false")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--wrk-cpus", default="1")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--connections", type=int, default=1)
    args = p.parse_args()
    bench = Bench(args)
    lines: list[str] = []
    try:
        url = bench.database_url("download", args.postgres)
        env = bench.dutyline_env(url)
        key = bench.init_account(env, "bench-download")["app_key"]
        server = bench.start("download", [venv_bin("dutyline"), "serve"], env)
        server.keys = {"owner": key}
        t0 = time.perf_counter()
        small = load(server, "small", args.small)
        big = load(server, "big", args.rows)
        print(f"loaded {args.small + args.rows:,} rows in {time.perf_counter() - t0:.0f}s",
              file=sys.stderr)
        results: list[tuple[str, int, dict[str, Any]]] = []
        for r in range(args.rounds):
            for label, schema_id, n in (("small", small, args.small), ("big", big, args.rows)):
                got = download(server, schema_id, bench.tmp / f"{label}.csv")
                if got["rows"] != n:
                    raise RuntimeError(f"{label}: {got['rows']} rows, expected {n}")
                results.append((label, n, got))
                print(f"round {r + 1} {label}: {n / got['seconds']:,.0f} rows/s, RSS "
                      f"+{got['rss_growth_mb']:.1f} MB", file=sys.stderr)
        baseline = min(csv_baseline(args.rows, bench.tmp / "baseline.csv")
                       for _ in range(args.rounds))
        db = "PostgreSQL" if args.postgres else "SQLite"
        lines += [f"mapping data download ({db}), best of {args.rounds} rounds", "",
                  "| rows | seconds | rows/s | MB | server RSS before MB | RSS growth MB | "
                  "vs csv module |", "|---:|---:|---:|---:|---:|---:|---:|"]
        base_rate = args.rows / baseline
        for label, n in (("small", args.small), ("big", args.rows)):
            best = min((g for lbl, _, g in results if lbl == label),
                       key=lambda g: g["seconds"])
            worst_rss = max(g["rss_growth_mb"] for lbl, _, g in results if lbl == label)
            lines.append(f"| {n:,} | {best['seconds']:.2f} | {n / best['seconds']:,.0f} | "
                         f"{best['bytes'] / 1e6:.1f} | {best['rss_before_mb']:.0f} | "
                         f"{worst_rss:.1f} | {n / best['seconds'] / base_rate:.1%} |")
        lines.append(f"| {args.rows:,} (csv.writer to a file) | {baseline:.2f} | "
                     f"{base_rate:,.0f} | | | | 100% |")
        big_best = min((g for lbl, _, g in results if lbl == "big"), key=lambda g: g["seconds"])
        ratio = args.rows / big_best["seconds"] / base_rate
        rss = max(g["rss_growth_mb"] for _, _, g in results)
        lines += ["", f"goals: RSS growth < {GOAL_RSS_MB:.0f} MB: "
                  + ("met" if rss < GOAL_RSS_MB else f"NOT met ({rss:.1f} MB)")
                  + f"; throughput >= {GOAL_RATIO:.0%} of csv: "
                  + ("met" if ratio >= GOAL_RATIO else f"NOT met ({ratio:.1%})")]
    finally:
        bench.close()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
