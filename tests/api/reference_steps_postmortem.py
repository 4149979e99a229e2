"""The reference walk's post-mortem step (tests/api/test_reference_coverage.py): a closed
incident's report, read by GET as the reference describes, listed, deleted."""

from __future__ import annotations

from typing import Any


async def post_mortems(w: Any) -> None:
    made = await w.api.call("/incident/create", {
        "incident_severity": "Warning", "title": "Queue backlog",
        "channel_id": w.ids["channel_id"]}, key=w.owner.key)
    incident_id = made.data["incident_id"]
    await w.call("/incident/comment", {"incident_ids": [incident_id],
                                       "comment": "Scaling the consumers."})
    await w.call("/incident/resolve", {"incident_ids": [incident_id]})
    created = await w.api.call("/incident/post-mortem/create", {"incident_ids": [incident_id]},
                               key=w.owner.key)
    assert created.status == 200, created.body
    post_mortem_id = created.data["meta"]["post_mortem_id"]
    item = await w.call("/incident/post-mortem/info", {"post_mortem_id": post_mortem_id})
    assert item["meta"]["channel_name"] and item["basics"]["responders"] == []
    listed = await w.call("/incident/post-mortem/list", {
        "status": "drafting", "channel_ids": [w.ids["channel_id"]], "p": 1, "limit": 20,
        "order_by": "created_at_seconds", "asc": False,
        "created_at_start_seconds": w.now - 3600, "created_at_end_seconds": w.now + 60})
    assert [m["post_mortem_id"] for m in listed["items"]] == [post_mortem_id]
    await w.call("/incident/post-mortem/delete", {"post_mortem_id": post_mortem_id})
