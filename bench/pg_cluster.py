"""A throwaway PostgreSQL cluster with the server's stock settings, for benches that must see
PostgreSQL as a deployment runs it.

Why: this machine's shared PostgreSQL runs with `autovacuum = off`, so a bench's database is
never analyzed and never vacuumed. With no statistics, a prepared statement's generic plan
(which asyncpg's statements settle on from their sixth run) is chosen while the tables are
nearly empty and kept for the life of the pooled connection: the job claim walked every
pending job, incident reads walked the account's list index (bench/README.md).
A deployment has autovacuum on, which analyzes the tables as they grow and so re-plans.

    with own_cluster() as base:   # "postgresql+asyncpg://postgres@127.0.0.1:<port>"
        ...

`initdb` and `pg_ctl` come from the installed server (`/usr/lib/postgresql/<v>/bin`, or
PATH). PostgreSQL refuses to run as root: as root the cluster is made and run as the
`postgres` user (`runuser`). The cluster's settings are initdb's, plus `max_connections`
100 and trust auth on loopback; it is stopped and removed on exit."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.harness import free_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda p: int(Path(p).parts[-3]))
    path = found[-1] if found else shutil.which(name)
    if not path:
        raise RuntimeError(f"{name} not found: install the PostgreSQL server package")
    return path


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@contextlib.contextmanager
def own_cluster() -> Iterator[str]:
    """Start a fresh cluster on a free loopback port; yield its SQLAlchemy base URL."""
    root = Path(tempfile.mkdtemp(prefix="dutyline-bench-pg-"))
    data, port = root / "data", free_port()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    subprocess.run(_as_owner([_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                              "--no-sync", "-E", "UTF8"]),
                   check=True, capture_output=True)
    options = (f"-c port={port} -c listen_addresses=127.0.0.1 "
               f"-c unix_socket_directories={root} -c max_connections=100")
    pg_ctl = _bin("pg_ctl")
    subprocess.run(_as_owner([pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"),
                              "-w", "start"]), check=True, capture_output=True)
    try:
        yield f"postgresql+asyncpg://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(_as_owner([pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
