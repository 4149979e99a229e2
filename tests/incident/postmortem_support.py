"""Closed incidents with a timeline worth a post-mortem, and post-mortem calls."""

from __future__ import annotations

from typing import Any

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, Reply
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import event, push

NOTE = "Rolled back release 4.2; error rate falling."


async def closed_incident(api: Api, clock: FakeClock, who: Person, *, integration_key: str,
                          title: str = "checkout errors", alert_key: str = "k1") -> str:
    """An alert opens an incident; it is acknowledged, noted on and closed by `who`, a few
    minutes apart (root cause and resolution recorded)."""
    pushed = await push(api, integration_key, event(title, "Critical", key=alert_key,
                                                    labels={"service": "checkout"}))
    assert pushed.status == 200, pushed.body
    incident_id = await _incident_of(api, who, title)
    clock.advance(60)
    assert (await api.call("/incident/ack", {"incident_ids": [incident_id]},
                           key=who.key)).status == 200
    clock.advance(120)
    assert (await api.call("/incident/comment", {"incident_ids": [incident_id],
                                                 "comment": NOTE}, key=who.key)).status == 200
    clock.advance(300)
    resolved = await api.call("/incident/resolve", {
        "incident_ids": [incident_id], "root_cause": "A bad release leaked connections.",
        "resolution": "Rolled back."}, key=who.key)
    assert resolved.status == 200, resolved.body
    return incident_id


async def _incident_of(api: Api, who: Person, title: str) -> str:
    t = int(api.runtime.clock.now())
    listed = await api.call("/incident/list", {"start_time": t - 3600, "end_time": t + 60,
                                               "limit": 100}, key=who.key)
    assert listed.status == 200, listed.body
    (found,) = [i for i in listed.data["items"] if i["title"] == title
                and i["progress"] != "Closed"]
    return str(found["incident_id"])


async def create(api: Api, who: Person, incident_ids: list[str], **extra: Any) -> Reply:
    return await api.call("/incident/post-mortem/create",
                          {"incident_ids": incident_ids, **extra}, key=who.key)


async def info(api: Api, who: Person, post_mortem_id: str) -> Reply:
    return await api.call("/incident/post-mortem/info", {"post_mortem_id": post_mortem_id},
                          key=who.key)
