"""Alert ingestion of this checkout against another checkout's (a baseline commit), in the
same run: did a change slow the push path? For instance, mapping APIs must not slow a channel
that has none; this measures that.

    git archive main | tar -x -C /tmp/dutyline-base     # any other checkout's tree
    python -m bench.ingest_baseline --baseline-src /tmp/dutyline-base/src \\
        [--seconds 10] [--rounds 5] [--connections 32] [--postgres]

Both servers run the workload of bench/ingest.py (a channel grouping by `labels.svc`, 600
seeded keys, wrk's 80/15/5 update/new/recover mix) on their own database, with the same
interpreter and packages; the baseline imports its code from `--baseline-src` (PYTHONPATH
comes before the editable install's path). With `--enriched`, both integrations also get one
schema mapping rule (a channel with enrichment but no API mapping). Measurements alternate
baseline, current per round; medians and the current/baseline ratio shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.enrichment import add_rules, load_schemas
from bench.harness import Bench
from bench.ingest import prepare
from bench.ingest_pair import add_wrk_args, alternate

GOAL_RATIO = 0.95  # "not slower", within this noisy machine's round-to-round spread


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--baseline-src", required=True, help="the baseline's src/ directory")
    p.add_argument("--enriched", action="store_true",
                   help="one schema mapping rule on both integrations")
    add_wrk_args(p, rounds=5)
    args = p.parse_args()
    base_src = Path(args.baseline_src).resolve()
    if not (base_src / "dutyline" / "app.py").exists():
        p.error(f"{base_src} is not a dutyline src/ directory")
    bench = Bench(args)
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        prepared = []
        for name, extra in (("baseline", {"PYTHONPATH": str(base_src)}), ("current", {})):
            url = bench.database_url(name, args.postgres)
            server, push_url = prepare(bench, name, url, extra)
            if args.enriched:
                add_rules(server, load_schemas(server)[:1])
            prepared.append((name, server, push_url))
        results = alternate(bench, args, prepared)
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
    kind = "one schema mapping rule" if args.enriched else "no enrichment"
    lines = [
        f"alert ingestion, this checkout vs the baseline ({db}, {kind}), {args.rounds} rounds "
        f"x {args.seconds}s, wrk {args.threads} threads {args.connections} connections, "
        "medians",
        "",
        "| target | events/s | p50 ms | p99 ms | server CPU µs/req | non-2xx | vs baseline |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    base = med("baseline", "rps")
    for name in results:
        lines.append(
            f"| {name} | {med(name, 'rps'):,.0f} | {med(name, 'p50_us') / 1000:.1f} | "
            f"{med(name, 'p99_us') / 1000:.1f} | {med(name, 'cpu_us_per_req'):.0f} | "
            f"{sum(r['status_errors'] for r in results[name])} | "
            f"{med(name, 'rps') / base:.1%} |")
    ratio = med("current", "rps") / base
    lines += ["", f"goal (current >= {GOAL_RATIO:.0%} of baseline): "
              + ("met" if ratio >= GOAL_RATIO else f"NOT met ({ratio:.1%})")]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
