"""The alert rule is one record drawn into each of its shapes: every field a person writes
comes back from info, the list item, the export and the audit snapshot, in the reference's
order, and survives update/fields and an export/import round trip."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dutyline.config import Settings
from dutyline.monit.schemas import (
    UPDATABLE_FIELDS,
    AlertRule,
    AlertRuleBasic,
    AlertRuleExport,
    RuleSpec,
    StoreRulesetItem,
    shaped,
)
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.reference import reference
from tests.monit.support import channel, datasource

pytestmark = pytest.mark.anyio
PROM = "http://127.0.0.1:9"  # never queried: these rules are not evaluated here
SERVER_ASSIGNED = {"id", "account_id", "creator_id", "creator_name", "updater_id",
                   "updater_name", "created_at", "updated_at"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


def _every_field(ds_id: int, channel_id: int) -> dict[str, Any]:
    """A spec with every field a person writes set, none to its default."""
    spec = {
        "folder_id": 7, "name": "Disk full", "labels": {"team": "storage"},
        "ds_type": "prometheus", "ds_list": ["prom*"], "ds_ids": [ds_id], "enabled": False,
        "debug_log_enabled": True,
        "rule_configs": {
            "queries": [{"name": "A", "expr": "disk_used", "label_fields": ["instance"],
                         "value_fields": ["value"], "args": {"step": "1m"}}],
            "relate_queries": [{"name": "B", "expr": "disk_size", "args": {"k": "v"}}],
            "check_threshold": {"enabled": True, "alerting_check_times": 2,
                                "recovery_check_times": 3, "push_recovery_event": True,
                                "critical": "$A > 90", "warning": "$A > 80", "info": "$A > 70",
                                "recovery": {"mode": "threshold", "condition": "$A < 60"}},
            "check_nodata": {"enabled": True, "severity": "Critical", "resolve_timeout": 600},
        },
        "cron_pattern": "*/5 * * * *", "delay_seconds": 30,
        "enabled_times": [{"days": [1, 2, 3], "stime": "09:00", "etime": "18:00"}],
        "annotations": {"summary": "Disk {{ $labels.instance }} full"},
        "description_type": "markdown", "description": "Free some *space*.",
        "channel_ids": [channel_id], "repeat_interval": 3600, "repeat_total": 5,
    }
    # A field added to the spec must be added here, so the round trips below cover it.
    assert set(spec) == set(RuleSpec.__struct_fields__) - SERVER_ASSIGNED
    return spec


async def _call(api: Api, owner: Person, path: str, body: Any) -> Any:
    reply = await api.call(path, body, key=owner.key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


def _reference_order(name: str) -> list[str]:
    return list(reference()["components"]["schemas"][name]["properties"])


async def test_every_field_comes_back_in_every_shape_in_the_reference_order(api: Api) -> None:
    owner = await new_account(api, "Acme")
    spec = _every_field(await datasource(api, owner, PROM), await channel(api, owner))
    created = await _call(api, owner, "/monit/rule/create", spec)
    info = await _call(api, owner, "/monit/rule/info", {"id": created["id"]})
    assert info == created
    assert list(info) == [*_reference_order("AlertRule"), "eval_status"]
    assert {k: info[k] for k in spec} == spec
    assert info["eval_status"] == {"last_eval_at_ms": 0, "last_eval_ms": 0, "last_error": "",
                                   "firing_count": 0}

    [basic] = await _call(api, owner, "/monit/rule/list/basic", {})
    assert list(basic) == _reference_order("AlertRuleBasic")
    assert basic == {**{k: info[k] for k in basic if k != "triggered"}, "triggered": False}

    [exported] = await _call(api, owner, "/monit/rule/export", {"ids": [created["id"]]})
    assert list(exported) == _reference_order("AlertRuleExport")
    assert exported == {k: spec[k] for k in exported}

    [audit] = await _call(api, owner, "/monit/rule/audits", {"id": created["id"]})
    detail = await _call(api, owner, "/monit/rule/audit/detail", {"id": audit["id"]})
    snapshot = json.loads(detail["content"])
    assert list(snapshot) == _reference_order("AlertRule")
    assert snapshot == {k: v for k, v in info.items() if k != "eval_status"}


async def test_update_fields_and_import_keep_what_they_do_not_name(api: Api) -> None:
    owner = await new_account(api, "Acme")
    spec = _every_field(await datasource(api, owner, PROM), await channel(api, owner))
    created = await _call(api, owner, "/monit/rule/create", spec)
    results = await _call(api, owner, "/monit/rule/update/fields", {
        "ids": [created["id"]], "fields": ["labels"], "labels": {"team": "sre"}})
    assert results == [{"name": "Disk full", "message": ""}]
    info = await _call(api, owner, "/monit/rule/info", {"id": created["id"]})
    assert {k: info[k] for k in spec} == {**spec, "labels": {"team": "sre"}}

    [exported] = await _call(api, owner, "/monit/rule/export", {"ids": [created["id"]]})
    imported = await _call(api, owner, "/monit/rule/import", [{**exported, "name": "Copy"}])
    assert imported == [{"name": "Copy", "message": ""}]
    rules = await _call(api, owner, "/monit/rule/list/basic", {})
    [copy_id] = [r["id"] for r in rules if r["name"] == "Copy"]
    copy = await _call(api, owner, "/monit/rule/info", {"id": copy_id})
    # The export leaves out the folder and the channels (the reference's AlertRuleExport).
    assert {k: copy[k] for k in exported} == {**exported, "name": "Copy"}
    assert (copy["folder_id"], copy["channel_ids"]) == (0, [])


def test_each_shape_is_drawn_from_the_record() -> None:
    record = set(AlertRule.__struct_fields__)
    assert set(AlertRuleBasic.__struct_fields__) - {"triggered"} <= record
    assert set(AlertRuleExport.__struct_fields__) <= record
    assert set(RuleSpec.__struct_fields__) == record - {"eval_status"}
    assert set(UPDATABLE_FIELDS) < set(RuleSpec.__struct_fields__)


def test_shaped_takes_given_values_over_the_source() -> None:
    class Row:
        id, type_ident, note, open_flag, creator_account_id = 1, "prometheus", "n", 2, 3
        creator_id, creator_name, created_at, updated_at = 4, "Ann", 5, 6

    item = shaped(StoreRulesetItem, Row(), note="given", payload="")
    assert (item.id, item.note, item.payload, item.updated_at) == (1, "given", "", 6)
    with pytest.raises(AttributeError, match="payload"):
        shaped(StoreRulesetItem, Row())
