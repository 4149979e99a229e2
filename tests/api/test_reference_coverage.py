"""Every operation the reference defines that dutyline serves answers in the reference's
schema: the test walks the intersection of the reference's paths and our routes, calling each
with a realistic body (GET with query parameters where the reference says GET) against one
account populated through the API, and validates each answer with `check`.

Variants the walk leaves to other tests, which hold them against the reference schemas too:
- /incident/alert/list without `include_events` (the walk asks with `include_events: true`):
  tests/incident/test_wire_compat.py;
- items of /incident/feed of an incident closed by its alerts' recovery (`i_rslv` with
  `detail.from`) and of an assignment (`i_assign`): tests/incident/test_wire_compat.py (the
  walk's incident is resolved by hand);
- /channel/create with `group {method: "p"}` and no `equals` (the walk's channel has
  `equals`): tests/channel/test_channel.py.
- The success answers of the insight CSV exports (EXCLUDED, the reason there): called with
  `Accept: application/json`, their envelope carries the CSV text, which the reference's
  placeholder schema (an empty object) does not describe.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.api.reference_notify_rules import notify_rules
from tests.api.reference_steps_postmortem import post_mortems
from tests.api.reference_steps_roles_actions import roles_and_custom_actions
from tests.api.reference_war_rooms import war_rooms
from tests.api.test_reference_schemas import check, reference_validator
from tests.dispatch.receiver import Receiver, receiver  # noqa: F401  (the fixture)
from tests.dispatch.support import run_jobs
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.reference import reference
from tests.incident.conftest import event, push
from tests.incident.ingest_support import all_rows
from tests.platform.calendar_support import calendars_step

pytestmark = pytest.mark.anyio

# Reference paths dutyline serves whose answers are not checked against the reference in the
# walk below, each with the reason. Paths dutyline serves that the reference does not define
# (/account/info, /status-page/change/active/list, /field/*, /integration/*, /app-key/*,
# /safari/* including /safari/automation/*, /incident/silence/quick, /template/preview,
# /schedule/feed/*, /notify/delivery/list, /channel/{inhibit,silence,unsubscribe}/rule/info,
# /status-page/create|info|...) have their own tests.
_CSV_EXPORT = (
    "The reference's own description calls the answer a CSV stream, not a JSON envelope, "
    "and its envelope's data (EmptyResponse, an object) is a placeholder. dutyline answers "
    "text/csv, and with Accept: application/json the envelope with the CSV text in data "
    "(a string), the convention of dutyline's file exports (docs/insights.md, "
    "docs/enrichment.md); tests/insight/test_exports.py checks both. The walk still calls "
    "each, asking for JSON, and checks the envelope and the CSV text (_insight).")
EXCLUDED: dict[str, str] = {
    "/insight/incident/export": _CSV_EXPORT,
    "/insight/channel/export": _CSV_EXPORT,
    "/insight/team/export": _CSV_EXPORT,
    "/insight/responder/export": _CSV_EXPORT,
}


@dataclass
class World:
    api: Api
    owner: Person
    mate: Person
    receiver: Receiver
    ids: dict[str, Any] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    @property
    def now(self) -> int:
        return int(self.api.runtime.clock.now())

    async def call(self, path: str, body: dict[str, Any],
                   headers: dict[str, str] | None = None) -> dict[str, Any]:
        """Call one reference operation the way the reference describes it and check it."""
        operation = reference()["paths"][path]
        if "get" in operation:
            params = {"app_key": self.owner.key, **{
                k: (",".join(map(str, v)) if isinstance(v, list) else v)
                for k, v in body.items()}}
            response = await self.api.raw("GET", path, params=params)
        else:
            response = await self.api.raw("POST", path, params={"app_key": self.owner.key},
                                          json=body, headers=headers)
        assert response.status_code == 200, (path, body, response.text)
        self.seen.add(path)
        return check(path, response)["data"]  # type: ignore[no-any-return]


_names = itertools.count()


async def _alert_of(w: World, key: str) -> Any:
    from dutyline.db.tables.incident import alert

    (row,) = await all_rows(w.api, alert, alert.c.integration_id == w.ids["integration_id"],
                            alert.c.alert_key == key)
    return row


async def _platform(w: World) -> None:
    perms = await w.call("/role/permission/list", {})
    by_name = {p["permission_name"]: p["id"] for p in perms["items"]}
    role = await w.call("/role/upsert", {
        "role_name": "On-call Manager", "description": "Incidents and channels",
        "permission_ids": [by_name["incident_manage"], by_name["channel_view"]]})
    w.ids["role_id"] = role_id = role["role_id"]
    await w.call("/role/info", {"role_id": role_id})
    await w.call("/role/list", {"orderby": "created_at", "asc": False})
    await w.call("/role/permission/list", {"role_ids": [role_id], "with_all": True})
    await w.call("/role/disable", {"role_id": role_id})
    await w.call("/role/enable", {"role_id": role_id})
    await w.call("/member/info", {})
    await w.call("/member/info/reset", {"member_id": w.owner.person_id, "member_name": "Alice",
                                        "locale": "zh-CN", "time_zone": "Asia/Shanghai"})
    await w.call("/member/list", {"p": 1, "limit": 5})
    invited = await w.call("/member/invite", {"members": [{
        "member_name": "Charlie", "email": f"charlie{next(_names)}@example.com",
        "locale": "en-US", "time_zone": "Asia/Shanghai", "role_ids": [role_id]}]})
    w.ids["invited"] = invited["items"][0]["member_id"] if "items" in invited else \
        invited["members"][0]["member_id"]
    await w.call("/member/role/grant", {"member_id": w.mate.person_id, "role_ids": [role_id]})
    await w.call("/member/role/revoke", {"member_id": w.mate.person_id, "role_ids": [role_id]})
    await w.call("/member/role/update", {"member_id": w.mate.person_id,
                                         "role_ids": [role_id]})
    await w.call("/person/infos", {"person_ids": [w.owner.person_id, w.mate.person_id]})
    team = await w.call("/team/upsert", {"team_name": "Backend SRE", "description": "d",
                                         "person_ids": [w.owner.person_id, w.mate.person_id]})
    w.ids["team_id"] = team["team_id"]
    await w.call("/team/info", {"team_id": team["team_id"]})
    await w.call("/team/infos", {"team_ids": [team["team_id"]]})
    await w.call("/team/list", {"p": 1, "limit": 20, "orderby": "created_at", "asc": False})


async def _channels(w: World) -> None:
    created = await w.call("/channel/create", {
        "team_id": w.ids["team_id"], "channel_name": "Production Alerts",
        "description": "Production", "group": {"method": "p",
                                               "equals": [["labels.service"]]}})
    w.ids["channel_id"] = channel_id = created["channel_id"]
    await w.call("/channel/info", {"channel_id": channel_id})
    await w.call("/channel/infos", {"channel_ids": [channel_id]})
    await w.call("/channel/list", {"p": 1, "limit": 20, "orderby": "created_at", "asc": False})
    await w.call("/channel/update", {"channel_id": channel_id,
                                     "channel_name": "Production Alerts (v2)",
                                     "description": "Updated"})
    await w.call("/channel/disable", {"channel_id": channel_id})
    await w.call("/channel/enable", {"channel_id": channel_id})
    integ = await w.api.call("/integration/create", {
        "channel_id": channel_id, "integration_name": "std"}, key=w.owner.key)
    w.ids["integration_id"] = integ.data["integration_id"]
    w.ids["integration_key"] = integ.data["integration_key"]


async def _alerts_and_incidents(w: World) -> None:
    key = w.ids["integration_key"]
    for alert_key, service, status in (("a1", "api", "Warning"), ("a2", "api", "Critical"),
                                       ("b1", "db", "Critical")):
        reply = await push(w.api, key, event(f"{service} errors", status, key=alert_key,
                                             labels={"service": service, "host": "h1"}))
        assert reply.status == 200, reply.body
    a1, b1 = await _alert_of(w, "a1"), await _alert_of(w, "b1")
    main, other = a1.incident_id, b1.incident_id
    w.ids["incident_id"] = main
    window = {"start_time": w.now - 3600, "end_time": w.now + 60}
    await w.call("/alert/list", {**window, "limit": 20, "is_active": True})
    await w.call("/alert/info", {"alert_id": a1.alert_id})
    await w.call("/alert/event/list", {"alert_id": a1.alert_id})
    await w.call("/alert/list-by-ids", {"alert_ids": [a1.alert_id, b1.alert_id]})
    await w.call("/alert/feed", {"alert_id": a1.alert_id, "limit": 20, "asc": False})
    await w.call("/alert-event/list", {**window, "limit": 20, "severities": "Critical"})

    await w.call("/incident/list", {**window, "progress": "Triggered,Processing",
                                    "incident_severity": "Critical,Warning",
                                    "channel_ids": [w.ids["channel_id"]]})
    await w.call("/incident/list-by-ids", {"incident_ids": [main, other]})
    await w.call("/incident/info", {"incident_id": main})
    await w.call("/incident/alert/list", {"incident_id": main, "is_active": True,
                                          "limit": 100, "p": 1, "include_events": True})
    await w.call("/incident/ack", {"incident_ids": [main]})
    await w.call("/incident/unack", {"incident_ids": [main]})
    await w.call("/incident/snooze", {"incident_ids": [main], "minutes": 60})
    await w.call("/incident/wake", {"incident_ids": [main]})
    await w.call("/incident/comment", {"incident_ids": [main],
                                       "comment": "Rolling back the deployment now."})
    await w.call("/incident/reset", {"incident_id": main, "title": "API errors on h1",
                                     "incident_severity": "Critical"})
    await w.api.call("/field/create", {"field_name": "affected_service",
                                       "display_name": "Service", "field_type": "text"},
                     key=w.owner.key)
    await w.call("/incident/field/reset", {"incident_id": main,
                                           "field_name": "affected_service",
                                           "field_value": "payment-service"})
    await w.call("/incident/assign", {"incident_id": main, "assigned_to": {
        "person_ids": [w.mate.person_id], "type": "assign"}})
    await w.call("/incident/responder/add", {"incident_id": main,
                                             "person_ids": [w.owner.person_id]})
    await w.call("/incident/disable-merge", {"incident_ids": [main]})
    await w.call("/alert/merge", {"alert_ids": [b1.alert_id], "incident_id": main,
                                  "comment": "same outage"})
    created = await w.call("/incident/create", {
        "incident_severity": "Critical", "title": "Database connection timeout",
        "channel_id": w.ids["channel_id"],
        "assigned_to": {"person_ids": [w.owner.person_id]}})
    await w.call("/incident/merge", {"source_incident_ids": [created["incident_id"]],
                                     "target_incident_id": main, "comment": "Merging"})
    await w.call("/incident/past/list", {"incident_id": main, "limit": 5})
    await w.call("/incident/resolve", {"incident_ids": [main], "root_cause": "Leak",
                                       "resolution": "Restarted"})
    await w.call("/incident/reopen", {"incident_ids": [main], "reason": "It came back."})
    await w.call("/incident/feed", {"incident_id": main, "p": 1, "limit": 100})
    await w.call("/incident/remove", {"incident_ids": [other]})


async def _templates(w: World) -> None:
    created = await w.call("/template/create", {
        "team_id": w.ids["team_id"], "template_name": f"Prod incident {next(_names)}",
        "description": "Default template for production incidents.",
        "email": "Incident {{ .Title }} on {{ .Severity }}",
        "sms": "[dutyline] {{ .Title }} ({{ .Severity }})"})
    w.ids["template_id"] = template_id = created["template_id"]
    await w.call("/template/info", {"template_id": template_id})
    await w.call("/template/list", {"p": 1, "limit": 20, "orderby": "updated_at", "asc": False,
                                    "is_my_team": False})
    await w.call("/template/update", {
        "template_id": template_id, "template_name": "Prod incident default",
        "description": "Updated description.",
        "email": "Incident {{ .Title }} on {{ .Severity }}",
        "slack": "*{{ .Title }}* ({{ .Severity }})"})


async def _noise_rules(w: World) -> None:
    channel_id = w.ids["channel_id"]
    severity_is = lambda *vals: [[{"key": "severity", "oper": "IN",  # noqa: E731
                                   "vals": list(vals)}]]
    rules: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "inhibit": ({"rule_name": "Suppress Info when Critical fires",
                     "description": "When a Critical alert fires, suppress matching Info",
                     "equals": ["labels.cluster", "labels.service"],
                     "source_filters": severity_is("Critical"),
                     "target_filters": severity_is("Info"), "is_directly_discard": False},
                    {"rule_name": "Suppress downstream", "equals": ["labels.cluster"],
                     "source_filters": severity_is("Critical"),
                     "target_filters": severity_is("Info")}),
        "silence": ({"rule_name": "Maintenance window silence",
                     "description": "Silence Info alerts during planned maintenance",
                     "time_filter": {"start_time": w.now + 86400,
                                     "end_time": w.now + 86400 + 7200},
                     "filters": severity_is("Info"), "is_directly_discard": False},
                    {"rule_name": "Mute during maintenance",
                     "time_filter": {"start_time": w.now + 86400,
                                     "end_time": w.now + 2 * 86400},
                     "filters": [[{"key": "labels.service", "oper": "IN",
                                   "vals": ["billing"]}]]}),
        "unsubscribe": ({"rule_name": "Drop test environment alerts",
                         "description": "Discard alerts of the test environment",
                         "filters": [[{"key": "labels.env", "oper": "IN",
                                       "vals": ["test", "dev"]}]]},
                        {"rule_name": "Drop test alerts",
                         "filters": [[{"key": "labels.env", "oper": "IN", "vals": ["test"]}]]}),
    }
    for kind, (create, update) in rules.items():
        base = f"/channel/{kind}/rule"
        created = await w.call(f"{base}/create", {"channel_id": channel_id, **create})
        ids = {"channel_id": channel_id, "rule_id": created["rule_id"]}
        await w.call(f"{base}/list", {"channel_id": channel_id})
        await w.call(f"{base}/update", {**ids, **update})
        await w.call(f"{base}/disable", ids)
        await w.call(f"{base}/enable", ids)
        await w.call(f"{base}/list", {"channel_id": channel_id})
        await w.call(f"{base}/delete", ids)
    # A recurring silence (time_filters, no one-off window) and one made from an incident
    # (from_incident_id) read back in the reference's record too.
    recurring = await w.call("/channel/silence/rule/create", {
        "channel_id": channel_id, "rule_name": "Nightly batch", "priority": 1,
        "time_filters": [{"start": "22:00", "end": "06:00", "repeat": [1, 2, 3, 4, 5]}],
        "filters": [[{"key": "labels.service", "oper": "IN", "vals": ["batch"]}]],
        "is_directly_discard": True})
    quick = await w.api.call("/incident/silence/quick", {
        "incident_id": w.ids["incident_id"], "minutes": 30}, key=w.owner.key)
    listed = await w.call("/channel/silence/rule/list", {"channel_id": channel_id})
    assert {r["from_incident_id"] for r in listed["items"]} >= {w.ids["incident_id"]}
    for rule_id in (recurring["rule_id"], quick.data["rule_id"]):
        await w.call("/channel/silence/rule/delete", {"channel_id": channel_id,
                                                      "rule_id": rule_id})


async def _schedules(w: World) -> None:
    day = 86400
    start = w.now - w.now % day

    def layer(name: str) -> dict[str, Any]:
        return {"layer_name": name, "mode": 0, "groups": [
            {"group_name": "A", "members": [{"role_id": 0,
                                             "person_ids": [w.owner.person_id]}]},
            {"group_name": "B", "members": [{"role_id": 0,
                                             "person_ids": [w.mate.person_id]}]}],
            "rotation_unit": "day", "rotation_value": 1, "handoff_time": 0,
            "enable_time": start - 7 * day, "expire_time": 0,
            "day_mask": {"repeat": [0, 1, 2, 3, 4, 5, 6]}, "fair_rotation": False}

    body = {"schedule_name": "Production On-Call",
            "description": "Primary on-call rotation for the production team",
            "team_id": w.ids["team_id"], "time_zone": "Asia/Shanghai",
            "layers": [layer("Layer 1")],
            # as the reference's example sends it, nulls included
            "notify": {"advance_in_time": 300, "fixed_time": None, "webhooks": None,
                       "by": {"follow_preference": True, "personal_channels": None}}}
    window = {"start": start, "end": start + 7 * day}
    await w.call("/schedule/preview", {**body, **window})
    created = await w.call("/schedule/create", body)
    w.ids["schedule_id"] = schedule_id = created["schedule_id"]
    await w.call("/schedule/info", {"schedule_id": schedule_id, **window})
    await w.call("/schedule/infos", {"schedule_ids": [schedule_id]})
    await w.call("/schedule/list", {"p": 1, "limit": 20, "query": "production",
                                    "is_my_team": True, **window})
    await w.call("/schedule/update", {
        "schedule_id": schedule_id, "schedule_name": "Production On-Call (Updated)",
        "description": "Updated primary on-call rotation", "team_id": w.ids["team_id"],
        "time_zone": "Asia/Shanghai", "layers": [
            layer("Layer 1"),
            {**layer("Office hours"), "restrict_mode": 1, "restrict_periods": [
                {"restrict_start": 9 * 3600, "restrict_end": 17 * 3600}]},
            {"layer_name": "Override", "mode": 1, "groups": [
                {"group_name": "cover", "start": start + day, "end": start + day + 3600,
                 "members": [{"role_id": 0, "person_ids": [w.mate.person_id]}]}]}]})
    await w.call("/schedule/info", {"schedule_id": schedule_id, **window})
    await w.call("/schedule/self", window)


async def _escalation(w: World) -> None:
    """Escalation rules of the channel; a new incident pages the rule's webhook, whose
    deliveries the webhook history then lists."""
    channel_id, hooks = w.ids["channel_id"], w.receiver
    target = {"person_ids": [w.owner.person_id], "team_ids": [w.ids["team_id"]],
              "schedule_to_role_ids": {str(w.ids["schedule_id"]): [0]},
              "emails": ["oncall@example.com"], "by": {"follow_preference": True},
              "webhooks": [{"type": "custom",
                            "settings": {"url": hooks.url("/escalation")}}]}
    created = await w.call("/channel/escalate/rule/create", {
        "channel_id": channel_id, "rule_name": "On-call escalation",
        "template_id": w.ids["template_id"], "priority": 0, "aggr_window": 0,
        "description": "Notify the on-call, then the team after 30 minutes",
        "layers": [{"target": target, "max_times": 3, "notify_step": 10,
                    "escalate_window": 30, "force_escalate": False},
                   {"target": {"team_ids": [w.ids["team_id"]],
                               "by": {"critical": ["email"], "warning": ["email"]}}}],
        "filters": [[{"key": "severity", "oper": "IN", "vals": ["Critical", "Warning"]}]],
        "time_filters": [{"start": "00:00", "end": "23:59", "repeat": [0, 1, 2, 3, 4, 5, 6]}]})
    ids = {"channel_id": channel_id, "rule_id": created["rule_id"]}
    await w.call("/channel/escalate/rule/info", ids)
    await w.call("/channel/escalate/rule/list", {"channel_id": channel_id})
    await w.call("/channel/escalate/rule/update", {
        **ids, "template_id": w.ids["template_id"], "rule_name": "Default escalation",
        "layers": [{"target": target, "escalate_window": 30}]})
    await w.call("/channel/escalate/rule/disable", ids)
    await w.call("/channel/escalate/rule/enable", ids)

    reply = await push(w.api, w.ids["integration_key"], event(
        "checkout latency high", "Critical", key="c1",
        labels={"service": "checkout", "host": "h2", "check": "latency-p99",
                "resource": "checkout-api"}))
    assert reply.status == 200, reply.body
    await run_jobs(w.api)
    paged = {json.loads(r.body)["incident"]["title"] for r in hooks.take()}
    assert "checkout latency high" in paged, paged
    now_ms = int(w.api.runtime.clock.now() * 1000)
    history = await w.call("/webhook/history/list", {
        "limit": 20, "start_time": now_ms - 3_600_000, "end_time": now_ms + 60_000,
        "integration_id": 0, "asc": False, "orderby": "event_time"})
    assert history["items"], history
    await w.call("/webhook/history/detail", {
        "event_id": history["items"][0]["event_id"],
        "integration_id": history["items"][0]["integration_id"] or w.ids["integration_id"]})
    # A receiver that fails: the attempt is listed failed, with its error, while retried.
    hooks.status = 500
    reply = await push(w.api, w.ids["integration_key"], event(
        "payments 5xx", "Warning", key="p1", labels={"service": "payments"}))
    assert reply.status == 200, reply.body
    await run_jobs(w.api)
    paged = {json.loads(r.body)["incident"]["title"] for r in hooks.take()}
    assert "payments 5xx" in paged, paged
    hooks.status = 200
    failed = await w.call("/webhook/history/list", {
        "limit": 20, "start_time": now_ms - 3_600_000, "end_time": now_ms + 60_000,
        "status": "failed", "event_types": ["i_notify"]})
    assert failed["items"], failed
    await w.call("/webhook/history/detail", {"event_id": failed["items"][0]["event_id"],
                                             "integration_id": w.ids["integration_id"]})
    await w.call("/channel/escalate/rule/delete", ids)
    await w.call("/schedule/delete", {"schedule_ids": [w.ids["schedule_id"]]})
    await w.call("/template/delete", {"template_id": w.ids["template_id"]})


async def _insight(w: World) -> None:
    window = {"start_time": w.now - 7 * 86400, "end_time": w.now + 60,
              "time_zone": "Asia/Shanghai"}
    severities = ["Critical", "Warning"]
    await w.call("/insight/account", {**window, "aggregate_unit": "day",
                                      "severities": severities})
    await w.call("/insight/channel", {**window, "channel_ids": [w.ids["channel_id"]],
                                      "aggregate_unit": "day"})
    await w.call("/insight/team", {**window, "team_ids": [w.ids["team_id"]],
                                   "aggregate_unit": "week", "split_hours": True})
    await w.call("/insight/responder", {**window, "responder_ids": [w.owner.person_id],
                                        "aggregate_unit": "day"})
    for label in ("check", "resource"):
        topk = await w.call("/insight/alert/topk-by-label", {
            **window, "label": label, "k": 10, "orderby": "total_alert_cnt"})
        assert topk["items"], (label, topk)
    await w.call("/insight/alert/topk-by-label", {**window, "label": "check", "k": 5,
                                                  "split_hours": True, "asc": True,
                                                  "orderby": "total_alert_event_cnt"})
    # An incident its alert's recovery closes (closed_by auto) is listed too.
    for status in ("Warning", "Ok"):
        reply = await push(w.api, w.ids["integration_key"], event(
            "queue lag", status, key="q1", labels={"service": "queue"}))
        assert reply.status == 200, reply.body
    listed = await w.call("/insight/incident/list", {**window, "p": 1, "limit": 20,
                                                     "severities": severities})
    assert "auto" in {i.get("closed_by") for i in listed["items"]}, listed
    # File exports: the envelope (reference data: EmptyResponse) is EXCLUDED, see there; the
    # JSON answer carries the CSV text, checked here.
    for path, body in (
            ("/insight/incident/export", {"severities": severities, "export_fields": [
                "incident_id", "title", "severity", "created_at", "seconds_to_close"],
                "description_html_to_text": True}),
            ("/insight/channel/export", {"channel_ids": [w.ids["channel_id"]]}),
            ("/insight/team/export", {"team_ids": [w.ids["team_id"]]}),
            ("/insight/responder/export", {"responder_ids": [w.owner.person_id]})):
        response = await w.api.raw("POST", path, params={"app_key": w.owner.key},
                                   json={**window, **body},
                                   headers={"Accept": "application/json"})
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"] == "application/json"
        assert isinstance(response.json()["data"], str) and response.json()["data"], path


async def _status_pages(w: World) -> None:
    api, key = w.api, w.owner.key
    page_id = (await api.call("/status-page/create", {
        "page_name": "Acme Status", "url_name": f"acme-{next(_names)}-{w.owner.account_id}",
        "page_type": "public"}, key=key)).data["page_id"]
    section = (await api.call("/status-page/section/upsert", {"page_id": page_id,
                                                              "name": "Core"}, key=key)).data
    component = (await api.call("/status-page/component/upsert", {
        "page_id": page_id, "section_id": section["section_id"], "name": "Web Console"},
        key=key)).data["component_id"]
    created = await w.call("/status-page/change/create", {
        "page_id": page_id, "type": "incident", "title": "Web Console Degraded Performance",
        "description": "Investigating", "status": "investigating",
        "updates": [{"status": "investigating", "description": "Looking into it",
                     "component_changes": [{"component_id": component,
                                            "status": "degraded"}]}]})
    change_id = created["change_id"]
    lookup = {"page_id": page_id, "change_id": change_id}
    await w.call("/status-page/change/info", lookup)
    await w.call("/status-page/change/list", {"page_id": page_id, "type": "incident"})
    await w.call("/status-page/change/update", {**lookup, "title": "Web Console (Updated)"})
    entry = await w.call("/status-page/change/timeline/create", {
        **lookup, "status": "identified", "description": "Root cause found"})
    await w.call("/status-page/change/timeline/update", {
        **lookup, "update_id": entry["update_id"], "description": "Corrected"})
    await w.call("/status-page/change/timeline/delete", {**lookup,
                                                         "update_id": entry["update_id"]})
    await w.call("/status-page/subscriber/import", {
        "page_id": page_id, "method": "email",
        "subscribers": [{"recipient": "alice@example.com", "all": True, "locale": "en-US"}]})
    await w.call("/status-page/subscriber/list", {"page_id": page_id, "p": 1, "limit": 10})
    await w.call("/status-page/subscriber/export", {"page_id": page_id})
    job = await w.call("/status-page/migrate-structure", {
        "api_key": "sk-stsp-xxxxxxxxxxxxxxxxxxxx", "source_page_id": "abcdefghij"})
    await w.call("/status-page/migration/status", {"job_id": job["job_id"]})
    await w.call("/status-page/migration/cancel", {"job_id": job["job_id"]})
    await w.call("/status-page/migrate-email-subscribers", {
        "api_key": "sk-stsp-xxxxxxxxxxxxxxxxxxxx", "source_page_id": "abcdefghij",
        "target_page_id": page_id})
    await w.call("/status-page/change/delete", lookup)


async def _enrichment(w: World) -> None:
    created = await w.call("/enrichment/mapping/schema/create", {
        "schema_name": "CMDB Lookup", "description": "Enrich alerts with CMDB data",
        "source_labels": ["host"], "result_labels": ["owner", "team", "service"]})
    schema = {"schema_id": created["schema_id"]}
    await w.call("/enrichment/mapping/schema/info", schema)
    await w.call("/enrichment/mapping/schema/list", {})
    await w.call("/enrichment/mapping/schema/update", {**schema, "schema_name": "CMDB v2",
                                                       "description": "Updated"})
    await w.call("/enrichment/mapping/data/upsert", {**schema, "docs": [
        {"host": "server01", "owner": "alice", "team": "sre", "service": "api"}]})
    await w.call("/enrichment/mapping/data/list", {**schema, "orderby": "updated_at",
                                                   "asc": False, "p": 1, "limit": 20})
    await w.call("/enrichment/mapping/data/upload", {
        **schema, "file": "host,owner,team,service\nserver02,bob,platform,gateway\n"})
    # The envelope form of the download (the file form is not JSON; tests/enrichment).
    await w.call("/enrichment/mapping/data/download", schema,
                 headers={"accept": "application/json"})
    await w.call("/enrichment/mapping/data/delete", {**schema, "keys": ["server02"]})
    integration = {"integration_id": w.ids["integration_id"]}
    await w.call("/enrichment/upsert", {**integration, "rules": [
        {"kind": "mapping", "settings": {"schema_id": schema["schema_id"],
                                         "result_labels": ["owner"]}},
        {"kind": "drop", "settings": {"drop_labels": ["tmp"]}}]})
    await w.call("/enrichment/info", integration)
    await w.call("/enrichment/list", {"integration_ids": [w.ids["integration_id"]]})
    await w.call("/enrichment/upsert", {**integration, "rules": []})
    made = await w.call("/enrichment/mapping/api/create", {
        "api_name": "CMDB API", "description": "Query CMDB for host metadata",
        "url": f"{w.receiver.base_url}/lookup", "headers": {"X-Token": "mytoken"},
        "timeout": 2, "retry_count": 1, "insecure_skip_verify": False})
    mapping_api = {"api_id": made["api_id"]}
    await w.call("/enrichment/mapping/api/info", mapping_api)
    await w.call("/enrichment/mapping/api/list", {})
    await w.call("/enrichment/mapping/api/update", {**mapping_api, "timeout": 3,
                                                    "retry_count": 0})
    await w.call("/enrichment/mapping/api/delete", mapping_api)
    # Only settings-free rules here: the reference's AlertPipeline.settings is a oneOf whose
    # empty ApAlertDrop matches any object, so non-empty settings cannot validate against it.
    await w.call("/alert/pipeline/upsert", {**integration, "rules": [
        {"kind": "alert_drop", "if": [[{"key": "labels.env", "oper": "IN", "vals": ["test"]}]],
         "settings": {}}]})
    await w.call("/alert/pipeline/info", integration)
    await w.call("/alert/pipeline/list", {"integration_ids": [w.ids["integration_id"]]})
    await w.call("/route/upsert", {**integration, "cases": [
        {"if": [{"key": "labels.service", "oper": "IN", "vals": ["db*"]}],
         "channel_ids": [w.ids["channel_id"]], "fallthrough": False}],
        "sections": [{"name": "Storage", "position": 0}],
        "default": {"channel_ids": [w.ids["channel_id"]]}})
    await w.call("/route/upsert", {**integration, "cases": [
        {"if": [{"key": "severity", "oper": "IN", "vals": ["Critical"]}],
         "channel_ids": [w.ids["channel_id"]], "fallthrough": True, "routing_mode": "standard"},
        {"if": [{"key": "severity", "oper": "IN", "vals": ["Warning"]}], "channel_ids": None,
         "fallthrough": False, "routing_mode": "name_mapping",
         "name_mapping_label": "labels.service"}],
        "default": {"channel_ids": [w.ids["channel_id"]]}})
    await w.call("/route/info", integration)
    await w.call("/route/list", {"integration_ids": [w.ids["integration_id"]]})
    await w.call("/enrichment/mapping/data/truncate", schema)
    await w.call("/enrichment/mapping/schema/delete", schema)

async def _monitors(w: World) -> None:
    ds = await w.call("/monit/datasource/create", {
        "type_ident": "prometheus", "name": "Prometheus Prod",
        "address": "http://127.0.0.1:9090", "edge_cluster_name": "default",
        "payload": {"prometheus": {"basic_auth_enabled": True, "basic_auth_username": "u",
                                   "basic_auth_password": "p"}}})
    await w.call("/monit/datasource/info", {"id": ds["id"]})
    await w.call("/monit/datasource/list", {"type": "prometheus"})
    await w.call("/monit/datasource/update", {**ds, "name": "Prometheus Prod v2"})
    rule = {"folder_id": 0, "name": "CPU High", "ds_type": "prometheus", "ds_ids": [ds["id"]],
            "enabled": False, "cron_pattern": "* * * * *", "channel_ids": [],
            "labels": {"team": "sre"}, "enabled_times": [{"days": [1, 2], "stime": "09:00",
                                                          "etime": "18:00"}],
            "rule_configs": {"queries": [{"name": "A", "expr": "cpu_usage"}],
                             "check_threshold": {"enabled": True, "critical": "$A > 90"}}}
    created = await w.call("/monit/rule/create", rule)
    await w.call("/monit/rule/info", {"id": created["id"]})
    await w.call("/monit/rule/list/basic", {"folder_id": 0})
    await w.call("/monit/rule/update", {**created, "name": "CPU Very High"})
    await w.call("/monit/rule/update/fields", {"ids": [created["id"]], "fields": ["labels"],
                                               "labels": {"team": "ops"}})
    await w.call("/monit/rule/status", {"folder_id": 0})
    exported = await w.call("/monit/rule/export", {"ids": [created["id"]]})
    imported = await w.call("/monit/rule/import",
                            [{**exported[0], "name": "Copy"}])  # type: ignore[arg-type]
    assert imported == [{"name": "Copy", "message": ""}]
    rules = await w.call("/monit/rule/list/basic", {})
    copy = next(r["id"] for r in rules if r["name"] == "Copy")
    moved = await w.call("/monit/rule/move", {"ids": [copy], "dest_folder_id": 7})
    assert moved == [{"name": "Copy", "message": ""}]
    audits = await w.call("/monit/rule/audits", {"id": created["id"]})
    await w.call("/monit/rule/audit/detail", {"id": audits[0]["id"]})
    await w.call("/monit/rule/dstypes", {})
    for counter in ("total", "status", "channel", "node"):
        await w.call(f"/monit/rule/counter/{counter}", {})
    await w.call("/monit/rule/delete/batch", {"ids": [copy]})
    ruleset = await w.call("/monit/store/ruleset/create", {
        "type_ident": "prometheus", "note": "Node basics", "open_flag": 1,
        "payload": json.dumps(exported)})
    await w.call("/monit/store/ruleset/info", {"id": ruleset["id"]})
    await w.call("/monit/store/ruleset/list", {"type_ident": "prometheus"})
    await w.call("/monit/store/ruleset/update", {"id": ruleset["id"], "note": "Node",
                                                 "payload": "[]"})
    await w.call("/monit/store/ruleset/delete", {"id": ruleset["id"]})
    await w.call("/monit/rule/delete", {"id": created["id"]})
    await w.call("/monit/datasource/delete", {"id": ds["id"]})


async def _teardown_and_audit(w: World) -> None:
    await w.call("/member/delete", {"member_id": w.ids["invited"]})
    await w.call("/channel/delete", {"channel_id": w.ids["channel_id"]})
    await w.call("/team/delete", {"team_id": w.ids["team_id"]})
    await w.call("/member/role/update", {"member_id": w.mate.person_id, "role_ids": []})
    await w.call("/role/delete", {"role_id": w.ids["role_id"]})
    await w.call("/audit/operation/list", {})
    await w.call("/audit/search", {"start_time": w.now - 3600, "end_time": w.now + 60,
                                   "limit": 20})


STEPS: list[Callable[[World], Any]] = [_platform, _channels, _alerts_and_incidents,
                                       roles_and_custom_actions, _templates, _noise_rules,
                                       _schedules, notify_rules, _escalation, _insight,
                                       _status_pages, _enrichment, _monitors, post_mortems,
                                       war_rooms, calendars_step,
                                       _teardown_and_audit]


def _served_reference_paths() -> set[str]:
    from dutyline.domains import all_routers

    ours = {op.path for r in all_routers() for op in r.operations}
    return ours & set(reference()["paths"])


async def test_every_served_reference_operation_answers_in_the_reference_schema(
    api: Api, owner: Person, receiver: Receiver  # noqa: F811
) -> None:
    w = World(api, owner, await new_member(api, owner, name="Mate", builtin="admin"), receiver)
    for step in STEPS:
        await step(w)
    served = _served_reference_paths()
    assert served - set(EXCLUDED) <= w.seen, sorted(served - set(EXCLUDED) - w.seen)
    assert w.seen <= served


async def test_failures_of_every_served_reference_operation_are_in_its_schema(
    api: Api, owner: Person
) -> None:
    """401 and 400 answers too, for each operation (with the error responses the reference
    lists for it). An operation with no field to get wrong (/member/info, /role/list...)
    ignores the junk and answers 200, in its schema too."""
    refused = 0
    for path in sorted(_served_reference_paths()):
        operation = reference()["paths"][path]
        method = "GET" if "get" in operation else "POST"
        responses = (operation.get("post") or operation["get"])["responses"]
        unauthorized = await api.raw(method, path)
        assert unauthorized.status_code == 401, path
        if "401" in responses:
            check(path, unauthorized)
        bad: httpx.Response = (
            await api.raw("GET", path, params={"app_key": owner.key, "page_id": "x",
                                               "job_id": 7})
            if method == "GET" else
            await api.raw("POST", path, params={"app_key": owner.key}, json={
                "p": 0, "limit": "x", "incident_id": 5, "incident_ids": "x", "alert_id": 5,
                "alert_ids": "x", "channel_id": "x", "page_id": "x", "role_id": "x",
                "member_id": "x", "team_id": "x", "person_ids": "x", "start_time": "x"}))
        assert bad.status_code in (200, 400), (path, bad.text)
        refused += bad.status_code == 400
        if str(bad.status_code) in responses:
            check(path, bad)
    assert refused >= 60

def test_the_discriminated_feed_detail_still_rejects_wrong_shapes() -> None:
    validator = reference_validator("/alert/feed", 200)

    def item(kind: str, detail: dict[str, Any]) -> dict[str, Any]:
        return {"request_id": "r", "data": {"has_next_page": False, "items": [{
            "ref_id": "0123456789abcdef01234567", "type": kind, "detail": detail,
            "account_id": 1, "creator_id": 0, "created_at": 1, "updated_at": 1}]}}

    assert not list(validator.iter_errors(item("a_close", {})))
    assert not list(validator.iter_errors(item("a_new", {"severity": "Info", "status": "Ok"})))
    assert list(validator.iter_errors(item("a_close", {"comment": "x"})))
    assert list(validator.iter_errors(item("a_new", {"severity": "Fatal"})))
    incident_feed = reference_validator("/incident/feed", 200)
    bad = {"request_id": "r", "data": {"items": [{
        "ref_id": "0123456789abcdef01234567", "type": "i_a_rspd", "detail": {"to": "x"},
        "account_id": 1, "creator_id": 0, "created_at": 1, "updated_at": 1}]}}
    assert list(incident_feed.iter_errors(bad))
