"""The reference walk's step for channel notification rules (tests/api/test_reference_coverage.py):
every /channel/notify/rule/* operation, called as a client would, its answer checked against
the reference (whose schemas for them are placeholders: an object), and a rule that tells its
webhook of a new incident."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.dispatch.support import run_jobs
from tests.incident.conftest import event, push

if TYPE_CHECKING:
    from tests.api.test_reference_coverage import World


async def notify_rules(w: World) -> None:
    channel_id = w.ids["channel_id"]
    target = {"person_ids": [w.owner.person_id], "team_ids": [w.ids["team_id"]],
              "schedule_to_role_ids": {str(w.ids["schedule_id"]): [0]},
              "emails": ["watch@example.com"], "by": {"follow_preference": True},
              "webhooks": [{"type": "custom",
                            "settings": {"url": w.receiver.url("/notify-rule")}}]}
    created = await w.call("/channel/notify/rule/create", {
        "channel_id": channel_id, "rule_name": "Watchers", "events": ["i_new", "i_rslv"],
        "template_id": w.ids["template_id"], "description": "Tell the watchers",
        "target": target,
        "filters": [[{"key": "severity", "oper": "IN", "vals": ["Critical"]}]],
        "time_filters": [{"start": "00:00", "end": "23:59", "repeat": [0, 1, 2, 3, 4, 5, 6]}]})
    ids = {"channel_id": channel_id, "rule_id": created["rule_id"]}
    listed = await w.call("/channel/notify/rule/list", {"channel_id": channel_id})
    assert [r["rule_id"] for r in listed["items"]] == [created["rule_id"]]
    await w.call("/channel/notify/rule/update", {
        **ids, "rule_name": "Critical watchers", "events": ["i_new"], "target": target})
    await w.call("/channel/notify/rule/disable", ids)
    await w.call("/channel/notify/rule/enable", ids)

    w.receiver.take()
    reply = await push(w.api, w.ids["integration_key"], event(
        "ledger backlog", "Critical", key="notify-rule-1",
        labels={"service": "ledger", "check": "backlog"}))
    assert reply.status == 200, reply.body
    await run_jobs(w.api)
    told = [json.loads(r.body) for r in w.receiver.take() if r.path == "/notify-rule"]
    assert [(b["event_type"], b["incident"]["title"]) for b in told] == [
        ("i_new", "ledger backlog")], told
    await w.call("/channel/notify/rule/delete", ids)
    # The world's later steps see no incident of this one's.
    resolved = await w.api.call("/incident/resolve", {
        "incident_ids": [told[0]["incident"]["incident_id"]]}, key=w.owner.key)
    assert resolved.status == 200, resolved.body
    await run_jobs(w.api)
