"""The benchmark harness: what every benchmark shares (servers, scratch databases, load).

Benchmarks import it and it imports none of them; the scenarios `make bench` runs, and the
command itself, are bench/run.py's.

An HTTP scenario serves dutyline on a fresh SQLite file or PostgreSQL database (created, then
dropped), seeds it, and loads it alternately with the bare ASGI app (bench/bare_asgi.py) so
each ratio compares two measurements taken seconds apart. Load: wrk if installed, else
bench/loadgen.py.
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
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
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
