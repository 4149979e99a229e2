"""Evaluation against a Prometheus-API peer on loopback (tests/fixtures/fake_prometheus.py):
TLS settings of a data source (a CA made here, a server name, mutual TLS), relate queries
attached to a firing alert, and enabled_times read in the account's zone across a DST
change."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from dutyline.config import Settings
from dutyline.db.tables.platform import account
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_prometheus import PromTable
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.tls_certs import ThrowawayCA
from tests.monit.support import (
    alerts,
    channel,
    create_rule,
    datasource,
    rule_body,
    rule_info,
    run_due,
)

pytestmark = pytest.mark.anyio
SERVER_NAME = "prom.test"  # the only name on the server's certificate (not 127.0.0.1)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


@pytest.fixture
def table() -> PromTable:
    return PromTable(answers={"up": [({"__name__": "up", "instance": "web-1"}, 1.0)]})


@pytest.fixture
def ca() -> ThrowawayCA:
    return ThrowawayCA()


@pytest.fixture
def https_peer(table: PromTable, ca: ThrowawayCA, tmp_path: Path) -> Iterator[str]:
    cert, key = ca.issue("prometheus", dns=SERVER_NAME).write(tmp_path, "server")
    with serve_asgi(table.app(), ssl_certfile=cert, ssl_keyfile=key) as url:
        yield url


@pytest.fixture
def mtls_peer(table: PromTable, ca: ThrowawayCA, tmp_path: Path) -> Iterator[str]:
    """Asks every client for a certificate signed by `ca`."""
    cert, key = ca.issue("prometheus", dns=SERVER_NAME).write(tmp_path, "server")
    ca_file = tmp_path / "clients-ca.crt"
    ca_file.write_text(ca.cert_pem)
    with serve_asgi(table.app(), ssl_certfile=cert, ssl_keyfile=key,
                    ssl_ca_certs=str(ca_file), ssl_cert_reqs=ssl.CERT_REQUIRED) as url:
        yield url


@pytest.fixture
def http_peer(table: PromTable) -> Iterator[str]:
    with serve_asgi(table.app()) as url:
        yield url


async def _update_ds(api: Api, owner: Person, ds_id: int, address: str,
                     **prom: Any) -> Any:
    return await api.call("/monit/datasource/update", {
        "id": ds_id, "type_ident": "prometheus", "name": "prom", "address": address,
        "edge_cluster_name": "default", "payload": {"prometheus": prom}}, key=owner.key)


async def _query(api: Api, owner: Person, ds_id: int) -> Any:
    return await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"},
                          key=owner.key)


async def _tick(api: Api, clock: FakeClock) -> None:
    clock.advance(10)
    await run_due(api, int(clock.now() * 1000))


# --- TLS ------------------------------------------------------------------------------


async def test_a_private_ca_is_needed_and_applied(api: Api, clock: FakeClock, ca: ThrowawayCA,
                                                   https_peer: str) -> None:
    owner = await new_account(api)
    channel_id = await channel(api, owner)
    ds_id = await datasource(api, owner, https_peer, tls_server_name=SERVER_NAME)
    rule_id = await create_rule(api, owner, rule_body(ds_id, channel_id))
    # Without the CA: the handshake fails, the status says so, nothing is fabricated.
    await _tick(api, clock)
    error = (await rule_info(api, owner, rule_id))["eval_status"]["last_error"]
    assert error.startswith("prom: TLS error") and "CERTIFICATE_VERIFY_FAILED" in error, error
    assert await alerts(api, owner.account_id) == []
    refused = await _query(api, owner, ds_id)
    assert refused.status == 400 and "TLS error" in refused.message
    # With the CA but the address's own name (127.0.0.1, not on the certificate): refused.
    assert (await _update_ds(api, owner, ds_id, https_peer, tls_ca=ca.cert_pem)).status == 200
    mismatch = await _query(api, owner, ds_id)
    assert mismatch.status == 400 and "TLS error" in mismatch.message
    # With the CA and the server name: the rule evaluates and fires.
    assert (await _update_ds(api, owner, ds_id, https_peer, tls_ca=ca.cert_pem,
                             tls_server_name=SERVER_NAME)).status == 200
    assert (await _query(api, owner, ds_id)).data["rows"][0]["value"] == 1.0
    await _tick(api, clock)
    assert (await rule_info(api, owner, rule_id))["eval_status"]["last_error"] == ""
    (fired,) = await alerts(api, owner.account_id)
    assert fired.alert_status == "Critical"


async def test_skip_verify_trusts_any_certificate(api: Api, https_peer: str) -> None:
    owner = await new_account(api)
    ds_id = await datasource(api, owner, https_peer, tls_skip_verify=True)
    reply = await _query(api, owner, ds_id)
    assert reply.status == 200 and reply.data["rows"][0]["value"] == 1.0


async def test_a_client_certificate_when_the_server_requires_one(
    api: Api, clock: FakeClock, ca: ThrowawayCA, mtls_peer: str
) -> None:
    owner = await new_account(api)
    channel_id = await channel(api, owner)
    base = {"tls_ca": ca.cert_pem, "tls_server_name": SERVER_NAME}
    ds_id = await datasource(api, owner, mtls_peer, **base)
    rule_id = await create_rule(api, owner, rule_body(ds_id, channel_id))
    await _tick(api, clock)
    error = (await rule_info(api, owner, rule_id))["eval_status"]["last_error"]
    # The refusal arrives as an alert or as a hang-up, whichever the race gives.
    assert error.startswith("prom: TLS error"), error
    assert "CERTIFICATE_REQUIRED" in error or "client certificate" in error, error
    assert await alerts(api, owner.account_id) == []
    assert (await _query(api, owner, ds_id)).status == 400
    # The client certificate, its key encrypted with a password.
    client = ca.issue("dutyline", client=True, password="s3cret-pwd")
    updated = await _update_ds(api, owner, ds_id, mtls_peer, **base, tls_cert=client.cert_pem,
                               tls_key=client.key_pem, tls_key_pwd="s3cret-pwd")
    assert updated.status == 200, updated.body
    await _tick(api, clock)
    assert (await rule_info(api, owner, rule_id))["eval_status"]["last_error"] == ""
    assert len(await alerts(api, owner.account_id)) == 1
    # Key material never comes back; the certificates (public) do.
    for reply in (await api.call("/monit/datasource/info", {"id": ds_id}, key=owner.key),
                  await api.call("/monit/datasource/list", {}, key=owner.key),
                  updated):
        text = json.dumps(reply.data)
        assert "PRIVATE KEY" not in text and "s3cret-pwd" not in text
        assert "BEGIN CERTIFICATE" in text
    # An update that leaves the key blank keeps it (same origin): still works.
    kept = await _update_ds(api, owner, ds_id, mtls_peer, **base, tls_cert=client.cert_pem)
    assert kept.status == 200, kept.body
    assert (await _query(api, owner, ds_id)).status == 200


@pytest.mark.parametrize(("prom", "field"), [
    ({"tls_ca": "not a pem"}, "tls_ca"),
    ({"tls_cert": "-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n",
      "tls_key": "nope"}, "tls_key"),
    ({"tls_key": "-----BEGIN PRIVATE KEY-----\n"}, "tls_cert"),
    ({"tls_min_version": "1.9"}, "tls_min_version"),
    ({"tls_min_version": "1.3", "tls_max_version": "1.2"}, "tls_min_version"),
])
async def test_tls_settings_that_do_not_load_are_refused(api: Api, prom: dict[str, Any],
                                                         field: str) -> None:
    owner = await new_account(api)
    reply = await api.call("/monit/datasource/create", {
        "type_ident": "prometheus", "name": "prom", "address": "https://127.0.0.1:9",
        "edge_cluster_name": "default", "payload": {"prometheus": prom}}, key=owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert f"payload.prometheus.{field}" in reply.message
    listed = await api.call("/monit/datasource/list", {}, key=owner.key)
    assert listed.data == []


async def test_a_wrong_key_password_is_refused(api: Api, ca: ThrowawayCA) -> None:
    owner = await new_account(api)
    client = ca.issue("dutyline", client=True, password="right")
    reply = await api.call("/monit/datasource/create", {
        "type_ident": "prometheus", "name": "prom", "address": "https://127.0.0.1:9",
        "edge_cluster_name": "default", "payload": {"prometheus": {
            "tls_cert": client.cert_pem, "tls_key": client.key_pem, "tls_key_pwd": "wrong"}}},
        key=owner.key)
    assert reply.status == 400 and "payload.prometheus.tls_key" in reply.message


# --- relate queries -------------------------------------------------------------------


async def test_relate_queries_are_attached_to_the_firing_alert(
    api: Api, clock: FakeClock, table: PromTable, http_peer: str
) -> None:
    table.answers = {
        "up": [({"instance": "web-1"}, 0.0), ({"instance": "web-2"}, 0.0)],
        "node_load1": [({"__name__": "node_load1", "instance": "web-1"}, 0.5),
                       ({"__name__": "node_load1", "instance": "web-2"}, 2.5)],
        "count(up)": [({}, 2.0)],
    }
    owner = await new_account(api)
    channel_id = await channel(api, owner)
    ds_id = await datasource(api, owner, http_peer)
    body = rule_body(ds_id, channel_id, expr="up")
    body["rule_configs"]["check_threshold"]["critical"] = "$A < 1"
    body["rule_configs"]["relate_queries"] = [{"name": "L", "expr": "node_load1"},
                                              {"name": "N", "expr": "count(up)"},
                                              {"name": "X", "expr": "broken("}]
    rule_id = await create_rule(api, owner, body)
    asked_before = len(table.asked)
    await _tick(api, clock)
    fired = sorted(await alerts(api, owner.account_id), key=lambda a: a.alert_key)
    assert len(fired) == 2
    by_instance = {json.loads(a.labels)["instance"]: a for a in fired}
    one, two = json.loads(by_instance["web-1"].labels), json.loads(by_instance["web-2"].labels)
    assert (one["related_L"], one["related_N"]) == ("0.5", "2")
    assert (two["related_L"], two["related_N"]) == ("2.5", "2")
    assert "related_X" not in one
    assert "related queries:\nL: 0.5\nN: 2" in by_instance["web-1"].description
    # A relate query that fails is reported, and the alert went out anyway.
    error = (await rule_info(api, owner, rule_id))["eval_status"]["last_error"]
    assert "relate query X" in error
    # Each relate query ran once for the data source, not once per series.
    assert table.asked[asked_before:].count("node_load1") == 1
    # Nothing alerting: relate queries are not run.
    table.answers["up"] = [({"instance": "web-1"}, 1.0), ({"instance": "web-2"}, 1.0)]
    asked_before = len(table.asked)
    await _tick(api, clock)
    assert table.asked[asked_before:] == ["up"]


@pytest.mark.parametrize("relate", [
    [{"name": "A", "expr": "up"}],
    [{"name": "B", "expr": " "}],
    [{"name": "B", "expr": "up"}, {"name": "B", "expr": "up"}],
])
async def test_relate_queries_validation(api: Api, http_peer: str,
                                         relate: list[dict[str, str]]) -> None:
    owner = await new_account(api)
    channel_id = await channel(api, owner)
    ds_id = await datasource(api, owner, http_peer)
    body = rule_body(ds_id, channel_id)
    body["rule_configs"]["relate_queries"] = relate
    reply = await api.call("/monit/rule/create", body, key=owner.key)
    assert reply.status == 400 and "rule_configs.relate_queries" in reply.message


# --- enabled_times across DST ---------------------------------------------------------


def _utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


async def test_enabled_times_follow_the_account_zone_across_dst(
    api: Api, clock: FakeClock, table: PromTable, http_peer: str
) -> None:
    """Europe/Berlin moves from UTC+1 to UTC+2 on 2026-03-29. A 09:00-10:00 window is
    08:00-09:00 UTC the day before and 07:00-08:00 UTC the day after."""
    owner = await new_account(api)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == owner.account_id)
                           .values(time_zone="Europe/Berlin"))
    channel_id = await channel(api, owner)
    ds_id = await datasource(api, owner, http_peer)
    clock.set(_utc("2026-03-28T07:00:00"))
    await create_rule(api, owner, rule_body(
        ds_id, channel_id, enabled_times=[{"stime": "09:00", "etime": "10:00"}]))

    async def evaluated_at(moment: str) -> bool:
        clock.set(_utc(moment) + 5)  # the fire due at moment (+/- 5 s) runs
        before = len(table.asked)
        await run_due(api, int(clock.now() * 1000))
        return len(table.asked) > before

    assert not await evaluated_at("2026-03-28T07:30:00")  # 08:30 CET
    assert await evaluated_at("2026-03-28T08:30:00")  # 09:30 CET
    assert await evaluated_at("2026-03-30T07:30:00")  # 09:30 CEST
    assert not await evaluated_at("2026-03-30T08:30:00")  # 10:30 CEST
    assert not await evaluated_at("2026-03-31T06:30:00")  # 08:30 CEST
