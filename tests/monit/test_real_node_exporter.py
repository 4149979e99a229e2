"""The host tools against the real binaries: Debian's `prometheus` scraping Debian's
`prometheus-node-exporter` every second. Every query a host tool sends must be valid PromQL
over the series node_exporter really exports, so each tool answers numbers, not nulls; rows
and a metric trend come from the same Prometheus.

Binaries missing: skipped with the reason, unless DUTYLINE_TEST_PROMETHEUS=1 (.ci/run) makes
that a failure."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dutyline.config import Settings
from tests.fixtures.accounts import new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.server import free_port
from tests.monit.real_peers import _stop, _wait, binary
from tests.monit.support import datasource

pytestmark = pytest.mark.anyio
WAIT_S = 30.0
COLLECTORS = ("cpu", "meminfo", "filesystem", "diskstats", "netdev", "loadavg", "uname")


class RealClock:
    def now(self) -> float:
        return time.time()


@pytest.fixture(scope="module")
def node_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(Prometheus URL, node_exporter's instance label)."""
    prometheus, node_exporter = binary("prometheus"), binary("prometheus-node-exporter")
    root: Path = tmp_path_factory.mktemp("node-prometheus")
    node_port, prom_port = free_port(), free_port()
    instance = f"127.0.0.1:{node_port}"
    exporter = subprocess.Popen(
        [node_exporter, f"--web.listen-address={instance}", "--collector.disable-defaults",
         *(f"--collector.{c}" for c in COLLECTORS)],
        stdout=subprocess.DEVNULL, stderr=(root / "node.log").open("wb"))
    try:
        _wait(f"http://{instance}/metrics", exporter, "node_exporter")
        (root / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n  - job_name: node\n    static_configs:\n"
            f"      - targets: ['{instance}']\n")
        server = subprocess.Popen(
            [prometheus, f"--config.file={root / 'prometheus.yml'}",
             f"--storage.tsdb.path={root / 'data'}",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=(root / "prometheus.log").open("wb"))
        try:
            url = f"http://127.0.0.1:{prom_port}"
            _wait(f"{url}/-/ready", server, "prometheus")
            yield url, instance
        finally:
            _stop(server)
    finally:
        _stop(exporter)


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=RealClock()) as client:
        yield client


async def _eventually(api: Api, path: str, body: dict[str, Any], key: str,
                      ready: Any) -> Any:
    """Polls until Prometheus has scraped enough for `ready(reply)` (rates need two
    samples of each series)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        reply = await api.call(path, body, key=key)
        if reply.status == 200 and ready(reply.data):
            return reply
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never became ready: {reply.body}")
        await asyncio.sleep(0.5)


async def test_host_tools_answer_from_a_real_node_exporter(
        api: Api, node_prometheus: tuple[str, str]) -> None:
    url, instance = node_prometheus
    owner = await new_account(api)
    await datasource(api, owner, url, name="node-prom")
    host = instance.split(":")[0]  # the locator without the port matches it too
    catalog = await _eventually(api, "/monit/tools/catalog", {"target_locator": host},
                                owner.key, lambda d: True)
    assert catalog.data["target"]["target_kind"] == "host"
    assert catalog.data["target"]["instances"] == [instance]
    tools = [{"tool": t} for t in ("host.cpu", "host.memory", "host.disk", "host.network")]

    def all_numbers(data: Any) -> bool:
        cpu, memory, disk, network = (r["data"] for r in data["results"])
        return (cpu is not None and cpu["data"]["usage_percent"] is not None
                and memory["data"]["total_bytes"] and network["data"]["receive_bytes_per_second"]
                is not None and disk is not None)

    reply = await _eventually(api, "/monit/tools/invoke",
                              {"target_locator": f"host:{host}", "tools": tools}, owner.key,
                              all_numbers)
    results = reply.data["results"]
    assert [r["error"] for r in results] == ["", "", "", ""]
    cpu, memory, disk, network = (r["data"]["data"] for r in results)
    assert 0 <= cpu["usage_percent"] <= 100 and cpu["cores"] >= 1
    assert cpu["load1"] is not None and "idle" in cpu["mode_percent"]
    assert 0 < memory["available_bytes"] <= memory["total_bytes"]
    assert 0 <= memory["used_percent"] <= 100
    assert isinstance(disk["used_percent_by_mountpoint"], dict)
    assert "lo" not in network["receive_bytes_per_second"]
    for result in results:
        assert result["data"]["summary"] and "unknown" not in result["data"]["summary"]


async def test_rows_and_a_trend_from_a_real_prometheus(
        api: Api, node_prometheus: tuple[str, str]) -> None:
    url, instance = node_prometheus
    owner = await new_account(api)
    await datasource(api, owner, url, name="node-prom")
    rows = await _eventually(api, "/monit/query/rows", {
        "ds_type": "prometheus", "ds_name": "node-prom", "expr": 'up{job="node"}'},
        owner.key, lambda d: bool(d))
    assert rows.data == [{"fields": {"__name__": "up", "instance": instance, "job": "node"},
                          "values": {"value": 1.0}}]
    trend = await _eventually(api, "/monit/query/diagnose", {
        "ds_type": "prometheus", "ds_name": "node-prom",
        "input": {"query": "node_memory_MemTotal_bytes"}}, owner.key,
        lambda d: bool(d["results"]))
    (series,) = trend.data["results"]
    assert series["labels"]["instance"] == instance
    assert series["trend"] == "flat" and series["min"] == series["max"] > 0
