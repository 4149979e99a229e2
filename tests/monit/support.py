"""Helpers of the monit tests: a channel, a data source, a rule body, running due work, and
reading the incidents a rule opened."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from dutyline.db.tables.incident import alert, incident
from dutyline.work import scheduler
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api


async def channel(api: Api, owner: Person, name: str = "Prod") -> int:
    reply = await api.call("/channel/create", {"channel_name": name}, key=owner.key)
    return int(reply.data["channel_id"])


async def datasource(api: Api, owner: Person, address: str, name: str = "prom",
                     **payload: Any) -> int:
    reply = await api.call("/monit/datasource/create", {
        "type_ident": "prometheus", "name": name, "address": address,
        "edge_cluster_name": "default", "payload": {"prometheus": payload}}, key=owner.key)
    assert reply.status == 200, reply.body
    return int(reply.data["id"])


def rule_body(ds_id: int, channel_id: int, expr: str = "up", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Target down", "ds_type": "prometheus", "ds_ids": [ds_id],
        "cron_pattern": "@every 10s", "channel_ids": [channel_id],
        "labels": {"team": "sre"}, "annotations": {"runbook": "https://runbooks.example/up"},
        "rule_configs": {
            "queries": [{"name": "A", "expr": expr}],
            "check_threshold": {"enabled": True, "critical": "$A > 0",
                                "push_recovery_event": True},
        },
    }
    body.update(extra)
    return body


async def create_rule(api: Api, owner: Person, body: dict[str, Any]) -> int:
    reply = await api.call("/monit/rule/create", body, key=owner.key)
    assert reply.status == 200, reply.body
    return int(reply.data["id"])


async def run_due(api: Api, now_ms: int) -> list[str]:
    """Fire due schedules, then run the jobs they queued (and what those queued)."""
    await scheduler.fire_due(api.runtime.db, now_ms=now_ms)
    worker = Worker(api.runtime, worker_id="test")
    outcomes = []
    while claimed := await worker.claim(50):
        outcomes.extend([await worker.execute(j) for j in claimed])
    return outcomes


async def incidents(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(
            select(incident).where(incident.c.account_id == account_id)
            .order_by(incident.c.start_time)))


async def alerts(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(
            select(alert).where(alert.c.account_id == account_id)))


async def rule_info(api: Api, owner: Person, rule_id: int) -> dict[str, Any]:
    reply = await api.call("/monit/rule/info", {"id": rule_id}, key=owner.key)
    return dict(reply.data)
