"""The scenarios `make bench` runs, and the command that runs them.

    make bench                                       # list the scenarios
    make bench NAME=team-list ARGS="--seconds 3 --rounds 2 --postgres"

An HTTP scenario is loaded here through the harness (bench/harness.py); a script scenario runs
a bench/ module with a short default size (arguments after `--` replace them). This module
imports the benchmarks, never the other way round, so bench/ has no import circle.
"""

from __future__ import annotations

import argparse
import secrets
import signal
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from bench.harness import Bench
from bench.ingest import prepare

Setup = Callable[[Bench, str], str]  # (bench, database URL) -> the URL to load


def _team(path: str, role: str | None = None) -> Setup:
    return lambda bench, url: bench.start_dutyline(
        "dutyline", url, pool_size=getattr(bench.args, "pool_size", 0)).url(path, role)


def _team_list_same_sql(bench: Bench, url: str) -> str:
    """The bare app running /team/list's own SQL on the plain driver, on the scenario's
    database and key (started after the scenario's dutyline server)."""
    dutyline = next(s for s in reversed(bench.servers) if s.name == "dutyline")
    return bench.start_bare_sql(url, dutyline.keys).url("/team/list", "list")


def _ingest(bench: Bench, url: str) -> str:
    return prepare(bench, "dutyline", url)[1]


# HTTP scenarios, loaded against the bare app: name -> (what, bench/wrk script, setup).
HTTP: dict[str, tuple[str, str, Setup]] = {
    "team-list": ("POST /team/list, a page of 20 teams", "post.lua", _team("/team/list", "list")),
    "team-upsert": ("POST /team/upsert, a new team every request", "upsert.lua",
                    _team("/team/upsert", "write")),
    "healthz": ("GET /healthz, no auth, no database", "get.lua", _team("/healthz")),
    "ingest": ("alert pushes: 80 % updates, 15 % new keys, 5 % recoveries", "ingest.lua",
               _ingest),
}
# Second baselines, measured in the same rounds: scenario -> (label, setup).
SAME_SQL: dict[str, tuple[str, Setup]] = {
    "team-list": ("bare same-SQL", _team_list_same_sql),
}
# Script scenarios: name -> (what, "module and its short default arguments").
SCRIPTS: dict[str, tuple[str, str]] = {
    "http-bench": ("the full HTTP table", "http_bench --seconds 3 --rounds 2"),
    "trace-requests": ("SQL statements and pool work per request", "trace_requests --requests 64"),
    "db-ladder": ("CPU of each layer of /team/list", "db_ladder --iterations 50 --rounds 2"),
    "incident-list": ("incident list pages", "incident_list --incidents 10000 --requests 20"),
    "insight": ("/insight/account", "insight --incidents 10000 --requests 10"),
    "oncall-now": ("who is on call now", "oncall_now --schedules 50 --rounds 2"),
    "mcp-list": ("MCP server list and get", "mcp_list --servers 100 --requests 50"),
    "past-incidents": ("similar past incidents", "past_incidents --incidents 10000 --requests 20"),
    "escalation": ("first pages of a burst, against bare webhook posts",
                   "escalation --incidents 200 --rounds 1"),
    "status-public": ("public status page and RSS, cached and cold",
                      "status_public --incidents 100 --requests 100 --cold 20"),
    "public-flood": ("admin writes and a page change while a status page is flooded",
                     "public_flood --seconds 5 --writes 8"),
    "console_incident_list": ("the console's incident list against /incident/list",
                              "console_list --incidents 10000 --requests 20"),
    "console-setup": ("the console's setup pages on 500 channels, 200 schedules and 2,000 "
                      "members, against a static file and the Teams page",
                      "console_setup --requests 50"),
    "list-http": ("/incident/list and the console list over HTTP, against a bare app "
                  "running their SQL", "list_http --incidents 10000 --seconds 3 --rounds 2"),
    "console_live_fanout": ("incidents pushed to the console list's open streams",
                            "console_live --streams 100 --pushes 10"),
    "retention": ("database size over a simulated month with and without pruning, and "
                  "read latency while a prune runs",
                  "retention --days 10 --incidents-per-day 200 --retention-days 3 "
                  "--requests 50 --backlog-days 1"),
}


def run_http(bench: Bench, names: list[str], postgres: bool) -> None:
    args, bare = bench.args, bench.start_bare()
    bare_url, rows = bare.url("/bare"), []

    def med(key: str, rs: list[dict[str, Any]]) -> float:
        return statistics.median(r.get(key, 0) for r in rs)

    for name in names:
        _, script, setup = HTTP[name]
        database = bench.database_url(name, postgres)
        url = setup(bench, database)
        pid = bench.servers[-1].proc.pid
        same: tuple[str, int] | None = None
        if name in SAME_SQL:
            same = (SAME_SQL[name][1](bench, database), bench.servers[-1].proc.pid)
        bench.wrk(bare_url, "post.lua", args.warmup)
        bench.wrk(url, script, args.warmup, tag="warm")
        if same:
            bench.wrk(same[0], "post.lua", args.warmup)
        base, runs, sames = [], [], []
        for r in range(args.rounds):
            base.append(bench.wrk(bare_url, "post.lua", args.seconds, pid=bare.proc.pid))
            if same:
                sames.append(bench.wrk(same[0], "post.lua", args.seconds, pid=same[1]))
            runs.append(bench.wrk(url, script, args.seconds, tag=f"r{r}{secrets.token_hex(2)}",
                                  pid=pid))
            print(f"{name} round {r + 1}: bare {base[-1]['rps']:.0f} req/s, "
                  + (f"same-SQL {sames[-1]['rps']:.0f} req/s, " if same else "")
                  + f"target {runs[-1]['rps']:.0f} req/s", file=sys.stderr)
        ratio = statistics.median(m["rps"] / b["rps"] for b, m in zip(base, runs, strict=True))
        cpu = med("cpu_us_per_req", runs)
        db = "PostgreSQL" if postgres else "SQLite"
        if same:
            s_ratio = statistics.median(s["rps"] / b["rps"] for b, s in zip(base, sames,
                                                                           strict=True))
            s_cpu = med("cpu_us_per_req", sames)
            rows.append(
                f"| {name}: {SAME_SQL[name][0]} | {db} | {med('rps', base):,.0f} | "
                f"{med('rps', sames):,.0f} | {s_ratio:.3f} | - | {s_cpu:,.0f} | "
                f"{med('cpu_us_per_req', base) / (s_cpu or 1):.3f} | "
                f"{med('p50_us', sames) / 1000:.1f} | {med('p99_us', sames) / 1000:.1f} | "
                f"{sum(m['status_errors'] + m['socket_errors'] for m in sames)} |")
        to_same = "-"
        if same:
            per_round = [m["rps"] / s["rps"] for s, m in zip(sames, runs, strict=True)]
            to_same = f"{statistics.median(per_round):.3f}"
        rows.append(
            f"| {name} | {db} | {med('rps', base):,.0f} | "
            f"{med('rps', runs):,.0f} | {ratio:.3f} | {to_same} | {cpu:,.0f} | "
            f"{med('cpu_us_per_req', base) / (cpu or 1):.3f} | {med('p50_us', runs) / 1000:.1f} | "
            f"{med('p99_us', runs) / 1000:.1f} | "
            f"{sum(m['status_errors'] + m['socket_errors'] for m in runs)} |")
    print(f"\n{args.rounds} rounds x {args.seconds}s, {args.connections} connections, "
          f"{bench.loader}, {'pinned' if bench.pinned else 'not pinned'}. Medians over rounds; "
          "ratio: target / bare run just before it (and / the same-SQL baseline run in the "
          "same round); CPU ratio: bare's server CPU per request / the target's.\n")
    print("| scenario | database | bare req/s | req/s | ratio to bare | ratio to same-SQL "
          "| server CPU µs/req | CPU ratio | p50 ms | p99 ms | errors |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    p.add_argument("names", nargs="?", default="", help="scenario, or several split by commas")
    p.add_argument("--postgres", action="store_true", help="a PostgreSQL database, not SQLite")
    p.add_argument("--seconds", type=int, default=5, help="per measurement")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--pool-size", type=int, default=0,
                   help="serve dutyline with a database pool of N connections and no overflow "
                        "(bench/serve_tuned.py)")
    p.add_argument("--no-pin", dest="pin", action="store_false")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--wrk-cpus", default="1")
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    names = [n for n in args.names.split(",") if n]
    unknown = [n for n in names if n not in HTTP and n not in SCRIPTS]
    if not names or unknown:
        print(f"unknown scenario: {', '.join(unknown)}\n" if unknown else "", end="")
        print("scenarios (make bench NAME=<name>[,<name>...] ARGS='--seconds 3 --postgres'):")
        for name, (what, *_) in [*HTTP.items(), *SCRIPTS.items()]:
            print(f"  {name:<21} {'http  ' if name in HTTP else 'script'}  {what}")
        return 2 if unknown else 0
    if args.seconds > 30 or args.rounds > 20:
        p.error("keep runs short on the shared machine: --seconds <= 30, --rounds <= 20")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for name in [n for n in names if n in SCRIPTS]:
        module, *short = SCRIPTS[name][1].split()
        cmd = [sys.executable, "-m", f"bench.{module}", *(extra or short)]
        cmd += ["--postgres"] if args.postgres else []
        print("$ python " + " ".join(cmd[1:]), flush=True)
        if subprocess.run(cmd, check=False).returncode:
            return 1
    if http := [n for n in names if n in HTTP]:
        bench = Bench(args)
        try:
            run_http(bench, http, args.postgres)
        finally:
            bench.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
