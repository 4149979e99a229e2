"""/monit/tools/catalog and /monit/tools/invoke against a Prometheus-API peer on loopback
(tests/fixtures/fake_prometheus.py): targets resolved from the data sources' series, the
exact PromQL each tool sends, per-tool failures, the whole-request error codes, limits,
permissions and scope."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from dutyline.config import Settings
from dutyline.monit import toolsets
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_prometheus import PromTable
from tests.fixtures.loopback import serve_asgi
from tests.monit.support import datasource

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000
HOST_PROBE = ('node_uname_info{instance=~"web\\\\-01(:[0-9]+)?"} or '
              'node_uname_info{nodename="web-01"}')
MYSQL_PROBE = 'mysql_up{instance=~"web\\\\-01(:[0-9]+)?"}'
WEB = {"instance": "web-01:9100", "job": "node", "nodename": "web-01"}
M = 'instance="web-01:9100"'


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(float(NOW))


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


@pytest.fixture
def table() -> PromTable:
    return PromTable(answers={HOST_PROBE: [({"__name__": "node_uname_info", **WEB}, 1.0)],
                              MYSQL_PROBE: []})


@pytest.fixture
def peer(table: PromTable) -> Iterator[str]:
    with serve_asgi(table.app()) as url:
        yield url


async def _catalog(api: Api, who: Person, **body: Any) -> Any:
    return await api.call("/monit/tools/catalog", body, key=who.key)


async def _invoke(api: Api, who: Person, **body: Any) -> Any:
    return await api.call("/monit/tools/invoke", body, key=who.key)


def test_the_probe_escapes_the_name_for_promql_and_re2() -> None:
    assert toolsets.HOST.probe_for("web-01") == HOST_PROBE.replace("\\\\", "\\\\")
    tricky = toolsets.MYSQL.probe_for('db"1.x')
    assert tricky == 'mysql_up{instance=~"db\\"1\\\\.x(:[0-9]+)?"}'
    assert toolsets.instance_matcher(["b:1", "a.b:2"]) == 'instance=~"a\\\\.b:2|b:1"'


async def test_the_catalogue_of_a_named_kind(api: Api, table: PromTable, peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer, name="prom-b")
    reply = await _catalog(api, owner, target_locator="host:web-01")
    assert reply.status == 200, reply.body
    data = reply.data
    assert data["target"] == {"target_locator": "host:web-01", "target_kind": "host",
                              "name": "web-01", "datasource_id": data["target"]["datasource_id"],
                              "datasource_name": "prom-b", "instances": ["web-01:9100"]}
    assert [t["name"] for t in data["tools"]] == ["host.cpu", "host.memory", "host.disk",
                                                  "host.network", "promql_query"]
    for tool in data["tools"]:
        assert tool["description"] and tool["input_schema"]["type"] == "object"
    assert data["toolset_hash"] == toolsets.HOST.toolset_hash
    # The kind was named: only its probe was sent, at the clock's time.
    assert table.asked == [HOST_PROBE]
    assert table.calls[0]["time"] == f"{NOW:.3f}"


async def test_the_kind_is_inferred_or_ambiguous(api: Api, table: PromTable,
                                                 peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer)
    reply = await _catalog(api, owner, target_locator="web-01")
    assert reply.data["target"]["target_kind"] == "host"
    assert sorted(table.asked) == sorted([HOST_PROBE, MYSQL_PROBE])
    # The same name scraped by mysqld_exporter too: the caller must say which.
    table.answers[MYSQL_PROBE] = [({"__name__": "mysql_up", "instance": "web-01:9104"}, 1.0)]
    ambiguous = await _catalog(api, owner, target_locator="web-01")
    assert (ambiguous.status, ambiguous.code) == (400, "ambiguous_target_kind")
    assert "host, mysql" in ambiguous.message
    named = await _catalog(api, owner, target_locator="web-01", target_kind="mysql")
    assert named.data["target"]["instances"] == ["web-01:9104"]
    assert [t["name"] for t in named.data["tools"]] == ["mysql.status", "mysql.replication",
                                                        "promql_query"]
    assert named.data["toolset_hash"] == toolsets.MYSQL.toolset_hash != toolsets.HOST.toolset_hash


async def test_target_unavailable_and_forward_failed(api: Api, table: PromTable,
                                                     peer: str) -> None:
    owner = await new_account(api)
    none = await _catalog(api, owner, target_locator="host:web-01")
    assert (none.status, none.code) == (400, "target_unavailable")
    chinese = await api.call("/monit/tools/catalog", {"target_locator": "host:web-01"},
                             key=owner.key, headers={"Accept-Language": "zh-CN"})
    assert chinese.message == "没有已启用的 prometheus 数据源可以查询目标 host:web-01"
    await datasource(api, owner, peer)
    table.answers[toolsets.HOST.probe_for("db-9")] = []
    unknown = await _invoke(api, owner, target_locator="host:db-9", tools=[{"tool": "host.cpu"}])
    assert (unknown.status, unknown.code) == (400, "target_unavailable")
    assert "host:db-9" in unknown.message
    # The probe the peer refuses (its table has no such series) is a failed forward.
    gone = await _catalog(api, owner, target_locator="mysql:web-01", target_kind="mysql")
    assert (gone.status, gone.code) == (400, "target_unavailable")
    table.answers.pop(MYSQL_PROBE)
    refused = await _catalog(api, owner, target_locator="mysql:web-01")
    assert (refused.status, refused.code) == (400, "forward_failed")
    assert "unknown series" in refused.message
    # A data source that cannot be reached at all.
    other = await new_account(api, "Globex")
    await datasource(api, other, "http://127.0.0.1:9", name="down")
    down = await _catalog(api, other, target_locator="host:web-01")
    assert (down.status, down.code) == (400, "forward_failed")
    assert "down" in down.message and "could not be reached" in down.message


async def test_invoke_runs_each_tool_with_its_exact_queries(api: Api, table: PromTable,
                                                            peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer)
    cpu = [
        f'100 * (1 - avg(rate(node_cpu_seconds_total{{{M},mode="idle"}}[10m])))',
        f"100 * avg by (mode) (rate(node_cpu_seconds_total{{{M}}}[10m]))",
        f'count(node_cpu_seconds_total{{{M},mode="idle"}})',
        f"max(node_load1{{{M}}})", f"max(node_load5{{{M}}})", f"max(node_load15{{{M}}})",
    ]
    answers = [[({}, 37.5)], [({"mode": "idle"}, 62.5), ({"mode": "user"}, 30.0)],
               [({}, 4.0)], [({}, 1.5)], [({}, 1.0)], [({}, 0.5)]]
    table.answers.update(dict(zip(cpu, answers, strict=True)))
    table.answers["sum(rate(http_requests_total[5m]))"] = [({"job": "api"}, 12.0)]
    table.asked.clear()
    reply = await _invoke(api, owner, target_locator="host:web-01", tools=[
        {"tool": "host.cpu", "params": {"window": "10m"}},
        {"tool": "nope"},
        {"tool": "host.memory"},  # its series are missing: this tool fails alone
        {"tool": "promql_query", "params": {"query": "sum(rate(http_requests_total[5m]))"}},
        {"tool": "host.cpu", "params": {"window": "1 day"}},
        {"tool": "promql_query", "params": {"query": "up", "extra": 1}},
    ])
    assert reply.status == 200, reply.body
    results = reply.data["results"]
    assert [r["tool"] for r in results] == ["host.cpu", "nope", "host.memory", "promql_query",
                                            "host.cpu", "promql_query"]
    assert results[0]["error"] == ""
    assert results[0]["data"] == {
        "summary": "CPU 37.5% busy on 4.0 cores; load 1.5/1.0/0.5 (1/5/15 min)",
        "data": {"usage_percent": 37.5, "mode_percent": {"idle": 62.5, "user": 30.0},
                 "cores": 4.0, "load1": 1.5, "load5": 1.0, "load15": 0.5}}
    assert results[1]["data"] is None
    assert results[1]["error"].startswith("unknown tool 'nope' for a host target")
    assert results[2]["data"] is None and "unknown series" in results[2]["error"]
    assert results[3] == {"tool": "promql_query", "error": "", "data": {
        "summary": "1 series (vector)", "data": [{"labels": {"job": "api"}, "value": 12.0}]}}
    assert results[4]["error"] == "params.window must match ^[1-9][0-9]{0,3}[smh]$"
    assert results[5]["error"] == "params.extra is not a parameter of this tool"
    # Exactly these queries went out: the probe, each tool's own, nothing for refused calls.
    memory_first = f"max(node_memory_MemTotal_bytes{{{M}}})"
    assert sorted(table.asked) == sorted([HOST_PROBE, *cpu, memory_first,
                                          "sum(rate(http_requests_total[5m]))"])


async def test_invoke_limits_and_the_toolset_hash(api: Api, table: PromTable,
                                                  peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer)
    none = await _invoke(api, owner, target_locator="host:web-01", tools=None)
    assert none.data["results"] == [] and none.data["target"]["target_kind"] == "host"
    nine = await _invoke(api, owner, target_locator="host:web-01",
                         tools=[{"tool": "host.cpu"}] * 9)
    assert (nine.status, nine.code) == (400, "InvalidParameter")
    assert "tools" in nine.message
    stale = await _invoke(api, owner, target_locator="host:web-01", tools=[],
                          toolset_hash="0123456789abcdef")
    assert (stale.status, stale.code) == (400, "unknown_toolset_hash")
    current = await _invoke(api, owner, target_locator="host:web-01", tools=[],
                            toolset_hash=toolsets.HOST.toolset_hash)
    assert current.status == 200


@pytest.mark.parametrize(("body", "field"), [
    ({}, "target_locator"),
    ({"target_locator": "web 01"}, "target_locator"),
    ({"target_locator": "web|01"}, "target_locator"),
    ({"target_locator": "web\u000101"}, "target_locator"),
    ({"target_locator": "h" * 257}, "target_locator"),
    ({"target_locator": "host:"}, "target_locator"),
    ({"target_locator": "web-01", "target_kind": "redis"}, "target_kind"),
    ({"target_locator": "host:web-01", "target_kind": "mysql"}, "target_kind"),
    ({"target_locator": "web-01", "account_id": 1}, "account_id"),
])
async def test_requests_are_validated(api: Api, peer: str, body: dict[str, Any],
                                      field: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer)
    for path in ("/monit/tools/catalog", "/monit/tools/invoke"):
        reply = await api.call(path, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), (path, reply.body)
        assert field in reply.message


async def test_permission_and_scope(api: Api, table: PromTable, peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer)
    reader = await new_member(api, owner, name="Reader")
    table.asked.clear()
    for path in ("/monit/tools/catalog", "/monit/tools/invoke"):
        reply = await api.call(path, {"target_locator": "host:web-01"}, key=reader.key)
        assert (reply.status, reply.code) == (403, "AccessDenied")
    assert table.asked == []  # refused before any data source was asked
    # Another account sees none of the owner's data sources.
    other = await new_account(api, "Globex")
    reply = await _catalog(api, other, target_locator="host:web-01")
    assert reply.code == "target_unavailable" and table.asked == []
    ok = await _catalog(api, owner, target_locator="host:web-01",
                        account_id=owner.account_id)
    assert ok.status == 200


async def test_disabled_data_sources_are_not_asked(api: Api, table: PromTable,
                                                   peer: str) -> None:
    owner = await new_account(api)
    ds_id = await datasource(api, owner, peer)
    update = {"id": ds_id, "type_ident": "prometheus", "name": "prom", "address": peer,
              "edge_cluster_name": "default", "enabled": False}
    assert (await api.call("/monit/datasource/update", update, key=owner.key)).status == 200
    reply = await _catalog(api, owner, target_locator="host:web-01")
    assert reply.code == "target_unavailable" and table.asked == []
