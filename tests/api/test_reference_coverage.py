"""Every operation the reference defines that dutyline serves answers in the reference's
schema: the test walks the intersection of the reference's paths and our routes, calling each
with a realistic body (GET with query parameters where the reference says GET) against one
account populated through the API, and validates each answer with `check`.

Deliberately left out, each for a reason named here (the lead re-enables them after merging
the branch that fixes them):
- /incident/alert/list without `include_events`: it sends `events: null` (issue 9, "held
  against the reference schemas": /incident/alert/list, the wire-compatibility branch's). It is
  checked here with `include_events: true`, which conforms.
- Items of /incident/feed of an incident closed by its alerts' recovery (`i_rslv` without
  `detail.from`) and the nesting of `i_assign` under `assigned_to` (issue 9, feed detail
  shapes, the wire-compatibility branch's). The feed checked here holds neither: its
  incident is resolved by hand and `i_assign` still validates, AssignedTo having no required
  field.
- /channel/create with `group {method: "p"}` and no `equals` (issue 9, the same branch):
  the channel here is created with `equals`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.api.test_reference_schemas import check, reference, reference_validator
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.conftest import event, push
from tests.incident.ingest_support import all_rows

pytestmark = pytest.mark.anyio

# Reference paths dutyline serves whose every answer is checked in the walk below. Paths
# dutyline serves that the reference does not define (/account/info,
# /status-page/change/active/list, /field/*, /integration/*, /app-key/*, /safari/*,
# /status-page/create|info|...) have their own tests.
EXCLUDED: dict[str, str] = {}


@dataclass
class World:
    api: Api
    owner: Person
    mate: Person
    ids: dict[str, Any] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    @property
    def now(self) -> int:
        return int(self.api.runtime.clock.now())

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """Call one reference operation the way the reference describes it and check it."""
        operation = reference()["paths"][path]
        if "get" in operation:
            params = {"app_key": self.owner.key, **{
                k: (",".join(map(str, v)) if isinstance(v, list) else v)
                for k, v in body.items()}}
            response = await self.api.raw("GET", path, params=params)
        else:
            response = await self.api.raw("POST", path, params={"app_key": self.owner.key},
                                          json=body)
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
    await w.call("/monit/rule/delete/batch", {"ids": [copy]})
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
                                       _status_pages, _monitors, _teardown_and_audit]


def _served_reference_paths() -> set[str]:
    from dutyline.domains import all_routers

    ours = {op.path for r in all_routers() for op in r.operations}
    return ours & set(reference()["paths"])


async def test_every_served_reference_operation_answers_in_the_reference_schema(
    api: Api, owner: Person
) -> None:
    w = World(api, owner, await new_member(api, owner, name="Mate", builtin="admin"))
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
