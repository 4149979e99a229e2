"""Alert ingestion with a channel's noise rules against the same ingestion without rules, in
the same run (issue 11's goal: at most 15 % fewer events/s).

    python -m bench.ingest_rules [--seconds 10] [--rounds 3] [--connections 32] [--postgres]

Two servers, each on its own database prepared the same way as bench/ingest.py (a channel
grouping by `labels.svc`, 600 seeded keys, wrk's 80/15/5 update/new/recover mix), plus on
BOTH databases 10,000 active "source" alerts (`kind=node`, `rack=rack-<j % 100>`,
`host=src-<j>`). The `rules` database's channel also has:

- 100 enabled inhibit rules: rule i has source_filters `kind IN [node] AND rack IN [rack-i]`,
  target_filters `svc IN [svc-<i % 20>] AND env IN [prod]`, equals `[labels.host]`; so every
  new alert of the benchmark matches the target filters of 5 rules and looks up its sources
  5 times (by index: it finds none, the benchmark's hosts are not the sources' hosts), and
  each of the 10,000 sources has one row in the source index;
- 20 enabled silence rules in effect all day (`00:00`-`24:00`): rule k filters
  `svc IN [svc-k] AND env IN [staging]`, so every new alert is a candidate of one rule and
  fails its filter (the benchmark's alerts are `env=prod`).

Measurements alternate plain, rules per round; medians shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.http_bench import Bench, Server, post
from bench.ingest import prepare

SOURCES = 10_000
INHIBIT_RULES = 100
SILENCE_RULES = 20
GOAL_RATIO = 0.85


def cond(key: str, *vals: str) -> dict[str, Any]:
    return {"key": key, "oper": "IN", "vals": list(vals)}


def seed_sources(push_url: str) -> None:
    def one(j: int) -> None:
        reply = post(push_url, {
            "title_rule": "node down", "event_status": "Critical", "alert_key": f"src-{j}",
            "labels": {"kind": "node", "rack": f"rack-{j % INHIBIT_RULES}", "host": f"src-{j}",
                       "svc": "infra"},
        })
        if "data" not in reply:
            raise RuntimeError(f"seeding sources failed: {reply}")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(SOURCES)))


def add_rules(server: Server) -> None:
    channels = post(server.url("/channel/list", "owner"), {"limit": 10})
    channel_id = channels["data"]["items"][0]["channel_id"]
    for i in range(INHIBIT_RULES):
        reply = post(server.url("/channel/inhibit/rule/create", "owner"), {
            "channel_id": channel_id, "rule_name": f"rack {i} down",
            "source_filters": [[cond("labels.kind", "node"), cond("labels.rack", f"rack-{i}")]],
            "target_filters": [[cond("labels.svc", f"svc-{i % 20}"),
                                cond("labels.env", "prod")]],
            "equals": ["labels.host"],
        })
        if "data" not in reply:
            raise RuntimeError(f"inhibit rule failed: {reply}")
    for k in range(SILENCE_RULES):
        reply = post(server.url("/channel/silence/rule/create", "owner"), {
            "channel_id": channel_id, "rule_name": f"staging svc-{k}",
            "time_filters": [{"start": "00:00", "end": "24:00", "repeat": []}],
            "filters": [[cond("labels.svc", f"svc-{k}"), cond("labels.env", "staging")]],
        })
        if "data" not in reply:
            raise RuntimeError(f"silence rule failed: {reply}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=int, default=10, help="per measurement")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    p.add_argument("--no-pin", dest="pin", action="store_false")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--wrk-cpus", default="1")
    p.add_argument("--json-out", default="")
    args = p.parse_args()
    bench = Bench(args)
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        prepared: list[tuple[str, Server, str]] = []
        for name in ("plain", "rules"):
            url = (bench.create_pg_database() if args.postgres
                   else f"sqlite+aiosqlite:///{bench.tmp}/{name}.db")
            server, push_url = prepare(bench, name, url)
            # Rules first, so the sources are indexed as they arrive (a rule written later
            # indexes the channel's existing alerts the same way, in its own transaction).
            if name == "rules":
                add_rules(server)
            seed_sources(push_url)
            prepared.append((name, server, push_url))
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
    finally:
        bench.close()
    print(report(args, results))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


def report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]]) -> str:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name])

    db = "PostgreSQL" if args.postgres else "SQLite"
    lines = [
        f"alert ingestion with noise rules ({db}), {args.rounds} rounds x {args.seconds}s, "
        f"wrk {args.threads} threads {args.connections} connections, medians; both databases "
        f"hold {SOURCES:,} active source alerts",
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
    ratio = med("rules", "rps") / plain
    lines += ["", f"goal (rules >= {GOAL_RATIO:.0%} of plain): "
              + ("met" if ratio >= GOAL_RATIO else f"NOT met ({ratio:.1%})")]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
