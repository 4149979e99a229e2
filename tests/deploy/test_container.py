"""The container image of docs/deploy.md, built and started with podman (Debian's packages):
deploy/container/Containerfile on the base deploy/container/make-base makes from Debian's
packages (.ci/run makes it once per machine), with dutyline's wheel and its dependencies'
wheels in the build context, built without network. The started container serves the API on
a published loopback port, answers its own health probe, runs as a user that is not root, and
keeps its data in its one volume: a new container on the same volume answers the same key.

podman runs with runc and the host's own limits: on machines whose control groups crun cannot
drive, and whose hard limits are below podman's defaults.

podman or the base image missing: skipped with the reason, unless DUTYLINE_TEST_CONTAINER=1
(.ci/run, which installs podman and makes the base) makes that a failure."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.server import free_port

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("container"),
              pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = "localhost/dutyline-debian-base:bookworm"
REQUIRED_ENV = "DUTYLINE_TEST_CONTAINER"
START_TIMEOUT_S = 180.0


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRED_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRED_ENV}=1 requires it")
    pytest.skip(reason)


def _podman() -> list[str]:
    podman, runc = shutil.which("podman"), shutil.which("runc") or (
        "/usr/sbin/runc" if Path("/usr/sbin/runc").exists() else None)
    if podman is None or runc is None:
        _unavailable("podman or runc is not installed (apt-get install -y podman runc)")
    assert podman is not None and runc is not None
    return [podman, "--runtime", runc]


def _limits() -> list[str]:
    """The host's hard limits (processes: no more than the kernel's pid_max, which some
    kernels refuse to exceed)."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    with contextlib.suppress(OSError, ValueError):
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        nproc = pid_max if nproc == resource.RLIM_INFINITY else min(nproc, pid_max)
    return [f"--ulimit=nofile={nofile}:{nofile}", f"--ulimit=nproc={nproc}:{nproc}"]


def _run(*args: str | Path, timeout: float = 600) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _context(folder: Path) -> Path:
    """The build context: the Containerfile, and in dist/ the wheel of dutyline and of each
    of its dependencies."""
    dist = folder / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
         "--wheel-dir", dist, ROOT)
    [wheel] = dist.glob("dutyline-*.whl")
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", dist, wheel)
    shutil.copy(ROOT / "deploy" / "container" / "Containerfile", folder / "Containerfile")
    return folder


@contextlib.contextmanager
def _container(podman: list[str], image: str, volume: str, port: int) -> Iterator[str]:
    name = f"dutyline-test-{secrets.token_hex(4)}"
    _run(*podman, "run", "--detach", "--name", name, *_limits(),
         "--publish", f"127.0.0.1:{port}:8080", "--volume", f"{volume}:/var/lib/dutyline",
         image)
    try:
        _wait_healthy(podman, name, port)
        yield name
    finally:
        subprocess.run([*podman, "rm", "--force", "--time", "10", name], capture_output=True,
                       timeout=120, check=False)


def _logs(podman: list[str], name: str) -> str:
    done = subprocess.run([*podman, "logs", name], capture_output=True, text=True, timeout=60,
                          check=False)
    return done.stdout + done.stderr


def _wait_healthy(podman: list[str], name: str, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                if client.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    return
            time.sleep(0.5)
    raise AssertionError(f"the container did not serve within {START_TIMEOUT_S} s:\n"
                         f"{_logs(podman, name)}")


def test_the_image_builds_serves_probes_runs_unprivileged_and_keeps_its_volume(
        tmp_path: Path) -> None:
    podman = _podman()
    has_base = subprocess.run([*podman, "image", "exists", BASE_IMAGE], timeout=60,
                              check=False)
    if has_base.returncode != 0:
        _unavailable(f"no base image {BASE_IMAGE} (deploy/container/make-base makes it)")
    image = f"localhost/dutyline-test:{secrets.token_hex(4)}"
    volume = f"dutyline-test-{secrets.token_hex(4)}"
    context = _context(tmp_path / "context")
    try:
        _run(*podman, "build", "--format", "docker", "--network", "none", *_limits(),
             "--tag", image, context, timeout=1200)
        _run(*podman, "volume", "create", volume)
        port = free_port()
        with _container(podman, image, volume, port) as first:
            printed = re.search(r"This app key is shown once:\s+(\S+)", _logs(podman, first))
            assert printed, _logs(podman, first)
            key = printed[1]
            answer = httpx.post(f"http://127.0.0.1:{port}/team/list", params={"app_key": key},
                                json={}, timeout=10, trust_env=False)
            assert answer.status_code == 200 and "data" in answer.json(), answer.text
            probe = subprocess.run([*podman, "healthcheck", "run", first],
                                   capture_output=True, text=True, timeout=60, check=False)
            assert probe.returncode == 0, probe.stdout + probe.stderr
            assert _run(*podman, "exec", first, "id", "-u").strip() == "10001"
            listed = _run(*podman, "exec", first, "ls", "/var/lib/dutyline").split()
            assert "dutyline.db" in listed
        with _container(podman, image, volume, port) as second:
            assert "This app key is shown once" not in _logs(podman, second)
            again = httpx.post(f"http://127.0.0.1:{port}/team/list", params={"app_key": key},
                               json={}, timeout=10, trust_env=False)
            assert again.status_code == 200, again.text
    finally:
        subprocess.run([*podman, "volume", "rm", "--force", volume], capture_output=True,
                       timeout=120, check=False)
        subprocess.run([*podman, "rmi", "--force", image], capture_output=True, timeout=120,
                       check=False)
