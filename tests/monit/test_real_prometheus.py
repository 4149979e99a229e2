"""Against the real binaries (real_peers.py): an alert rule of ours evaluates PromQL on a
Prometheus that scrapes itself and our exporter, opening an incident and closing it when the
condition stops; and Alertmanager delivers a real firing and resolved alert to our webhook,
opening and closing an incident."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, select

from dutyline.app import create_app
from dutyline.channel.integration.service import hash_key
from dutyline.config import Settings
from dutyline.db.engine import Database
from dutyline.db.tables.channel import integration
from dutyline.db.tables.incident import alert, incident
from dutyline.kit.ids import numeric_id
from dutyline.platform.account.service import create_account
from tests.fixtures.accounts import new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.loopback import serve_asgi
from tests.monit.real_peers import AlertmanagerPeer, Gauge, PrometheusPeer, PrometheusTlsPeer
from tests.monit.support import channel, create_rule, datasource, incidents, run_due

pytestmark = pytest.mark.anyio
WAIT_S = 30.0


async def eventually(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.3)


class SkewClock:
    """Real time plus an offset the test moves forward: schedules come due at once, and
    Prometheus answers a query for a moment ahead with its latest sample."""

    def __init__(self) -> None:
        self.offset_s = 0.0

    def now(self) -> float:
        return time.time() + self.offset_s


@pytest.fixture
def clock() -> SkewClock:
    return SkewClock()


@pytest.fixture
async def api(settings: Settings, clock: SkewClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


async def test_a_rule_opens_and_closes_an_incident_on_real_prometheus(
    api: Api, prometheus_peer: PrometheusPeer, clock: SkewClock
) -> None:
    owner = await new_account(api)
    channel_id = await channel(api, owner)
    ds_id = await datasource(api, owner, prometheus_peer.url)

    async def query(expr: str) -> list[dict[str, Any]]:
        reply = await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": expr},
                               key=owner.key)
        return list(reply.data["rows"])

    async def gauge_is(value: float) -> bool:
        rows = await query('demo_queue_depth{queue="orders"}')
        return bool(rows) and rows[0]["value"] == value

    # Prometheus scrapes itself.
    up = await eventually(lambda: query('up{job="prometheus"}'), "prometheus to scrape itself")
    assert up[0]["value"] == 1.0
    Gauge.value = 50
    await eventually(lambda: gauge_is(50), "the exporter's gauge at 50")
    body = {
        "name": "Orders queue deep on $queue", "ds_type": "prometheus", "ds_ids": [ds_id],
        "cron_pattern": "@every 5s", "channel_ids": [channel_id], "labels": {"team": "shop"},
        "rule_configs": {
            "queries": [{"name": "A", "expr": 'demo_queue_depth{queue="orders"}'}],
            "check_threshold": {"enabled": True, "critical": "$A > 10", "warning": "$A > 5",
                                "push_recovery_event": True},
        },
    }
    rule_id = await create_rule(api, owner, body)

    async def evaluate() -> None:
        clock.offset_s += 6  # past the rule's next due time
        await run_due(api, int(clock.now() * 1000))

    await evaluate()
    info = (await api.call("/monit/rule/info", {"id": rule_id}, key=owner.key)).data
    assert info["eval_status"]["last_error"] == "", info["eval_status"]
    (opened,) = await incidents(api, owner.account_id)
    assert opened.title == "Orders queue deep on orders"
    assert opened.incident_status == "Critical"
    Gauge.value = 0
    await eventually(lambda: gauge_is(0), "the exporter's gauge at 0")
    await evaluate()
    (closed,) = await incidents(api, owner.account_id)
    assert closed.incident_status == "Ok"
    info = (await api.call("/monit/rule/info", {"id": rule_id}, key=owner.key)).data
    assert info["eval_status"]["last_error"] == ""
    assert info["eval_status"]["last_eval_at_ms"] > 0


async def test_a_rule_queries_real_prometheus_over_mutual_tls(
    api: Api, prometheus_tls_peer: PrometheusTlsPeer, clock: SkewClock
) -> None:
    peer = prometheus_tls_peer
    owner = await new_account(api)
    channel_id = await channel(api, owner)
    tls = {"tls_ca": peer.ca.cert_pem, "tls_server_name": peer.server_name}
    ds_id = await datasource(api, owner, peer.url, **tls)

    async def query() -> Any:
        return await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"},
                              key=owner.key)

    # No client certificate: Prometheus refuses the connection.
    refused = await query()
    assert refused.status == 400 and "TLS error" in refused.message, refused.body
    update = {"id": ds_id, "type_ident": "prometheus", "name": "prom", "address": peer.url,
              "edge_cluster_name": "default", "payload": {"prometheus": {
                  **tls, "tls_cert": peer.client.cert_pem, "tls_key": peer.client.key_pem}}}
    assert (await api.call("/monit/datasource/update", update, key=owner.key)).status == 200

    async def scraped() -> list[Any]:
        reply = await query()
        assert reply.status == 200, reply.body
        return list(reply.data["rows"])

    (row,) = await eventually(scraped, "prometheus to scrape its (dead) target")
    assert row["labels"]["job"] == "static" and row["value"] == 0.0
    body = {"name": "Target down", "ds_type": "prometheus", "ds_ids": [ds_id],
            "cron_pattern": "@every 5s", "channel_ids": [channel_id],
            "rule_configs": {"queries": [{"name": "A", "expr": "up"}],
                             "check_threshold": {"enabled": True, "critical": "$A < 1"}}}
    rule_id = await create_rule(api, owner, body)
    clock.offset_s += 6
    await run_due(api, int(clock.now() * 1000))
    info = (await api.call("/monit/rule/info", {"id": rule_id}, key=owner.key)).data
    assert info["eval_status"]["last_error"] == "", info["eval_status"]
    (opened,) = await incidents(api, owner.account_id)
    assert opened.incident_status == "Critical"


async def test_alertmanager_delivers_firing_and_resolved(
    settings: Settings, alertmanager_peer: AlertmanagerPeer
) -> None:
    db = Database(settings.database_url)
    try:
        async with db.transaction() as conn:
            created = await create_account(conn, account_name="Acme", owner_name="Owner",
                                           owner_email="owner@acme.example",
                                           now_s=int(time.time()))
        account_id = created.account_id
        app = create_app(settings)
        with serve_asgi(app, port=alertmanager_peer.webhook_port) as base_url:
            async with httpx.AsyncClient(base_url=base_url) as client:
                made = await client.post("/channel/create", params={"app_key": created.app_key},
                                         json={"channel_name": "Prod"})
                channel_id = made.json()["data"]["channel_id"]
            async with db.transaction() as conn:
                now = int(time.time())
                await conn.execute(insert(integration).values(
                    integration_id=numeric_id(), account_id=account_id, channel_id=channel_id,
                    integration_name="alertmanager", integration_type="standard",
                    key_hash=hash_key(alertmanager_peer.integration_key), key_suffix="cdef",
                    status="enabled", creator_id=0, created_at=now, updated_at=now))
            name = f"DiskFull{uuid.uuid4().hex[:8]}"
            labels = {"alertname": name, "severity": "critical", "instance": "db-1"}
            annotations = {"summary": "Disk full on db-1", "description": "97% used"}
            alertmanager_peer.post_alert(labels, annotations, resolved=False)

            async def incident_status() -> str:
                async with db.transaction(write=False) as conn:
                    row = (await conn.execute(select(incident.c.incident_status).where(
                        incident.c.account_id == account_id))).first()
                return "" if row is None else str(row.incident_status)

            assert await eventually(incident_status, "the firing alert") == "Critical"
            async with db.transaction(write=False) as conn:
                (stored,) = (await conn.execute(select(alert).where(
                    alert.c.account_id == account_id))).all()
            assert stored.title == "Disk full on db-1" and stored.description == "97% used"
            assert len(stored.alert_key) == 16  # Alertmanager's fingerprint
            alertmanager_peer.post_alert(labels, annotations, resolved=True)

            async def closed() -> bool:
                return await incident_status() == "Ok"

            await eventually(closed, "the resolved alert")
    finally:
        await db.dispose()
