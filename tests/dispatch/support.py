"""Helpers of the escalation tests: channels wired to an integration, rules, running jobs."""

from __future__ import annotations

from typing import Any

from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, Reply

PRESET_TEMPLATE = "6321aad26c12104586a88916"
PUSH_PATH = "/event/push/alert/standard"


async def make_channel(api: Api, who: Person, name: str = "Checkout") -> int:
    created = await api.call("/channel/create", {"channel_name": name}, key=who.key)
    return int(created.data["channel_id"])


async def make_integration(api: Api, who: Person, channel_id: int) -> str:
    integ = await api.call("/integration/create", {
        "channel_id": channel_id, "integration_name": "std"}, key=who.key)
    return str(integ.data["integration_key"])


def layer(**target: Any) -> dict[str, Any]:
    options = {k: target.pop(k) for k in ("max_times", "notify_step", "escalate_window",
                                          "force_escalate") if k in target}
    target.setdefault("by", {"follow_preference": True})
    return {"target": target, **options}


def rule_body(channel_id: int, layers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"channel_id": channel_id, "template_id": PRESET_TEMPLATE, "rule_name": "Default",
            "layers": layers, **extra}


async def create_rule(api: Api, who: Person, body: dict[str, Any]) -> str:
    reply = await api.call("/channel/escalate/rule/create", body, key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["rule_id"])


async def push(api: Api, integration_key: str, title: str = "checkout latency high",
               status: str = "Critical", alert_key: str = "k1", **extra: Any) -> Reply:
    response = await api.client.post(PUSH_PATH, params={"integration_key": integration_key},
                                     json={"title_rule": title, "event_status": status,
                                           "alert_key": alert_key, **extra})
    return Reply(response.status_code, response.json(), response.headers)


async def run_jobs(api: Api, limit: int = 500) -> list[str]:
    """Run every due job to its outcome, including successors due now."""
    worker = Worker(api.runtime, worker_id="test")
    outcomes: list[str] = []
    while (claimed := await worker.claim(10)) and len(outcomes) < limit:
        outcomes.extend([await worker.execute(j) for j in claimed])
    return outcomes
