"""/monit/query/rows and /monit/query/diagnose against Prometheus- and Loki-API peers on
loopback (tests/fixtures/fake_prometheus.py, fake_loki.py): the exact requests sent (window,
step, paging), the shapes answered, log patterns, limits, permissions and scope. Also Loki
data sources themselves (their credentials are kept and masked as Prometheus ones)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from dutyline.config import Settings
from dutyline.monit import loki
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_loki import NS, LokiTable
from tests.fixtures.fake_prometheus import PromTable
from tests.fixtures.loopback import serve_asgi
from tests.monit.support import datasource

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000
ERRORS = '{app="pay"} |= "error"'


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(float(NOW))


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


@pytest.fixture
def table() -> PromTable:
    return PromTable(answers={"up": [({"__name__": "up", "instance": "web-01:9100"}, 1.0),
                                     ({"__name__": "up", "instance": "web-02:9100"}, 0.0)]})


@pytest.fixture
def peer(table: PromTable) -> Iterator[str]:
    with serve_asgi(table.app()) as url:
        yield url


@pytest.fixture
def logs() -> LokiTable:
    table = LokiTable()
    lines = [
        (NOW - 600, "payment 8812 failed: card declined for user 42"),
        (NOW - 500, "payment 8813 failed: card declined for user 7"),
        (NOW - 400, "upstream 10.0.0.12:8080 timed out after 3000ms"),
        (NOW - 300, "payment 8814 failed: card declined for user 42"),
        (NOW - 200, "upstream 10.0.0.13:8080 timed out after 2500ms"),
        (NOW - 100, "payment 8815 failed: card declined for user 9"),
        (NOW - 2000, "payment 1 failed: card declined for user 1"),  # before the window
    ]
    for at_s, line in lines:
        table.add(ERRORS, at_s, line, app="pay")
    return table


@pytest.fixture
def loki_peer(logs: LokiTable) -> Iterator[str]:
    with serve_asgi(logs.app()) as url:
        yield url


async def _loki_source(api: Api, owner: Person, address: str, name: str = "logs",
                       **cfg: Any) -> int:
    reply = await api.call("/monit/datasource/create", {
        "type_ident": "loki", "name": name, "address": address, "edge_cluster_name": "default",
        "payload": {"loki": cfg}}, key=owner.key)
    assert reply.status == 200, reply.body
    return int(reply.data["id"])


# --- rows ------------------------------------------------------------------------------


async def test_rows_of_a_prometheus_query(api: Api, table: PromTable, peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer, name="prom")
    reply = await api.call("/monit/query/rows", {"ds_type": "prometheus", "ds_name": "prom",
                                                 "expr": "up"}, key=owner.key)
    assert reply.status == 200, reply.body
    assert reply.data == [
        {"fields": {"__name__": "up", "instance": "web-01:9100"}, "values": {"value": 1.0}},
        {"fields": {"__name__": "up", "instance": "web-02:9100"}, "values": {"value": 0.0}}]
    assert table.calls[-1] == {"path": "/api/v1/query", "query": "up", "time": f"{NOW:.3f}"}
    at = await api.call("/monit/query/rows", {"ds_type": "prometheus", "ds_name": "prom",
                                              "expr": "up", "args": {"time": "1700000000"}},
                        key=owner.key)
    assert at.status == 200 and table.calls[-1]["time"] == "1700000000.000"
    failed = await api.call("/monit/query/rows", {"ds_type": "prometheus", "ds_name": "prom",
                                                  "expr": "nope"}, key=owner.key)
    assert (failed.status, failed.code) == (400, "BadRequest")
    assert "unknown series" in failed.message


@pytest.mark.parametrize(("body", "code", "field"), [
    ({"ds_name": "prom", "expr": "up"}, "InvalidParameter", "ds_type"),
    ({"ds_type": "graphite", "ds_name": "prom", "expr": "up"}, "InvalidParameter", "ds_type"),
    ({"ds_type": "mysql", "ds_name": "prom", "expr": "up"}, "InvalidParameter", "ds_type"),
    ({"ds_type": "prometheus", "expr": "up"}, "InvalidParameter", "ds_name"),
    ({"ds_type": "prometheus", "ds_name": "prom"}, "InvalidParameter", "expr"),
    ({"ds_type": "prometheus", "ds_name": "other", "expr": "up"}, "ResourceNotFound", "other"),
    ({"ds_type": "loki", "ds_name": "prom", "expr": "up"}, "ResourceNotFound", "prom"),
    ({"ds_type": "prometheus", "ds_name": "prom", "expr": "up", "args": {"step": "1"}},
     "InvalidParameter", "args.step"),
    ({"ds_type": "prometheus", "ds_name": "prom", "expr": "up", "args": {"time": "x"}},
     "InvalidParameter", "args.time"),
    ({"ds_type": "prometheus", "ds_name": "prom", "expr": "up", "account_id": 7},
     "InvalidParameter", "account_id"),
])
async def test_rows_requests_are_validated(api: Api, table: PromTable, peer: str,
                                           body: dict[str, Any], code: str,
                                           field: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer, name="prom")
    reply = await api.call("/monit/query/rows", body, key=owner.key)
    assert (reply.status, reply.code) == (400, code), reply.body
    assert field in reply.message
    assert table.asked == []


async def test_rows_and_diagnose_need_the_permission_and_stay_in_the_account(
        api: Api, table: PromTable, peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer, name="prom")
    reader = await new_member(api, owner, name="Reader")
    other = await new_account(api, "Globex")
    rows = {"ds_type": "prometheus", "ds_name": "prom", "expr": "up"}
    diagnose = {"ds_type": "prometheus", "ds_name": "prom", "input": {"query": "up"}}
    for path, body in (("/monit/query/rows", rows), ("/monit/query/diagnose", diagnose)):
        denied = await api.call(path, body, key=reader.key)
        assert (denied.status, denied.code) == (403, "AccessDenied")
        hidden = await api.call(path, body, key=other.key)
        assert (hidden.status, hidden.code) == (400, "ResourceNotFound")
    assert table.asked == []


# --- diagnose: metric trends -----------------------------------------------------------


async def test_metric_trends_over_the_default_window(api: Api, table: PromTable,
                                                     peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer, name="prom")
    expr = "rate(http_errors_total[5m])"
    start = NOW - 900
    table.ranges[expr] = [
        ({"route": "/pay"}, [(start + 15 * i, 1.0 + i) for i in range(61)]),
        ({"route": "/home"}, [(start + 15 * i, 5.0) for i in range(61)]),
        ({"route": "/cart"}, [(start, 10.0), (start + 450, 20.0), (NOW, 5.0)]),
    ]
    reply = await api.call("/monit/query/diagnose", {
        "ds_type": "prometheus", "ds_name": "prom", "input": {"query": expr}}, key=owner.key)
    assert reply.status == 200, reply.body
    data = reply.data
    # Both ends 0: the last 15 minutes; the step keeps each series to 120 points or fewer.
    assert table.calls[-1] == {"path": "/api/v1/query_range", "query": expr,
                               "start": f"{start:.3f}", "end": f"{NOW:.3f}", "step": "15"}
    assert data["operation"] == "metric_trends" and data["query"] == expr
    assert data["window"] == {"start": start, "end": NOW}
    assert (data["scanned"], data["truncated"]) == (3, False)
    # Largest relative change first.
    assert [r["labels"]["route"] for r in data["results"]] == ["/pay", "/cart", "/home"]
    pay, cart, home = data["results"]
    assert pay == {"labels": {"route": "/pay"}, "points": 61, "first": 1.0, "last": 61.0,
                   "min": 1.0, "max": 61.0, "avg": 31.0, "peak_at": NOW, "change": 60.0,
                   "change_percent": 6000.0, "trend": "rising"}
    assert (cart["trend"], cart["change_percent"], cart["peak_at"]) == ("falling", -50.0,
                                                                        start + 450)
    assert home["trend"] == "flat"
    # max_patterns caps the series answered.
    capped = await api.call("/monit/query/diagnose", {
        "ds_type": "prometheus", "ds_name": "prom", "input": {"query": expr},
        "max_patterns": 1, "time_range": {"start": NOW - 6 * 3600, "end": NOW}},
        key=owner.key)
    assert [r["labels"]["route"] for r in capped.data["results"]] == ["/pay"]
    assert capped.data["truncated"] is True
    assert table.calls[-1]["step"] == "180"  # 6 h over 120 points


@pytest.mark.parametrize(("body", "field"), [
    ({"time_range": {"start": NOW - 6 * 3600 - 1, "end": NOW}}, "time_range"),
    ({"time_range": {"start": NOW, "end": NOW - 60}}, "time_range"),
    ({"max_logs_scanned": 50_001}, "max_logs_scanned"),
    ({"max_patterns": 51}, "max_patterns"),
    ({"timeout_seconds": 31}, "timeout_seconds"),
    ({"operation": "log_patterns"}, "operation"),
    ({"operation": "forecast"}, "operation"),
    ({"input": {"query": ""}}, "input.query"),
    ({"ds_type": "mysql"}, "operation"),
])
async def test_diagnose_limits_are_refused(api: Api, table: PromTable, peer: str,
                                           body: dict[str, Any], field: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer, name="prom")
    request = {"ds_type": "prometheus", "ds_name": "prom", "input": {"query": "up"}, **body}
    reply = await api.call("/monit/query/diagnose", request, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
    assert field in reply.message
    assert table.calls == []


async def test_a_six_hour_window_and_the_maximums_are_accepted(api: Api, table: PromTable,
                                                               peer: str) -> None:
    owner = await new_account(api)
    await datasource(api, owner, peer, name="prom")
    table.ranges["up"] = []
    reply = await api.call("/monit/query/diagnose", {
        "ds_type": "prometheus", "ds_name": "prom", "input": {"query": "up"},
        "operation": "metric_trends", "time_range": {"start": NOW - 7200, "end": NOW - 3600},
        "max_logs_scanned": 50_000, "max_patterns": 50, "timeout_seconds": 30}, key=owner.key)
    assert reply.status == 200, reply.body
    assert reply.data["results"] == [] and reply.data["window"] == {"start": NOW - 7200,
                                                                    "end": NOW - 3600}
    # Only an end: the 15 minutes up to it.
    only_end = await api.call("/monit/query/diagnose", {
        "ds_type": "prometheus", "ds_name": "prom", "input": {"query": "up"},
        "time_range": {"end": NOW - 60}}, key=owner.key)
    assert only_end.data["window"] == {"start": NOW - 960, "end": NOW - 60}


# --- Loki: data sources, rows, log patterns ---------------------------------------------


async def test_loki_data_sources_keep_their_secrets(api: Api, logs: LokiTable,
                                                    loki_peer: str) -> None:
    owner = await new_account(api)
    ds_id = await _loki_source(api, owner, loki_peer, basic_auth_enabled=True,
                               basic_auth_username="u", basic_auth_password="hunter2",
                               headers=["X-Scope-OrgID: tenant-1"])
    info = (await api.call("/monit/datasource/info", {"id": ds_id}, key=owner.key)).data
    assert info["type_ident"] == "loki" and "prometheus" not in info["payload"]
    assert info["payload"]["loki"].get("basic_auth_password", "") == ""
    assert info["payload"]["loki"]["headers"] == ["X-Scope-OrgID: ******"]
    # The masked header keeps its value on the same origin; both are sent.
    update = {"id": ds_id, "type_ident": "loki", "name": "logs", "address": loki_peer,
              "edge_cluster_name": "default", "payload": {"loki": {
                  "basic_auth_enabled": True, "basic_auth_username": "u",
                  "headers": ["X-Scope-OrgID: ******"]}}}
    assert (await api.call("/monit/datasource/update", update, key=owner.key)).status == 200
    rows = await api.call("/monit/query/rows", {"ds_type": "loki", "ds_name": "logs",
                                                "expr": ERRORS}, key=owner.key)
    assert rows.status == 200, rows.body
    assert logs.headers[-1]["authorization"] == "Basic dTpodW50ZXIy"  # u:hunter2
    assert logs.headers[-1]["x-scope-orgid"] == "tenant-1"
    listed = await api.call("/monit/datasource/list", {"type": "loki"}, key=owner.key)
    assert [d["id"] for d in listed.data] == [ds_id]
    # A rule cannot evaluate a log data source (yet): named by id, it is refused.
    channel = (await api.call("/channel/create", {"channel_name": "C"}, key=owner.key)).data
    rule = {"name": "r", "ds_type": "prometheus", "ds_ids": [ds_id], "cron_pattern": "@every 1m",
            "channel_ids": [channel["channel_id"]],
            "rule_configs": {"queries": [{"name": "A", "expr": "up"}],
                             "check_threshold": {"enabled": True, "critical": "$A > 0"}}}
    refused = await api.call("/monit/rule/create", rule, key=owner.key)
    assert refused.code == "InvalidParameter" and "not of type prometheus" in refused.message


async def test_loki_rows(api: Api, logs: LokiTable, loki_peer: str) -> None:
    owner = await new_account(api)
    await _loki_source(api, owner, loki_peer, headers=["X-Scope-OrgID: tenant-1"])
    reply = await api.call("/monit/query/rows", {"ds_type": "loki", "ds_name": "logs",
                                                 "expr": ERRORS, "args": {"limit": "2"}},
                           key=owner.key)
    assert reply.status == 200, reply.body
    assert reply.data == [
        {"fields": {"app": "pay"}, "values": {
            "timestamp": NOW - 100, "line": "payment 8815 failed: card declined for user 9"}},
        {"fields": {"app": "pay"}, "values": {
            "timestamp": NOW - 200, "line": "upstream 10.0.0.13:8080 timed out after 2500ms"}}]
    assert logs.calls[-1] == {"query": ERRORS, "start": str((NOW - 900) * NS),
                              "end": str(NOW * NS), "limit": "2", "direction": "backward"}
    bad = await api.call("/monit/query/rows", {"ds_type": "loki", "ds_name": "logs",
                                               "expr": "{app=", "args": {}}, key=owner.key)
    assert bad.code == "BadRequest" and "parse error" in bad.message


async def test_log_patterns(api: Api, logs: LokiTable, loki_peer: str) -> None:
    owner = await new_account(api)
    await _loki_source(api, owner, loki_peer)
    reply = await api.call("/monit/query/diagnose", {
        "ds_type": "loki", "ds_name": "logs", "input": {"query": ERRORS}}, key=owner.key)
    assert reply.status == 200, reply.body
    data = reply.data
    assert data["operation"] == "log_patterns"
    assert (data["scanned"], data["truncated"]) == (6, False)
    assert [{k: r[k] for k in ("signature", "sample_count", "first_seen")}
            for r in data["results"]] == [
        {"signature": "payment <NUM> failed: card declined for user <NUM>", "sample_count": 4,
         "first_seen": NOW - 600},
        {"signature": "upstream <IP> timed out after <NUM>", "sample_count": 2,
         "first_seen": NOW - 400},
    ]
    assert data["results"][0]["sample"] == "payment 8815 failed: card declined for user 9"
    assert logs.calls == [{"query": ERRORS, "start": str((NOW - 900) * NS),
                           "end": str(NOW * NS), "limit": "5000", "direction": "backward"}]


async def test_log_patterns_read_pages_up_to_the_scan_limit(
        api: Api, logs: LokiTable, loki_peer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = await new_account(api)
    await _loki_source(api, owner, loki_peer)
    monkeypatch.setattr(loki, "PAGE_LINES", 2)  # Loki's page size, small enough to see
    reply = await api.call("/monit/query/diagnose", {
        "ds_type": "loki", "ds_name": "logs", "input": {"query": ERRORS},
        "max_logs_scanned": 5, "max_patterns": 1}, key=owner.key)
    assert reply.status == 200, reply.body
    assert (reply.data["scanned"], reply.data["truncated"]) == (5, True)
    assert [r["sample_count"] for r in reply.data["results"]] == [3]
    start = str((NOW - 900) * NS)
    # Each page ends (exclusive) at the oldest line of the one before.
    assert [(c["end"], c["limit"]) for c in logs.calls] == [
        (str(NOW * NS), "2"), (str((NOW - 200) * NS), "2"), (str((NOW - 400) * NS), "1")]
    assert {c["start"] for c in logs.calls} == {start}


async def test_timeout_seconds_bounds_the_diagnosis(api: Api) -> None:
    """A data source that never answers: the diagnosis gives up after timeout_seconds."""
    import asyncio

    from starlette.applications import Starlette
    from starlette.routing import Route

    async def hang(_: Any) -> Any:
        await asyncio.Event().wait()  # ended by the peer's shutdown

    owner = await new_account(api)
    app = Starlette(routes=[Route("/api/v1/query_range", hang, methods=["POST"])])
    with serve_asgi(app) as url:
        await datasource(api, owner, url, name="slow")
        reply = await api.call("/monit/query/diagnose", {
            "ds_type": "prometheus", "ds_name": "slow", "input": {"query": "up"},
            "timeout_seconds": 1}, key=owner.key)
    assert (reply.status, reply.code) == (400, "BadRequest")
    assert "within 1 s" in reply.message
