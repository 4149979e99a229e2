"""The real `prometheus` and `prometheus-alertmanager` binaries (Debian's packages) on
loopback, started once per test session.

Prometheus scrapes itself and a tiny exporter of ours (whose gauge a test sets) every
second. Alertmanager sends every alert, firing and resolved, to a webhook on a loopback port
fixed for the session, where a test serves the app, with an integration key fixed for the
session that the test stores in its own database.

Binaries missing: skipped with the reason, unless DUTYLINE_TEST_PROMETHEUS=1 (.ci/run, which
installs them) makes that a failure."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.fixtures.loopback import serve_asgi
from tests.fixtures.server import free_port
from tests.fixtures.tls_certs import Issued, ThrowawayCA

REQUIRED_ENV = "DUTYLINE_TEST_PROMETHEUS"
START_TIMEOUT_S = 30.0
WEBHOOK_KEY = "ik_monit-real-alertmanager-session-key-0123456789abcdef"


def binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    reason = f"{name} is not installed (apt-get install -y prometheus prometheus-alertmanager)"
    if os.environ.get(REQUIRED_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRED_ENV}=1 requires it")
    pytest.skip(reason)


class Gauge:
    """The exporter's one gauge, `demo_queue_depth`, set by tests."""

    value = 0.0


async def _metrics(_: Request) -> PlainTextResponse:
    text = ("# TYPE demo_queue_depth gauge\n"
            f'demo_queue_depth{{queue="orders"}} {Gauge.value}\n')
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


def _wait(url: str, process: subprocess.Popen[bytes], what: str,
          verify: ssl.SSLContext | bool = True) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1, verify=verify).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not become ready")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass(frozen=True)
class PrometheusPeer:
    url: str


@pytest.fixture(scope="session")
def prometheus_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusPeer]:
    exe = binary("prometheus")
    root = tmp_path_factory.mktemp("prometheus")
    port = free_port()
    exporter_app = Starlette(routes=[Route("/metrics", _metrics)])
    with serve_asgi(exporter_app) as exporter_url:
        config = root / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            f"  - job_name: prometheus\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{port}']\n"
            f"  - job_name: demo\n    static_configs:\n"
            f"      - targets: ['{exporter_url.removeprefix('http://')}']\n"
        )
        process = subprocess.Popen(
            [exe, f"--config.file={config}", f"--storage.tsdb.path={root / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=(root / "stderr.log").open("wb"),
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait(f"{url}/-/ready", process, "prometheus")
            yield PrometheusPeer(url)
        finally:
            _stop(process)


@dataclass(frozen=True)
class PrometheusTlsPeer:
    """A real Prometheus serving its API over HTTPS only to clients with a certificate of
    `ca` (web.config.file: RequireAndVerifyClientCert); its certificate names `server_name`."""

    url: str
    ca: ThrowawayCA
    client: Issued
    server_name: str = "prometheus.test"


@pytest.fixture(scope="session")
def prometheus_tls_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusTlsPeer]:
    exe = binary("prometheus")
    root = tmp_path_factory.mktemp("prometheus-tls")
    ca = ThrowawayCA()
    cert, key = ca.issue("prometheus", dns=PrometheusTlsPeer.server_name).write(root, "server")
    client = ca.issue("dutyline", client=True)
    (root / "ca.crt").write_text(ca.cert_pem)
    port = free_port()
    (root / "web.yml").write_text(
        f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
        f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {root / 'ca.crt'}\n")
    (root / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n"
        "scrape_configs:\n  - job_name: static\n    static_configs:\n"
        "      - targets: ['127.0.0.1:1']\n")  # nothing answers: up == 0 after a scrape
    process = subprocess.Popen(
        [exe, f"--config.file={root / 'prometheus.yml'}", f"--web.config.file={root / 'web.yml'}",
         f"--storage.tsdb.path={root / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
         "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=(root / "stderr.log").open("wb"),
    )
    try:
        verify = ssl.create_default_context(cadata=ca.cert_pem)
        verify.check_hostname = False  # readiness only: the test checks the name itself
        verify.load_cert_chain(*client.write(root, "client"))
        url = f"https://127.0.0.1:{port}"
        _wait(f"{url}/-/ready", process, "prometheus (TLS)", verify)
        yield PrometheusTlsPeer(url, ca, client)
    finally:
        _stop(process)


@dataclass(frozen=True)
class AlertmanagerPeer:
    url: str
    webhook_port: int  # where the test serves the app
    integration_key: str

    def post_alert(self, labels: dict[str, str], annotations: dict[str, str], *,
                   resolved: bool) -> None:
        now = time.time()
        body: dict[str, object] = {"labels": labels, "annotations": annotations,
                                   "startsAt": _iso(now - 60)}
        body["endsAt"] = _iso(now - 1 if resolved else now + 3600)
        reply = httpx.post(f"{self.url}/api/v2/alerts", json=[body], timeout=5)
        reply.raise_for_status()


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + "Z"


@pytest.fixture(scope="session")
def alertmanager_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AlertmanagerPeer]:
    exe = binary("prometheus-alertmanager")
    root: Path = tmp_path_factory.mktemp("alertmanager")
    port, webhook_port = free_port(), free_port()
    config = root / "alertmanager.yml"
    config.write_text(
        "route:\n  receiver: dutyline\n  group_by: ['alertname']\n"
        "  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
        "receivers:\n  - name: dutyline\n    webhook_configs:\n"
        f"      - url: 'http://127.0.0.1:{webhook_port}/event/push/alert/prometheus"
        f"?integration_key={WEBHOOK_KEY}'\n        send_resolved: true\n"
    )
    process = subprocess.Popen(
        [exe, f"--config.file={config}", f"--storage.path={root / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
         "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=(root / "stderr.log").open("wb"),
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait(f"{url}/-/ready", process, "alertmanager")
        yield AlertmanagerPeer(url, webhook_port, WEBHOOK_KEY)
    finally:
        _stop(process)
