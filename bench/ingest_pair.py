"""The shape shared by the ingestion benchmarks that compare a feature against plain
ingestion in the same run (bench/ingest_rules.py, bench/enrichment.py): two servers, each on
its own database prepared as bench/ingest.py does, the feature's set-up on each, wrk's
ingest mix alternating plain and the feature per round, medians and the goal's ratio."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from typing import Any

from bench.harness import Bench, Server
from bench.ingest import prepare

# (name, server, push URL) of one database just prepared: the feature's set-up for it.
SetUp = Callable[[str, Server, str], None]


def run_pair(description: str, *, feature: str, set_up: SetUp, title: str, holds: str,
             goal_ratio: float) -> int:
    """Run `plain` against `feature`; `title` and `holds` head the report."""
    p = argparse.ArgumentParser(description=description)
    add_wrk_args(p, rounds=3)
    args = p.parse_args()
    bench = Bench(args)
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        prepared: list[tuple[str, Server, str]] = []
        for name in ("plain", feature):
            url = bench.database_url(name, args.postgres)
            server, push_url = prepare(bench, name, url)
            set_up(name, server, push_url)
            prepared.append((name, server, push_url))
        results = alternate(bench, args, prepared)
    finally:
        bench.close()
    print(report(args, results, feature=feature, title=title, holds=holds,
                 goal_ratio=goal_ratio))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


def add_wrk_args(p: argparse.ArgumentParser, *, rounds: int) -> None:
    """The options every paired ingestion benchmark takes (wrk, rounds, CPU pinning)."""
    p.add_argument("--seconds", type=int, default=10, help="per measurement")
    p.add_argument("--rounds", type=int, default=rounds)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    p.add_argument("--no-pin", dest="pin", action="store_false")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--wrk-cpus", default="1")
    p.add_argument("--json-out", default="")


def alternate(bench: Bench, args: argparse.Namespace,
              prepared: list[tuple[str, Server, str]]) -> dict[str, list[dict[str, Any]]]:
    """Warm each server up, then measure them in turn, round after round, so the machine's
    drift over the run falls on all of them alike; wrk's figures per name."""
    results: dict[str, list[dict[str, Any]]] = {}
    for name, _server, url in prepared:
        bench.wrk(url, "ingest.lua", args.warmup, tag=f"warm{name}")
    for r in range(args.rounds):
        for name, server, url in prepared:
            got = bench.wrk(url, "ingest.lua", args.seconds, tag=f"r{r}{name}",
                            pid=server.proc.pid)
            results.setdefault(name, []).append(got)
            print(f"round {r + 1} {name}: {got['rps']:.0f} events/s, "
                  f"p99 {got['p99_us'] / 1000:.1f} ms, errors "
                  f"{got['status_errors'] + got['socket_errors']}", file=sys.stderr)
    return results


def report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]], *,
           feature: str, title: str, holds: str, goal_ratio: float) -> str:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name])

    db = "PostgreSQL" if args.postgres else "SQLite"
    lines = [
        f"{title} ({db}), {args.rounds} rounds x {args.seconds}s, "
        f"wrk {args.threads} threads {args.connections} connections, medians; both databases "
        f"hold {holds}",
        "",
        "| target | events/s | p50 ms | p99 ms | server CPU µs/req | non-2xx | vs plain |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    plain = med("plain", "rps")
    for name in results:
        lines.append(
            f"| {name} | {med(name, 'rps'):,.0f} | {med(name, 'p50_us') / 1000:.1f} | "
            f"{med(name, 'p99_us') / 1000:.1f} | {med(name, 'cpu_us_per_req'):.0f} | "
            f"{sum(r['status_errors'] for r in results[name])} | "
            f"{med(name, 'rps') / plain:.1%} |"
        )
    ratio = med(feature, "rps") / plain
    lines += ["", f"goal ({feature} >= {goal_ratio:.0%} of plain): "
              + ("met" if ratio >= goal_ratio else f"NOT met ({ratio:.1%})")]
    return "\n".join(lines)
