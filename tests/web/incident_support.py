"""Seeding incidents for the console's incident tests, through the API as a client would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from dutyline.db.tables.platform import audit_log
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

PRESET_TEMPLATE = "6321aad26c12104586a88916"
HOSTILE = '"><img src=x onerror=alert(1)>'
SCRIPT = "<script>alert(1)</script>"


@dataclass(frozen=True)
class Seeded:
    incident_id: str
    channel_id: int
    integration_key: str


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200 and "error" not in reply.body, (path, reply.body)
    return reply.data


async def run_jobs(api: Api) -> None:
    worker = Worker(api.runtime, worker_id="test")
    for _ in range(20):
        claimed = await worker.claim(10)
        if not claimed:
            return
        for job in claimed:
            await worker.execute(job)


async def push(api: Api, integration_key: str, *, title: str, alert_key: str = "k1",
               labels: dict[str, str] | None = None, status: str = "Critical") -> None:
    response = await api.client.post(
        "/event/push/alert/standard", params={"integration_key": integration_key},
        json={"title_rule": title, "event_status": status, "alert_key": alert_key,
              "labels": labels or {}})
    assert response.status_code == 200, response.text


async def incident_ids(api: Api, who: Person) -> list[str]:
    now = int(api.runtime.clock.now())
    data = await ok(api, "/incident/list", {"start_time": now - 86_400,
                                            "end_time": now + 60}, who)
    return [i["incident_id"] for i in data["items"]]


async def seed(api: Api, owner: Person, *, title: str = "disk full on db-7",
               labels: dict[str, str] | None = None, page_by_email: bool = False,
               channel_name: str = "Storage") -> Seeded:
    """An incident opened by an alert pushed to a channel's integration; with
    `page_by_email` the channel's escalation rule e-mails the owner, which fails (the tests'
    server has no SMTP) and leaves a failed delivery in the feed."""
    channel_id = (await ok(api, "/channel/create", {"channel_name": channel_name},
                           owner))["channel_id"]
    if page_by_email:
        await ok(api, "/channel/escalate/rule/create", {
            "channel_id": channel_id, "template_id": PRESET_TEMPLATE, "rule_name": "Default",
            "layers": [{"target": {"person_ids": [owner.person_id],
                                   "by": {"critical": ["email"], "warning": ["email"],
                                          "info": ["email"]}}}]}, owner)
    integration_key = (await ok(api, "/integration/create", {
        "channel_id": channel_id, "integration_name": "std"}, owner))["integration_key"]
    before = set(await incident_ids(api, owner))
    await push(api, integration_key, title=title,
               labels=labels if labels is not None else {"host": "db-7",
                                                          "runbook": "https://wiki/db"})
    [incident_id] = [i for i in await incident_ids(api, owner) if i not in before]
    if page_by_email:
        await run_jobs(api)
    return Seeded(incident_id, channel_id, integration_key)


async def info(api: Api, who: Person, incident_id: str) -> dict[str, Any]:
    data: dict[str, Any] = await ok(api, "/incident/info", {"incident_id": incident_id}, who)
    return data


async def feed(api: Api, who: Person, incident_id: str) -> list[dict[str, Any]]:
    data = await ok(api, "/incident/feed", {"incident_id": incident_id, "limit": 100}, who)
    return list(data["items"])


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))
