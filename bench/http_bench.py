"""HTTP throughput and latency of dutyline against a bare ASGI baseline (wrk or bench/loadgen).

    python -m bench.http_bench [--seconds 5] [--rounds 5] [--connections 32] [--postgres]
                               [--default-limits] [--profile] [--no-pin]

Starts every server itself on free loopback ports and tears everything down at the end:

* the bare ASGI app (bench/bare_asgi.py), the baseline;
* the same-SQL baseline (bench/bare_sql.py): a bare app running /team/list's own SQL on the
  plain driver, on each database, measured as a target like the others;
* `dutyline serve` on a fresh SQLite file in a temp dir (accounts made with `dutyline init`);
* with --postgres, `dutyline serve` on a fresh PostgreSQL database, created and dropped here;
* with --default-limits, one more SQLite server with the default rate limits (50/s, 1000/min).

Two accounts per database: one holds exactly 25 seeded teams and serves /team/list (20 items
a page); the other takes the /team/upsert load (every request creates a new team), so the list
account does not grow between rounds.

Measurements are interleaved in pairs, bare then target, for every target in every round, and
each target's ratio is taken against the bare run right before it; the table shows medians over
the rounds. The machine is shared and noisy: only the ratios are meant to be compared.
With --profile, py-spy records the SQLite server under /team/list load and a summary of where
the time goes is printed (raw collapsed stacks are kept with --keep-profile PATH).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import Bench, Server, venv_bin

LIST_GOAL = 0.10  # /team/list on SQLite >= 10 % of the bare app's throughput
SAME_SQL_GOAL = 0.50  # /team/list >= 50 % of the bare app running its SQL (bench/bare_sql.py)
PG_GOAL = 0.70  # PostgreSQL within 30 % of SQLite


# ---------------------------------------------------------------------------- targets

@dataclass
class Target:
    label: str
    server: Server
    path: str
    script: str
    role: str | None
    expect_non2xx: bool = False
    runs: list[dict[str, Any]] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    cpu_ratios: list[float] = field(default_factory=list)
    bare_runs: list[dict[str, Any]] = field(default_factory=list)

    def url(self) -> str:
        return self.server.url(self.path, self.role)


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run_rounds(bench: Bench, bare: Server, targets: list[Target]) -> None:
    args = bench.args
    bare_url = bare.url("/bare")
    print(f"warm-up: {args.warmup}s on each server", file=sys.stderr)
    bench.wrk(bare_url, "post.lua", args.warmup)
    for t in targets:
        bench.wrk(t.url(), t.script, args.warmup)
    for r in range(1, args.rounds + 1):
        for t in targets:
            b = bench.wrk(bare_url, "post.lua", args.seconds, pid=bare.proc.pid)
            m = bench.wrk(t.url(), t.script, args.seconds, tag=f"r{r}{secrets.token_hex(2)}",
                          pid=t.server.proc.pid)
            t.bare_runs.append(b)
            t.runs.append(m)
            t.ratios.append(m["rps"] / b["rps"])
            t.cpu_ratios.append(b.get("cpu_us_per_req", 0) / m.get("cpu_us_per_req", 1) or 1)
            print(f"round {r}/{args.rounds}  bare {b['rps']:8.0f} req/s | {t.label:<34} "
                  f"{m['rps']:8.0f} req/s  ratio {t.ratios[-1]:.3f}  cpu-ratio "
                  f"{t.cpu_ratios[-1]:.3f}  non-2xx {m['status_errors']}", file=sys.stderr)


def report(bench: Bench, targets: list[Target]) -> str:
    args = bench.args
    bare_runs = [b for t in targets for b in t.bare_runs]
    lines = [
        f"Run {time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} CPUs, "
        f"{args.rounds} rounds x {args.seconds}s per measurement, {bench.loader}, "
        f"{args.connections} connections, "
        + (f"server pinned to CPU {args.server_cpus}, wrk to CPU {args.wrk_cpus}"
           if bench.pinned else "no CPU pinning")
        + ". Ratios: median over rounds of (target / bare run just before it). CPU ratio: "
        "bare's server CPU time per request / the target's (the throughput ratio both would "
        "have if CPU-bound on a core of their own).",
        "",
        "| target | req/s (median) | ratio to bare | p50 ms | p99 ms | server CPU µs/req "
        "| CPU ratio | non-2xx | socket errors | per-round ratios |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| bare ASGI (baseline) | {med([b['rps'] for b in bare_runs]):.0f} | 1.000 | "
        f"{med([b['p50_us'] for b in bare_runs]) / 1000:.2f} | "
        f"{med([b['p99_us'] for b in bare_runs]) / 1000:.2f} | "
        f"{med([b.get('cpu_us_per_req', 0) for b in bare_runs]):.0f} | 1.000 | "
        f"{sum(b['status_errors'] for b in bare_runs)} | "
        f"{sum(b['socket_errors'] for b in bare_runs)} | |",
    ]
    for t in targets:
        lines.append(
            f"| {t.label} | {med([m['rps'] for m in t.runs]):.0f} | {med(t.ratios):.3f} | "
            f"{med([m['p50_us'] for m in t.runs]) / 1000:.2f} | "
            f"{med([m['p99_us'] for m in t.runs]) / 1000:.2f} | "
            f"{med([m.get('cpu_us_per_req', 0) for m in t.runs]):.0f} | "
            f"{med(t.cpu_ratios):.3f} | "
            f"{sum(m['status_errors'] for m in t.runs)} | "
            f"{sum(m['socket_errors'] for m in t.runs)} | "
            + " ".join(f"{x:.3f}" for x in t.ratios) + " |"
        )
    by_label = {t.label: t for t in targets}
    verdicts: list[str] = []
    pairs = [("/team/list", "SQLite /team/list", "PostgreSQL /team/list"),
             ("/team/upsert", "SQLite /team/upsert", "PostgreSQL /team/upsert")]
    pg_lines = []
    for what, s_label, p_label in pairs:
        s, p = by_label.get(s_label), by_label.get(p_label)
        if not s or not p:
            continue
        # Per round: PG ratio / SQLite ratio, both normalised by their own bare run.
        per_round = [pr / sr for pr, sr in zip(p.ratios, s.ratios, strict=True)]
        cpu_round = [pr / sr for pr, sr in zip(p.cpu_ratios, s.cpu_ratios, strict=True)]
        pg_lines.append(f"| {what} | {med(per_round):.3f} | {med(cpu_round):.3f} | "
                        + " ".join(f"{x:.3f}" for x in per_round) + " |")
        if what == "/team/list":
            ok = med(per_round) >= PG_GOAL
            verdicts.append(
                f"- PostgreSQL within 30 % of SQLite on /team/list (PG/SQLite >= {PG_GOAL:.2f}): "
                f"**{'met' if ok else 'NOT met'}** ({med(per_round):.3f})")
    if pg_lines:
        lines += ["", "| PostgreSQL vs SQLite | throughput ratio PG/SQLite (median) "
                  "| CPU ratio PG/SQLite | per round (throughput) |",
                  "|---|---:|---:|---|", *pg_lines]
    if (s := by_label.get("SQLite /team/list")) is not None:
        ok = med(s.ratios) >= LIST_GOAL
        verdicts.insert(0, f"- /team/list on SQLite >= {LIST_GOAL:.0%} of bare: "
                        f"**{'met' if ok else 'NOT met'}** ({med(s.ratios):.1%})")
    for db in ("SQLite", "PostgreSQL"):
        target, same = by_label.get(f"{db} /team/list"), by_label.get(f"{db} bare same-SQL")
        if target is None or same is None:
            continue
        # Per round: both normalised by the bare run just before each.
        per_round = [t / b for t, b in zip(target.ratios, same.ratios, strict=True)]
        cpu_round = [t / b for t, b in zip(target.cpu_ratios, same.cpu_ratios, strict=True)]
        ok = med(per_round) >= SAME_SQL_GOAL
        verdicts.append(
            f"- {db} /team/list >= {SAME_SQL_GOAL:.0%} of the bare app on the same SQL: "
            f"**{'met' if ok else 'NOT met'}** ({med(per_round):.1%}; CPU ratio "
            f"{med(cpu_round):.1%}; rounds " + " ".join(f"{x:.3f}" for x in per_round) + ")")
    unexpected = [t.label for t in targets
                  if not t.expect_non2xx and sum(m["status_errors"] for m in t.runs)]
    unexpected += ["bare ASGI"] if sum(b["status_errors"] for b in bare_runs) else []
    verdicts.append("- non-2xx responses: " + (
        "none outside the rate-limited run" if not unexpected
        else "**present** in " + ", ".join(unexpected)))
    for t in targets:
        if t.expect_non2xx:
            total = sum(m["requests"] for m in t.runs)
            bad = sum(m["status_errors"] for m in t.runs)
            verdicts.append(f"- {t.label}: {bad} of {total} responses non-2xx (429 expected: "
                            f"limits are 50/s and 1000/min per key)")
    return "\n".join([*lines, "", "Goals:", *verdicts])


# ---------------------------------------------------------------------------- profile

PROFILE_COMPONENTS: list[tuple[str, tuple[str, ...]]] = [
    # label, substrings matched against "function (file:line)" frames (inclusive time)
    ("auth: DatabaseAuthenticator.authenticate",
     ("authenticate (dutyline/platform/auth.py",)),
    ("handler: team list service + repository", ("dutyline/platform/team/",)),
    ("db.transaction enter/exit (BEGIN/COMMIT, pool)", ("transaction (dutyline/db/engine.py",
                                                        "begin (dutyline/db/engine.py")),
    ("SQLAlchemy (compile, execute, results, pool)", ("sqlalchemy/",)),
    ("aiosqlite (thread hops, futures)", ("aiosqlite/",)),
    ("asyncpg", ("asyncpg/",)),
    ("msgspec envelope encode", ("dutyline/api/envelope.py",)),
    ("Starlette (routing, Request, Response)", ("starlette/",)),
    ("uvicorn + httptools protocol", ("uvicorn/",)),
    ("prometheus_client (metrics)", ("prometheus_client/",)),
    ("structlog", ("structlog/",)),
    ("i18n negotiate", ("dutyline/api/i18n.py",)),
    ("request id", ("dutyline/kit/ids.py",)),
]


def _package(frame: str) -> str:
    # frame: "func (path/to/file.py:123)"; py-spy shortens paths to be relative to sys.path
    path = frame.rsplit("(", 1)[-1].rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "/lib/python3.11/", "/lib/python3.12/", "/lib/python3.13/"):
        path = path.split(marker, 1)[-1]
    if path.startswith("dutyline/") or "/dutyline/" in path:
        return path[path.index("dutyline/"):].removesuffix(".py").replace("/", ".")
    return path.split("/", 1)[0].removesuffix(".py")


def summarise_profile(raw: Path, top: int = 15) -> str:
    samples: list[tuple[list[str], int]] = []
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            samples.append((stack.split(";"), int(count)))
    total = sum(c for _, c in samples)
    if not total:
        return "no samples"
    by_thread: collections.Counter[str] = collections.Counter()
    leaf_pkg: collections.Counter[str] = collections.Counter()
    leaf_fn: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    dutyline_fn: collections.Counter[str] = collections.Counter()
    for frames, count in samples:
        code = [f for f in frames[1:] if "(" in f]
        by_thread["event loop (main thread)" if _is_main(frames) else "other threads "
                  "(aiosqlite workers)"] += count
        if not code:
            continue
        leaf = code[-1]
        leaf_pkg[_package(leaf)] += count
        leaf_fn[leaf] += count
        joined = ";".join(code)
        for label, needles in PROFILE_COMPONENTS:
            if any(n in joined for n in needles):
                inclusive[label] += count
        for fn in {f.split(" (", 1)[0] + " (" + _package(f) + ")" for f in code
                   if "dutyline/" in f}:
            dutyline_fn[fn] += count

    def pct(n: int) -> str:
        return f"{100 * n / total:5.1f} %"

    out = [f"{total} samples of the thread holding the GIL (py-spy --gil)", "",
           "By thread:"]
    out += [f"  {pct(n)}  {k}" for k, n in by_thread.most_common()]
    out += ["", "Inclusive time by component (a sample counts once per component):"]
    out += [f"  {pct(n)}  {k}" for k, n in inclusive.most_common()]
    out += ["", "Self time by package (leaf frame):"]
    out += [f"  {pct(n)}  {k}" for k, n in leaf_pkg.most_common(top)]
    out += ["", "Self time by function (leaf frame):"]
    out += [f"  {pct(n)}  {k}" for k, n in leaf_fn.most_common(top)]
    out += ["", "Inclusive time of dutyline functions:"]
    out += [f"  {pct(n)}  {k}" for k, n in dutyline_fn.most_common(top)]
    return "\n".join(out)


def _is_main(frames: list[str]) -> bool:
    # py-spy --threads starts each stack with "thread (<tid>): <name>"; the event loop runs
    # in MainThread, aiosqlite's connection threads have their own names.
    return "MainThread" in frames[0]


def profile(bench: Bench, server: Server) -> str:
    args = bench.args
    py_spy = venv_bin("py-spy")
    if shutil.which(py_spy) is None and not Path(py_spy).exists():
        return "py-spy is not installed (pip install py-spy into the venv); no profile taken"
    raw = bench.tmp / "profile.txt"
    rec = subprocess.Popen(
        [*bench.wrk_prefix, py_spy, "record", "--pid", str(server.proc.pid), "--duration",
         str(int(args.profile_seconds)), "--rate", "200", "--format", "raw", "--threads",
         "--gil", "--nonblocking", "--output", str(raw)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    time.sleep(1.0)
    load = bench.wrk(server.url("/team/list", "list"), "post.lua", args.profile_seconds)
    out, _ = rec.communicate(timeout=args.profile_seconds + 60)
    if rec.returncode != 0 or not raw.exists():
        return f"py-spy failed ({rec.returncode}): {out.decode(errors='replace')[-2000:]}"
    if args.keep_profile:
        shutil.copy(raw, args.keep_profile)
    head = (f"Profile: py-spy (200 Hz, --gil --nonblocking) on {server.name} under /team/list, "
            f"{args.connections} connections, {args.profile_seconds}s; load during the profile "
            f"{load['rps']:.0f} req/s (sampling costs some).")
    return head + "\n\n" + summarise_profile(raw)


# ---------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.http_bench",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=5, help="per measurement")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--postgres", action="store_true", help="also run on PostgreSQL")
    p.add_argument("--default-limits", action="store_true",
                   help="also measure /team/list with the default rate limits on")
    p.add_argument("--no-upsert", action="store_true", help="skip the /team/upsert targets")
    p.add_argument("--healthz", action="store_true",
                   help="also measure GET /healthz (no auth, no database)")
    p.add_argument("--pool-size", type=int, default=0,
                   help="what-if: also measure /team/list on servers whose DB pool holds N "
                        "connections and never overflows (bench/serve_tuned.py)")
    p.add_argument("--profile", action="store_true",
                   help="after the rounds, py-spy the SQLite server under /team/list load")
    p.add_argument("--profile-only", action="store_true", help="skip the rounds")
    p.add_argument("--profile-db", choices=("sqlite", "postgres"), default="sqlite",
                   help="which dutyline server to profile")
    p.add_argument("--profile-seconds", type=int, default=10)
    p.add_argument("--keep-profile", type=Path, default=None,
                   help="copy py-spy's raw collapsed stacks here")
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not pin server and wrk to different CPUs with taskset")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--wrk-cpus", default="1")
    p.add_argument("--json-out", type=Path, default=None, help="write raw results as JSON")
    args = p.parse_args(argv)
    if args.seconds > 30 or args.rounds > 20:
        p.error("keep runs short on the shared machine: --seconds <= 30, --rounds <= 20")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bench = Bench(args)
    try:
        bare = bench.start_bare()
        sqlite_url = f"sqlite+aiosqlite:///{bench.tmp / 'sqlite' / 'dutyline.db'}"
        sq = bench.start_dutyline("dutyline-sqlite", sqlite_url)
        same_sq = bench.start_bare_sql(sqlite_url, sq.keys, "bare-sql-sqlite")
        targets = [Target("SQLite bare same-SQL", same_sq, "/team/list", "post.lua", "list"),
                   Target("SQLite /team/list", sq, "/team/list", "post.lua", "list")]
        if not args.no_upsert:
            targets.append(Target("SQLite /team/upsert", sq, "/team/upsert", "upsert.lua",
                                  "write"))
        if args.postgres:
            pg_url = bench.database_url("bench", True)
            pg = bench.start_dutyline("dutyline-postgres", pg_url)
            same_pg = bench.start_bare_sql(pg_url, pg.keys, "bare-sql-postgres")
            targets[2:2] = [Target("PostgreSQL bare same-SQL", same_pg, "/team/list",
                                   "post.lua", "list"),
                            Target("PostgreSQL /team/list", pg, "/team/list", "post.lua",
                                   "list")]
            if not args.no_upsert:
                targets.append(Target("PostgreSQL /team/upsert", pg, "/team/upsert",
                                      "upsert.lua", "write"))
        if args.default_limits:
            lim = bench.start_dutyline("dutyline-sqlite-limits", sqlite_url, limits=True,
                                       seed=False, keys=sq.keys)
            targets.append(Target("SQLite /team/list, default limits", lim, "/team/list",
                                  "post.lua", "list", expect_non2xx=True))
        if args.healthz:
            # GET /healthz: Starlette + uvicorn + a JSONResponse, no auth, no database; splits
            # the framework's share of a request from the database layer's.
            targets.insert(0, Target("dutyline GET /healthz (no DB)", sq, "/healthz", "get.lua",
                                     None))
        if args.pool_size:
            # What-if: the same databases, served with a pool that never churns.
            n = args.pool_size
            sqp = bench.start_dutyline(f"dutyline-sqlite-pool{n}", sqlite_url, seed=False,
                                       keys=sq.keys, pool_size=n)
            targets.append(Target(f"SQLite /team/list, pool {n}", sqp, "/team/list",
                                  "post.lua", "list"))
            if args.postgres:
                pgp = bench.start_dutyline(f"dutyline-postgres-pool{n}", pg_url, seed=False,
                                           keys=pg.keys, pool_size=n)
                targets.append(Target(f"PostgreSQL /team/list, pool {n}", pgp, "/team/list",
                                      "post.lua", "list"))
        output = []
        if not args.profile_only:
            run_rounds(bench, bare, targets)
            output.append(report(bench, targets))
        if args.profile or args.profile_only:
            if args.profile_db == "postgres" and not args.postgres:
                raise SystemExit("--profile-db postgres needs --postgres")
            output.append(profile(bench, pg if args.profile_db == "postgres" else sq))
        print("\n\n".join(output))
        if args.json_out:
            args.json_out.write_text(json.dumps(
                [{"label": t.label, "runs": t.runs, "bare_runs": t.bare_runs,
                  "ratios": t.ratios} for t in targets], indent=1))
    finally:
        bench.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
