"""The benchmark harness: servers, databases, load, and the scenarios `make bench` runs.

    make bench                                       # list the scenarios
    make bench NAME=team-list ARGS="--seconds 3 --rounds 2 --postgres"

An HTTP scenario serves dutyline on a fresh SQLite file or PostgreSQL database (created, then
dropped), seeds it, and loads it alternately with the bare ASGI app (bench/bare_asgi.py) so
each ratio compares two measurements taken seconds apart. Load: wrk if installed, else
bench/loadgen.py. A script scenario runs a bench/ module with a short default size (arguments
after `--` replace them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
WRK_DIR = BENCH_DIR / "wrk"
PG_BASE = os.environ.get("DUTYLINE_BENCH_PG", "postgresql+asyncpg://postgres@127.0.0.1:5432")
SEED_TEAMS = 25
BENCH_SECRET = secrets.token_urlsafe(32)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def venv_bin(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(5)


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def pg_exec(sql: str, base: str = PG_BASE) -> None:
    import asyncpg  # the `postgres` extra

    conn = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://")
                                 + "/postgres")
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextlib.contextmanager
def scratch_database(prefix: str, postgres: bool) -> Iterator[str]:
    """The URL of a new database, dropped (or its directory removed) afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix=f"dutyline-{prefix}-"))
    name = f"dutyline_{prefix.replace('-', '_')}_{os.getpid()}_{secrets.token_hex(3)}"
    if postgres:
        asyncio.run(pg_exec(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{PG_BASE}/{name}" if postgres else f"sqlite+aiosqlite:///{tmp / 'dutyline.db'}"
    finally:
        if postgres:
            asyncio.run(pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        shutil.rmtree(tmp, ignore_errors=True)


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())  # type: ignore[no-any-return]
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"POST {url.split('?')[0]} -> {exc.code}: {exc.read()!r}") from None


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    keys: dict[str, str] = field(default_factory=dict)  # role -> app key

    def url(self, path: str, role: str | None = None) -> str:
        base = f"http://127.0.0.1:{self.port}{path}"
        return f"{base}?app_key={self.keys[role]}" if role else base

    def log_tail(self, n: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        return ""


class Bench:
    """Owns what a run starts (processes, temp dir, PostgreSQL databases) and removes it all
    in close(). `args` carries threads, connections, warmup, pin, server_cpus, wrk_cpus."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="dutyline-bench-"))
        self.servers: list[Server] = []
        self.databases = contextlib.ExitStack()
        pin = args.pin and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
        self.server_prefix = ["taskset", "-c", args.server_cpus] if pin else []
        self.wrk_prefix = ["taskset", "-c", args.wrk_cpus] if pin else []
        self.pinned = pin
        self.loader = "wrk" if shutil.which("wrk") else "python loader"

    def dutyline_env(self, database_url: str, *, limits: bool = False) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("DUTYLINE_REDIS_URL", None)  # one process: the in-memory limiter
        env.update(DUTYLINE_DATABASE_URL=database_url, DUTYLINE_RUN_WORKERS="0",
                   DUTYLINE_LOG_LEVEL="warning", PYTHONUNBUFFERED="1")
        # Off SQLite `serve` needs a key shared by its processes; one per bench run.
        env.setdefault("DUTYLINE_SECRET_KEY", BENCH_SECRET)
        for per in ("SECOND", "MINUTE"):  # limits: the defaults; else off
            env.pop(f"DUTYLINE_RATE_LIMIT_PER_{per}", None)
            env.update({} if limits else {f"DUTYLINE_RATE_LIMIT_PER_{per}": "0"})
        return env

    def init_account(self, env: dict[str, str], name: str) -> dict[str, Any]:
        out = subprocess.run([venv_bin("dutyline"), "init", "--account-name", name],
                             env=env, capture_output=True, check=False, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"dutyline init failed:\n{out.stderr.decode(errors='replace')}")
        return json.loads(out.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]

    def database_url(self, name: str, postgres: bool) -> str:
        """A new database, removed in close()."""
        return self.databases.enter_context(scratch_database(name, postgres))

    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> Server:
        port, log_path = free_port(), self.tmp / f"{name}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [*self.server_prefix, *cmd, "--host", "127.0.0.1", "--port", str(port)],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp,
                start_new_session=True)
        server = Server(name, port, proc, log_path)
        self.servers.append(server)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited:\n{server.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return server
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{name} did not start in 60s:\n{server.log_tail()}")

    def start_bare(self) -> Server:
        return self.start("bare", [sys.executable, "-m", "bench.bare_asgi"],
                          {**os.environ, "PYTHONPATH": str(BENCH_DIR.parent)})

    def start_bare_sql(self, database_url: str, keys: dict[str, str],
                       name: str = "bare-sql") -> Server:
        """The same-SQL baseline of /team/list (bench/bare_sql.py) on `database_url`."""
        server = self.start(name, [sys.executable, "-m", "bench.bare_sql",
                                         "--database-url", database_url],
                            {**os.environ, "PYTHONPATH": os.pathsep.join(
                                [str(BENCH_DIR.parent), str(BENCH_DIR.parent / "src")])})
        server.keys = dict(keys)
        listed = post(server.url("/team/list", "list"), {})["data"]
        if len(listed["items"]) != 20:
            raise RuntimeError(f"bare-sql: /team/list gave {len(listed['items'])} items")
        return server

    def start_dutyline(self, name: str, database_url: str, *, limits: bool = False,
                       seed: bool = True, keys: dict[str, str] | None = None,
                       pool_size: int = 0) -> Server:
        """`dutyline serve` with two accounts: "list" holds SEED_TEAMS teams (a full page of
        20), "write" takes the upserts, so the list account does not grow."""
        env = self.dutyline_env(database_url, limits=limits)
        cmd = [venv_bin("dutyline"), "serve"]
        if pool_size:
            # This checkout's src, as the `dutyline` of the venv would not be when the venv
            # was built from another checkout.
            env.update(DUTYLINE_BENCH_POOL_SIZE=str(pool_size), PYTHONPATH=os.pathsep.join(
                [str(BENCH_DIR.parent), str(BENCH_DIR.parent / "src")]))
            cmd = [sys.executable, "-m", "bench.serve_tuned", "serve"]
        if keys is None:
            keys = {role: self.init_account(env, f"bench-{role}")["app_key"]
                    for role in ("list", "write")}
        server = self.start(name, cmd, env)
        server.keys = dict(keys)
        for i in range(SEED_TEAMS if seed else 0):
            post(server.url("/team/upsert", "list"),
                 {"team_name": f"seed-team-{i:02d}", "description": f"seeded team {i}"})
        listed = post(server.url("/team/list", "list"), {})["data"]
        if len(listed["items"]) != 20:
            raise RuntimeError(f"{name}: /team/list gave {len(listed['items'])} items, not 20")
        post(server.url("/team/upsert", "write"), {"team_name": f"probe-{secrets.token_hex(4)}"})
        return server

    def close(self) -> None:
        for server in reversed(self.servers):
            stop_process(server.proc)
        self.servers.clear()
        self.databases.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def wrk(self, url: str, script: str, seconds: float, *, body: str = "{}",
            tag: str = "", pid: int | None = None) -> dict[str, Any]:
        """One measurement with wrk (or the python loader): wrk's summary, plus req/s and the
        server's CPU µs per request when `pid` is given."""
        secs = str(max(1, round(seconds)))
        if self.loader == "wrk":
            cmd = ["wrk", f"-t{self.args.threads}", f"-c{self.args.connections}", f"-d{secs}s",
                   "--timeout", "10s", "--latency", "-s", str(WRK_DIR / script), url]
        else:
            cmd = [sys.executable, "-m", "bench.loadgen", url, script, secs,
                   str(self.args.connections)]
        env = {**os.environ, "WRK_BODY": body, "WRK_RUN_TAG": tag or secrets.token_hex(3)}
        cpu_before = process_cpu_seconds(pid) if pid else 0.0
        out = subprocess.run([*self.wrk_prefix, *cmd], env=env, capture_output=True, text=True,
                             check=False, timeout=seconds + 60)
        cpu_after = process_cpu_seconds(pid) if pid else 0.0
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("WRKJSON ")), None)
        if out.returncode != 0 or line is None:
            raise RuntimeError(f"{cmd[0]} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        result: dict[str, Any] = json.loads(line[len("WRKJSON "):])
        result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
        # Server CPU per request barely depends on how much of the shared CPU the server got.
        if pid and result["requests"]:
            result["cpu_us_per_req"] = (cpu_after - cpu_before) * 1e6 / result["requests"]
        result["socket_errors"] = sum(
            result[k] for k in ("connect_errors", "read_errors", "write_errors", "timeouts"))
        return result


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
    from bench.ingest import prepare

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
    p = argparse.ArgumentParser(prog="python -m bench.harness", description=__doc__)
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
