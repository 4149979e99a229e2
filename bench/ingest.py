"""Alert ingestion end to end (HTTP in -> alert stored -> incident grouped -> event emitted),
one `dutyline serve` process, against the bare ASGI baseline in the same run.

    python -m bench.ingest [--seconds 10] [--rounds 3] [--connections 32] [--postgres]
                           [--profile]

Each database gets an account (`dutyline init`), a channel grouping by `labels.svc`
(method p, 60-minute window) and one standard integration; SEED_KEYS alerts are pushed first,
then wrk drives bench/wrk/ingest.lua: 80 % updates of active keys, 15 % new keys, 5 %
recoveries. Rate limits are off (the per-integration 50/s would cap the run). Every 200 is
a committed transaction (alert + event + incident changes + outbox), so events/s is the rate
of durably ingested events. Measurements alternate bare, target per round; medians shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from bench.harness import Bench, Server, post, venv_bin

SEED_KEYS = 600
GOAL_EPS = 1000.0
GOAL_P99_MS = 50.0


def prepare(bench: Bench, name: str, database_url: str,
            extra_env: dict[str, str] | None = None) -> tuple[Server, str]:
    """A server with the bench's channel, integration and seeded keys. `extra_env` is added
    to the server's environment (bench/ingest_baseline.py runs another checkout's code with
    PYTHONPATH)."""
    env = {**bench.dutyline_env(database_url), **(extra_env or {})}
    env.update(SEED_KEYS=str(SEED_KEYS), WRK_THREADS=str(bench.args.threads))
    app_key = bench.init_account(env, f"bench-{name}")["app_key"]
    server = bench.start(name, [venv_bin("dutyline"), "serve"], env)
    server.keys = {"owner": app_key}
    channel = post(server.url("/channel/create", "owner"), {
        "channel_name": "ingest", "group": {"method": "p", "equals": [["labels.svc"]],
                                            "time_window": 60}})
    channel_id = channel["data"]["channel_id"]
    integ = post(server.url("/integration/create", "owner"),
                 {"channel_id": channel_id, "integration_name": "bench"})
    key = integ["data"]["integration_key"]
    push_url = server.url("/event/push/alert/standard") + f"?integration_key={key}"
    for i in range(SEED_KEYS):
        reply = post(push_url, {"title_rule": "$svc latency high", "event_status": "Warning",
                                "alert_key": f"seed-{i}",
                                "labels": {"host": f"seed-{i}", "svc": f"svc-{i % 20}"}})
        if "data" not in reply:
            raise RuntimeError(f"seeding failed: {reply}")
    return server, push_url


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=int, default=10, help="per measurement")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--postgres", action="store_true", help="also run on PostgreSQL")
    p.add_argument("--no-pin", dest="pin", action="store_false")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--wrk-cpus", default="1")
    p.add_argument("--json-out", default="")
    p.add_argument("--profile", action="store_true",
                   help="after the rounds, py-spy each server under the same load")
    p.add_argument("--profile-seconds", type=int, default=8)
    args = p.parse_args()
    bench = Bench(args)
    results: dict[str, list[dict[str, Any]]] = {}
    profiles: list[str] = []
    try:
        bare = bench.start_bare()
        bare_url = f"http://127.0.0.1:{bare.port}/"
        targets = [("sqlite", f"sqlite+aiosqlite:///{bench.tmp}/ingest.db")]
        if args.postgres:
            targets.append(("postgres", bench.database_url("ingest", True)))
        prepared = [(name, *prepare(bench, name, url)) for name, url in targets]
        bench.wrk(bare_url, "post.lua", args.warmup)
        for name, _server, url in prepared:
            bench.wrk(url, "ingest.lua", args.warmup, tag=f"warm{name}")
        for r in range(args.rounds):
            for name, server, url in prepared:
                base = bench.wrk(bare_url, "post.lua", args.seconds, pid=bare.proc.pid)
                got = bench.wrk(url, "ingest.lua", args.seconds, tag=f"r{r}{name}",
                                pid=server.proc.pid)
                results.setdefault("bare", []).append(base)
                results.setdefault(name, []).append(got)
                print(f"round {r + 1} {name}: {got['rps']:.0f} events/s, "
                      f"p99 {got['p99_us'] / 1000:.1f} ms, errors "
                      f"{got['status_errors'] + got['socket_errors']}; bare {base['rps']:.0f}/s",
                      file=sys.stderr)
        if args.profile:
            from bench.list_http import profile

            for name, server, url in prepared:
                profiles.append(profile(bench, server, url, "ingest.lua", "{}",
                                        args.profile_seconds, None, f"ingest-{name}"))
    finally:
        bench.close()
    print(report(args, results))
    for text in profiles:
        print("\n" + text)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


def report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]]) -> str:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name])

    lines = [
        f"alert ingestion, {args.rounds} rounds x {args.seconds}s, wrk {args.threads} threads "
        f"{args.connections} connections, mix 80/15/5 update/new/recover, medians",
        "",
        "| target | events/s | p50 ms | p99 ms | server CPU µs/req | non-2xx | vs bare |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    bare_rps = med("bare", "rps")
    for name in results:
        lines.append(
            f"| {name} | {med(name, 'rps'):,.0f} | {med(name, 'p50_us') / 1000:.1f} | "
            f"{med(name, 'p99_us') / 1000:.1f} | {med(name, 'cpu_us_per_req'):.0f} | "
            f"{sum(r['status_errors'] for r in results[name])} | "
            f"{med(name, 'rps') / bare_rps:.1%} |"
        )
    if "sqlite" in results:
        eps, p99 = med("sqlite", "rps"), med("sqlite", "p99_us") / 1000
        met = eps >= GOAL_EPS and p99 < GOAL_P99_MS
        lines += ["", f"goal (SQLite >= {GOAL_EPS:.0f} events/s, p99 < {GOAL_P99_MS:.0f} ms): "
                  + ("met" if met else f"NOT met ({eps:.0f} events/s, p99 {p99:.1f} ms)")]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
