"""Alert ingestion with an integration's enrichment (10 mapping schemas of 100,000 rows each)
against the same ingestion without enrichment, in the same run (issue 13's goal: at most 15 %
fewer events/s).

    python -m bench.enrichment [--seconds 10] [--rounds 3] [--connections 32] [--postgres]

Two servers, each on its own database prepared as bench/ingest.py does (a channel grouping by
`labels.svc`, 600 seeded keys, wrk's 80/15/5 update/new/recover mix). BOTH databases get 10
mapping schemas, each keyed on `svc` with result labels `owner<k>` and `tier<k>`, loaded by
CSV upload with 100,000 rows (svc-0 ... svc-19, the benchmark's services, plus 99,980 others).
Only the `enriched` server's integration has enrichment rules: 10 mapping rules, one per
schema, so every event looks up 10 rows (one statement) and gains 20 labels before it is
stored and grouped. Measurements alternate plain, enriched per round; medians shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.request
from typing import Any

from bench.http_bench import Bench, Server, post
from bench.ingest import prepare

SCHEMAS = 10
ROWS = 100_000
GOAL_RATIO = 0.85


def _upload(server: Server, schema_id: str, data: bytes) -> dict[str, Any]:
    url = server.url("/enrichment/mapping/data/upload", "owner") + f"&schema_id={schema_id}"
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "text/csv"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def load_schemas(server: Server) -> list[str]:
    ids: list[str] = []
    for k in range(SCHEMAS):
        created = post(server.url("/enrichment/mapping/schema/create", "owner"), {
            "schema_name": f"cmdb-{k}", "source_labels": ["svc"],
            "result_labels": [f"owner{k}", f"tier{k}"]})
        schema_id = created["data"]["schema_id"]
        lines = [f"svc,owner{k},tier{k}"]
        lines += [f"svc-{i},team-{(i + k) % 7},tier-{i % 3}" for i in range(20)]
        lines += [f"svc-x{i},team-{i % 50},tier-{i % 3}" for i in range(ROWS - 20)]
        reply = _upload(server, schema_id, ("\n".join(lines) + "\n").encode())
        if "data" not in reply:
            raise RuntimeError(f"upload failed: {reply}")
        ids.append(schema_id)
    return ids


def add_rules(server: Server, schema_ids: list[str]) -> None:
    integrations = post(server.url("/integration/list", "owner"), {"limit": 10})
    integration_id = integrations["data"]["items"][0]["integration_id"]
    rules = [{"kind": "mapping", "settings": {"schema_id": s, "mapping_type": "schema",
                                              "result_labels": [f"owner{k}", f"tier{k}"]}}
             for k, s in enumerate(schema_ids)]
    reply = post(server.url("/enrichment/upsert", "owner"),
                 {"integration_id": integration_id, "rules": rules})
    if "data" not in reply:
        raise RuntimeError(f"enrichment upsert failed: {reply}")


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
        for name in ("plain", "enriched"):
            url = (bench.create_pg_database() if args.postgres
                   else f"sqlite+aiosqlite:///{bench.tmp}/{name}.db")
            server, push_url = prepare(bench, name, url)
            schema_ids = load_schemas(server)
            if name == "enriched":
                add_rules(server, schema_ids)
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
        f"alert ingestion with enrichment ({db}), {args.rounds} rounds x {args.seconds}s, "
        f"wrk {args.threads} threads {args.connections} connections, medians; both databases "
        f"hold {SCHEMAS} mapping schemas x {ROWS:,} rows",
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
    ratio = med("enriched", "rps") / plain
    lines += ["", f"goal (enriched >= {GOAL_RATIO:.0%} of plain): "
              + ("met" if ratio >= GOAL_RATIO else f"NOT met ({ratio:.1%})")]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
