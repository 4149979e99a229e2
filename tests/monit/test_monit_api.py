"""/monit/datasource/* and /monit/rule/*: records, validation, secrets, scope, permissions,
and evaluation against a scripted Prometheus (httpx mock transport): incidents open and
close, failing data sources fabricate nothing, deletion leaves no alert behind."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.platform import audit_log
from dutyline.db.tables.scheduler import work_schedule
from dutyline.monit import engine, repository
from dutyline.work import scheduler
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.monit.support import (
    alerts,
    channel,
    create_rule,
    datasource,
    incidents,
    rule_body,
    rule_info,
    run_due,
)

pytestmark = pytest.mark.anyio
PROM = "http://127.0.0.1:9"


@dataclass
class FakeProm:
    """Answers /api/v1/query with the scripted series (or fault)."""

    value: float | None = 1.0
    fault: str = ""  # "", "500", "json", "timeout"
    series: list[dict[str, str]] = field(default_factory=lambda: [{"instance": "web-1"}])
    requests: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.fault == "timeout":
            raise httpx.ReadTimeout("slow", request=request)
        if self.fault == "500":
            return httpx.Response(500, text="boom")
        if self.fault == "json":
            return httpx.Response(200, text="{not json")
        result = [] if self.value is None else [
            {"metric": {"__name__": "up", **s}, "value": [1, str(self.value)]}
            for s in self.series]
        return httpx.Response(200, json={"status": "success",
                                         "data": {"resultType": "vector", "result": result}})


@pytest.fixture
def prom() -> Iterator[FakeProm]:
    fake = FakeProm()
    engine.transport_override = httpx.MockTransport(fake.handle)
    yield fake
    engine.transport_override = None


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


@dataclass
class World:
    api: Api
    owner: Person
    channel_id: int
    ds_id: int


@pytest.fixture
async def w(api: Api, prom: FakeProm) -> World:
    owner = await new_account(api, "Acme")
    channel_id = await channel(api, owner)
    ds_id = await datasource(api, owner, PROM)
    return World(api, owner, channel_id, ds_id)


async def tick(w: World, clock: FakeClock, seconds: float = 10) -> None:
    clock.advance(seconds)
    await run_due(w.api, int(clock.now() * 1000))


# --- data sources ----------------------------------------------------------------------


async def test_datasource_records_hide_credentials(api: Api, prom: FakeProm) -> None:
    owner = await new_account(api)
    ds_id = await datasource(api, owner, PROM, basic_auth_enabled=True,
                             basic_auth_username="u", basic_auth_password="hunter2",
                             headers=["X-Scope-OrgID: tenant-1"], params=["dedup=true"])
    info = (await api.call("/monit/datasource/info", {"id": ds_id}, key=owner.key)).data
    assert info["type_ident"] == "prometheus" and info["address"] == PROM
    assert "hunter2" not in json.dumps(info)
    assert info["payload"]["prometheus"]["headers"] == ["X-Scope-OrgID: ******"]
    assert {"id", "account_id", "type_ident", "name", "enabled", "note", "address",
            "edge_cluster_name", "updated_at"} <= set(info)
    prometheus = info["payload"]["prometheus"]
    assert (prometheus["basic_auth_enabled"], prometheus["basic_auth_username"],
            prometheus["basic_auth_password"], prometheus["tls_skip_verify"]) == (
        True, "u", "", False)
    listed = (await api.call("/monit/datasource/list", {"type": "prometheus"},
                             key=owner.key)).data
    assert [d["id"] for d in listed] == [ds_id]
    # The ad-hoc query carries the stored credentials and parameters.
    rows = (await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"},
                           key=owner.key)).data
    assert rows["rows"] == [{"labels": {"__name__": "up", "instance": "web-1"}, "value": 1.0}]
    sent = prom.requests[-1]
    assert sent.headers["authorization"].startswith("Basic ")
    assert sent.headers["x-scope-orgid"] == "tenant-1"
    assert b"dedup=true" in sent.content and b"query=up" in sent.content


async def test_query_parameter_values_are_masked_and_kept_by_the_mask(
        api: Api, prom: FakeProm) -> None:
    owner = await new_account(api)
    ds_id = await datasource(api, owner, PROM, params=["dedup=true", "token=s3cr3t"])
    info = (await api.call("/monit/datasource/info", {"id": ds_id}, key=owner.key)).data
    assert info["payload"]["prometheus"]["params"] == ["dedup=******", "token=******"]
    update = {"id": ds_id, "type_ident": "prometheus", "name": "prom", "address": PROM,
              "edge_cluster_name": "default",
              "payload": {"prometheus": {"params": ["token=******", "extra=1"]}}}
    assert (await api.call("/monit/datasource/update", update, key=owner.key)).status == 200
    await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"}, key=owner.key)
    sent = prom.requests[-1].content
    assert b"token=s3cr3t" in sent and b"extra=1" in sent and b"dedup" not in sent


async def test_a_secret_does_not_follow_a_new_origin(api: Api, prom: FakeProm) -> None:
    owner = await new_account(api)
    ds_id = await datasource(api, owner, PROM, basic_auth_enabled=True,
                             basic_auth_username="u", basic_auth_password="hunter2",
                             headers=["X-Api-Key: tok"])
    base = {"id": ds_id, "type_ident": "prometheus", "name": "prom",
            "edge_cluster_name": "default"}
    same = {**base, "address": PROM + "/prefix", "payload": {"prometheus": {
        "basic_auth_enabled": True, "basic_auth_username": "u",
        "headers": ["X-Api-Key: ******"]}}}
    assert (await api.call("/monit/datasource/update", same, key=owner.key)).status == 200
    await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"}, key=owner.key)
    assert prom.requests[-1].headers["x-api-key"] == "tok"
    assert prom.requests[-1].headers["authorization"] == "Basic dTpodW50ZXIy"  # u:hunter2
    moved = {**same, "address": "http://127.0.0.2:9"}
    # A masked header cannot keep a secret entered for another origin: it is asked for anew.
    refused = await api.call("/monit/datasource/update", moved, key=owner.key)
    assert refused.code == "InvalidParameter"
    assert "payload.prometheus.headers.X-Api-Key" in refused.message
    moved["payload"]["prometheus"]["headers"] = []
    assert (await api.call("/monit/datasource/update", moved, key=owner.key)).status == 200
    await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"}, key=owner.key)
    sent = prom.requests[-1]
    # The blank password was dropped: the secret stayed with the old origin.
    assert "x-api-key" not in sent.headers
    assert sent.headers["authorization"] == "Basic dTo="  # "u:" with no password


async def test_datasource_validation_and_scope(api: Api, prom: FakeProm) -> None:
    owner = await new_account(api)
    other = await new_account(api, "Globex")
    ds_id = await datasource(api, owner, PROM)
    bad = [
        {"type_ident": "mysql", "name": "x", "address": PROM},
        {"type_ident": "nope", "name": "x", "address": PROM},
        {"type_ident": "prometheus", "name": "x", "address": "ftp://h"},
        {"type_ident": "prometheus", "name": "prom", "address": PROM},  # name taken
        {"type_ident": "prometheus", "name": "x", "address": PROM,
         "payload": {"prometheus": {"headers": ["no colon"]}}},
    ]
    for body in bad:
        reply = await api.call("/monit/datasource/create",
                               {"edge_cluster_name": "d", **body}, key=owner.key)
        assert reply.status == 400 and reply.code == "InvalidParameter", body
    for path in ("/monit/datasource/info", "/monit/datasource/delete"):
        reply = await api.call(path, {"id": ds_id}, key=other.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound"
    assert (await api.call("/monit/datasource/delete", {"id": ds_id},
                           key=owner.key)).status == 200
    assert (await api.call("/monit/datasource/info", {"id": ds_id},
                           key=owner.key)).status == 400


async def test_monit_needs_the_alert_rule_permission(api: Api, prom: FakeProm) -> None:
    owner = await new_account(api)
    member = await new_member(api, owner)
    for path, body in (("/monit/rule/delete", {"id": 1}), ("/monit/datasource/list", {}),
                       ("/monit/rule/list/basic", {})):
        reply = await api.call(path, body, key=member.key)
        assert reply.status == 403 and reply.code == "AccessDenied", path


# --- rules -----------------------------------------------------------------------------


async def test_rule_record_list_update_fields_export_import(w: World) -> None:
    api, key = w.api, w.owner.key
    rule_id = await create_rule(api, w.owner, rule_body(w.ds_id, w.channel_id))
    info = await rule_info(api, w.owner, rule_id)
    for name in ("id", "account_id", "folder_id", "name", "ds_type", "enabled",
                 "debug_log_enabled", "cron_pattern", "delay_seconds", "creator_id",
                 "creator_name", "updater_id", "updater_name", "created_at", "updated_at"):
        assert name in info, name
    assert info["rule_configs"]["check_threshold"]["critical"] == "$A > 0"
    assert info["channel_ids"] == [w.channel_id]
    listed = (await api.call("/monit/rule/list/basic", {}, key=key)).data
    assert [(r["id"], r["triggered"]) for r in listed] == [(rule_id, False)]
    updated = await api.call("/monit/rule/update",
                             {**info, "name": "Renamed", "delay_seconds": 30}, key=key)
    assert updated.data["name"] == "Renamed" and updated.data["delay_seconds"] == 30
    fields = await api.call("/monit/rule/update/fields", {
        "ids": [rule_id], "fields": ["enabled", "repeat_interval"], "enabled": False,
        "repeat_interval": 300}, key=key)
    assert fields.data == [{"name": "Renamed", "message": ""}]
    info = await rule_info(api, w.owner, rule_id)
    assert info["enabled"] is False and info["repeat_interval"] == 300
    bad_field = await api.call("/monit/rule/update/fields", {
        "ids": [rule_id], "fields": ["name"], "name": "x"}, key=key)
    assert bad_field.status == 400
    exported = (await api.call("/monit/rule/export", {"ids": [rule_id]}, key=key)).data
    assert exported[0]["name"] == "Renamed" and "id" not in exported[0]
    clash = await api.call("/monit/rule/import", exported, key=key)
    assert clash.data[0]["message"]  # the name is taken in that folder
    imported = await api.call("/monit/rule/import", [{**exported[0], "name": "Copy"}], key=key)
    assert imported.data == [{"name": "Copy", "message": ""}]
    status = (await api.call("/monit/rule/status", {}, key=key)).data
    assert status == [{"folder_id": 0, "folder_name": "", "rule_total": 2,
                       "triggered_rule_count": 0}]


@pytest.mark.parametrize(("change", "field_name"), [
    ({"cron_pattern": "every minute"}, "cron_pattern"),
    ({"cron_pattern": "@every 1s"}, "cron_pattern"),
    ({"ds_ids": [], "ds_list": []}, "ds_ids"),
    ({"ds_ids": [123]}, "ds_ids"),
    ({"channel_ids": [123]}, "channel_ids"),
    ({"ds_type": "loki"}, "ds_type"),
    ({"name": " "}, "name"),
    ({"enabled_times": [{"days": [1], "stime": "9am", "etime": "18:00"}]}, "enabled_times"),
    ({"rule_configs": {"queries": [{"name": "A", "expr": "up"}]}}, "rule_configs"),
    ({"rule_configs": {"queries": [{"name": "R", "expr": "up"}],
                       "check_anydata": {"enabled": True}}}, "rule_configs.queries"),
    ({"rule_configs": {"queries": [{"name": "A", "expr": "up"}],
                       "check_threshold": {"enabled": True, "critical": "__import__('os')"}}},
     "rule_configs.check_threshold.critical"),
    ({"rule_configs": {"queries": [{"name": "A", "expr": "up"}],
                       "check_threshold": {"enabled": True, "critical": "$B > 1"}}},
     "rule_configs.check_threshold.critical"),
])
async def test_rule_validation(w: World, change: dict[str, Any], field_name: str) -> None:
    reply = await w.api.call("/monit/rule/create",
                             {**rule_body(w.ds_id, w.channel_id), **change}, key=w.owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert field_name in reply.message


async def test_delete_is_audited_400_for_unknown_and_stops_the_schedule(w: World) -> None:
    api, key = w.api, w.owner.key
    rule_id = await create_rule(api, w.owner, rule_body(w.ds_id, w.channel_id))
    async with api.runtime.db.transaction(write=False) as conn:
        assert (await conn.execute(select(work_schedule.c.next_fire_at).where(
            work_schedule.c.owner_id == str(rule_id)))).scalar()
    unknown = await api.call("/monit/rule/delete", {"id": 42}, key=key)
    assert unknown.status == 400 and unknown.code == "ResourceNotFound"
    other = await new_account(api, "Globex")
    assert (await api.call("/monit/rule/delete", {"id": rule_id}, key=other.key)).status == 400
    deleted = await api.call("/monit/rule/delete", {"id": rule_id}, key=key)
    assert deleted.status == 200 and deleted.data == {}
    async with api.runtime.db.transaction(write=False) as conn:
        assert (await conn.execute(select(work_schedule.c.id).where(
            work_schedule.c.owner_id == str(rule_id)))).first() is None
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.account_id == w.owner.account_id,
            audit_log.c.operation == "monit.rule.delete"))).all()
    assert [r.outcome for r in rows] == ["ResourceNotFound", "OK"]
    assert str(rule_id) in rows[-1].target_ids
    assert (await api.call("/monit/rule/info", {"id": rule_id}, key=key)).status == 400
    batch = await api.call("/monit/rule/delete/batch", {"ids": [rule_id]}, key=key)
    assert batch.status == 400


# --- evaluation ------------------------------------------------------------------------


async def test_a_firing_series_opens_an_incident_that_closes_when_it_recovers(
    w: World, prom: FakeProm, clock: FakeClock
) -> None:
    rule_id = await create_rule(w.api, w.owner, rule_body(w.ds_id, w.channel_id))
    await tick(w, clock)
    opened = await incidents(w.api, w.owner.account_id)
    assert len(opened) == 1 and opened[0].incident_status == "Critical"
    assert opened[0].title == "Target down"
    (fired,) = await alerts(w.api, w.owner.account_id)
    labels = json.loads(fired.labels)
    assert labels["instance"] == "web-1" and labels["team"] == "sre"
    assert labels["runbook"] == "https://runbooks.example/up"
    assert labels["monit_rule_id"] == str(rule_id)
    info = await rule_info(w.api, w.owner, rule_id)
    assert info["eval_status"]["firing_count"] == 1 and info["eval_status"]["last_error"] == ""
    await tick(w, clock)  # still firing: no new incident
    assert len(await incidents(w.api, w.owner.account_id)) == 1
    prom.value = 0
    await tick(w, clock)
    closed = await incidents(w.api, w.owner.account_id)
    assert closed[0].incident_status == "Ok"
    assert (await rule_info(w.api, w.owner, rule_id))["eval_status"]["firing_count"] == 0


async def test_the_integration_a_first_evaluation_makes_is_audited_once(
    w: World, prom: FakeProm, clock: FakeClock
) -> None:
    """The alert rules' integration in a person's channel is made by the engine on first use,
    in the evaluation job's unit of work: audited as the system's creation, once."""
    from sqlalchemy import select

    from dutyline.db.tables.platform import audit_log

    await create_rule(w.api, w.owner, rule_body(w.ds_id, w.channel_id))
    await tick(w, clock)
    await tick(w, clock)  # the integration is there now: nothing more to audit
    async with w.api.runtime.db.transaction(write=False) as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.account_id == w.owner.account_id,
            audit_log.c.operation == "integration.create"))).all()
    [row] = rows
    assert (row.credential, row.member_id, row.outcome) == ("system", 0, "OK")
    assert row.request_id.startswith("job-") and str(w.channel_id) in row.target_ids


@pytest.mark.parametrize("fault", ["500", "json", "timeout"])
async def test_a_failing_data_source_is_recorded_and_fabricates_nothing(
    w: World, prom: FakeProm, clock: FakeClock, fault: str
) -> None:
    rule_id = await create_rule(w.api, w.owner, rule_body(w.ds_id, w.channel_id))
    prom.fault = fault
    await tick(w, clock)
    info = await rule_info(w.api, w.owner, rule_id)
    assert info["eval_status"]["last_error"].startswith("prom: ")
    assert await alerts(w.api, w.owner.account_id) == []
    # The next evaluation runs on time and works once the source does.
    prom.fault = ""
    await tick(w, clock)
    assert len(await incidents(w.api, w.owner.account_id)) == 1
    assert (await rule_info(w.api, w.owner, rule_id))["eval_status"]["last_error"] == ""
    # A failure while firing neither recovers nor re-fires the series.
    prom.fault = fault
    await tick(w, clock)
    assert (await incidents(w.api, w.owner.account_id))[0].incident_status == "Critical"


async def test_check_times_repeats_and_no_data(w: World, prom: FakeProm,
                                               clock: FakeClock) -> None:
    body = rule_body(w.ds_id, w.channel_id, repeat_interval=20, repeat_total=1)
    body["rule_configs"]["check_threshold"]["alerting_check_times"] = 2
    await create_rule(w.api, w.owner, body)
    await tick(w, clock)
    assert await alerts(w.api, w.owner.account_id) == []  # one hit of two
    await tick(w, clock)
    assert len(await alerts(w.api, w.owner.account_id)) == 1
    for _ in range(6):
        await tick(w, clock)
    (fired,) = await alerts(w.api, w.owner.account_id)
    assert fired.event_cnt == 2  # the first event and one repeat (repeat_total 1)


async def test_nodata_check(w: World, prom: FakeProm, clock: FakeClock) -> None:
    body = rule_body(w.ds_id, w.channel_id, name="Metrics missing")
    body["rule_configs"] = {"queries": [{"name": "A", "expr": "up"}],
                            "check_nodata": {"enabled": True, "severity": "Warning",
                                             "push_recovery_event": True}}
    await create_rule(w.api, w.owner, body)
    await tick(w, clock)  # data: the series is tracked
    assert await alerts(w.api, w.owner.account_id) == []
    prom.value = None
    await tick(w, clock)
    (gone,) = await alerts(w.api, w.owner.account_id)
    assert gone.alert_status == "Warning" and json.loads(gone.labels)["instance"] == "web-1"
    prom.value = 1
    await tick(w, clock)
    (back,) = await alerts(w.api, w.owner.account_id)
    assert back.alert_status == "Ok"


async def test_enabled_times_and_delay(w: World, prom: FakeProm, clock: FakeClock) -> None:
    # 1_800_000_000 is a Friday (weekday 5), 08:00 UTC: outside a Monday window.
    body = rule_body(w.ds_id, w.channel_id, delay_seconds=60,
                     enabled_times=[{"days": [1], "stime": "09:00", "etime": "18:00"}])
    rule_id = await create_rule(w.api, w.owner, body)
    await tick(w, clock)
    assert prom.requests == [] and await alerts(w.api, w.owner.account_id) == []
    info = await rule_info(w.api, w.owner, rule_id)
    await w.api.call("/monit/rule/update", {**info, "enabled_times": []}, key=w.owner.key)
    await tick(w, clock)
    sent = dict(httpx.QueryParams(prom.requests[-1].content.decode()))
    assert abs(float(sent["time"]) - (clock.now() - 60)) < 11


async def test_deleting_a_rule_leaves_no_alert_behind(w: World, prom: FakeProm,
                                                      clock: FakeClock) -> None:
    rule_id = await create_rule(w.api, w.owner, rule_body(w.ds_id, w.channel_id))
    await tick(w, clock)
    assert (await incidents(w.api, w.owner.account_id))[0].incident_status == "Critical"
    # An evaluation queued before the delete runs after it: it must write nothing.
    clock.advance(10)
    await scheduler.fire_due(w.api.runtime.db, now_ms=int(clock.now() * 1000))
    assert (await w.api.call("/monit/rule/delete", {"id": rule_id},
                             key=w.owner.key)).status == 200
    await run_due(w.api, int(clock.now() * 1000))
    (fired,) = await alerts(w.api, w.owner.account_id)
    assert fired.alert_status == "Ok"
    assert (await incidents(w.api, w.owner.account_id))[0].incident_status == "Ok"


async def test_a_rule_deleted_mid_evaluation_writes_nothing(
    w: World, prom: FakeProm, clock: FakeClock
) -> None:
    """The delete lands while the queries are in flight (between the two phases)."""
    rule_id = await create_rule(w.api, w.owner, rule_body(w.ds_id, w.channel_id))
    clock.advance(10)
    await scheduler.fire_due(w.api.runtime.db, now_ms=int(clock.now() * 1000))
    # Read phase done by hand: judge, then the delete, then the write phase.
    async with w.api.runtime.db.transaction(write=False) as conn:
        row = await repository.get_rule_any_account(conn, rule_id)
        sources = await repository.list_datasources(conn, row.account_id, "")
    outcome = await engine.judge(w.api.runtime, row, sources, [], at_s=clock.now(),
                                 now_s=int(clock.now()))
    assert outcome.verdicts and outcome.verdicts[0].alerting
    assert (await w.api.call("/monit/rule/delete", {"id": rule_id},
                             key=w.owner.key)).status == 200
    await run_due(w.api, int(clock.now() * 1000))  # the queued evaluation finds no rule
    assert await alerts(w.api, w.owner.account_id) == []


async def test_settings_left_false_or_empty_are_answered_too(api: Api, prom: FakeProm) -> None:
    """A client reads each setting by name: `basic_auth_enabled: false` and the other
    defaults are answered, not dropped."""
    owner = await new_account(api)
    ds_id = await datasource(api, owner, PROM, basic_auth_enabled=False,
                             basic_auth_username="", tls_skip_verify=False)
    info = (await api.call("/monit/datasource/info", {"id": ds_id}, key=owner.key)).data
    prometheus = info["payload"]["prometheus"]
    for name in ("basic_auth_enabled", "tls_skip_verify"):
        assert prometheus[name] is False, name
    for name in ("basic_auth_username", "basic_auth_password", "tls_ca", "tls_cert",
                 "tls_key", "tls_key_pwd", "tls_server_name", "tls_min_version",
                 "tls_max_version"):
        assert prometheus[name] == "", name
    assert prometheus["headers"] == [] and prometheus["params"] == []


async def test_the_references_own_rule_examples_are_accepted(
    w: World, prom: FakeProm, clock: FakeClock
) -> None:
    """The reference's create example names its query bare (`"critical": "A"`, the PromQL
    already filters), and its update example sends a name and the queries only."""
    api, key = w.api, w.owner.key
    created = await api.call("/monit/rule/create", {
        "name": "CPU High", "ds_type": "prometheus", "ds_ids": [w.ds_id], "enabled": True,
        "cron_pattern": "@every 10s", "channel_ids": [w.channel_id],
        "rule_configs": {"queries": [{"name": "A", "expr": "avg(cpu_usage_idle) < 10"}],
                         "check_threshold": {"enabled": True, "critical": "A",
                                             "alerting_check_times": 1,
                                             "recovery_check_times": 1,
                                             "push_recovery_event": True,
                                             "recovery": {"mode": "invert"}}}}, key=key)
    assert created.status == 200, created.body
    rule_id = created.data["id"]
    # The query returns a series whose value is 0: it is returned, so the rule fires.
    prom.value = 0
    await tick(w, clock)
    opened = await incidents(api, w.owner.account_id)
    assert len(opened) == 1 and opened[0].incident_status == "Critical"
    # A name that is no query of the rule is refused, bare or not.
    for written in ("B", "$B > 1"):
        bad = await api.call("/monit/rule/create", {
            "name": f"Bad {written}", "ds_type": "prometheus", "ds_ids": [w.ds_id],
            "rule_configs": {"queries": [{"name": "A", "expr": "up"}],
                             "check_threshold": {"enabled": True, "critical": written}}},
            key=key)
        assert (bad.status, bad.code) == (400, "InvalidParameter"), written
        assert "rule_configs.check_threshold.critical" in bad.body["error"]["message"]

    before = await rule_info(api, w.owner, rule_id)
    updated = await api.call("/monit/rule/update", {
        "id": rule_id, "name": "CPU High v2", "ds_type": "prometheus", "enabled": True,
        "cron_pattern": "* * * * *",
        "rule_configs": {"queries": [{"name": "A", "expr": "avg(cpu_usage_idle) < 5"}]}},
        key=key)
    assert updated.status == 200, updated.body
    after = await rule_info(api, w.owner, rule_id)
    assert after["name"] == "CPU High v2" and after["cron_pattern"] == "* * * * *"
    assert after["rule_configs"]["queries"] == [{"name": "A",
                                                 "expr": "avg(cpu_usage_idle) < 5"}]
    # What the update left out keeps its value.
    assert after["rule_configs"]["check_threshold"] == before["rule_configs"]["check_threshold"]
    for name in ("channel_ids", "ds_ids", "labels", "annotations", "folder_id"):
        assert after[name] == before[name], name
    # A field given replaces the stored one, an empty list included.
    cleared = await api.call("/monit/rule/update", {"id": rule_id, "channel_ids": []},
                             key=key)
    assert cleared.status == 200 and cleared.data["channel_ids"] == []
    unknown = await api.call("/monit/rule/update", {"id": 1, "name": "x"}, key=key)
    assert (unknown.status, unknown.code) == (400, "ResourceNotFound")
    missing = await api.call("/monit/rule/update", {"name": "x"}, key=key)
    assert (missing.status, missing.code) == (400, "InvalidParameter")
