"""Secrets of stored outbound targets (api/outbound_secrets.py): a server-wide credential only
goes to its provider's fixed origin; a masked value sent back keeps the stored secret and is
never stored itself; a move of the URL to another origin drops the stored secrets unless the
update supplies them anew. One test per target, and a test that finds every outbound URL and
secret field of the request schemas and fails on one these tests do not cover."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from sqlalchemy import select

from dutyline.db.tables.schedule import schedule
from dutyline.enrichment.api import lookup
from dutyline.kit.secretbox import SecretBox
from dutyline.notify.delivery.adapters import dingtalk, webhook
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import (
    create_rule,
    layer,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.fake_mapping_api import MappingApiPeer, mapping_api_peer
from tests.incident.conftest import event, wire
from tests.schedule.helpers import rotation
from tests.security.outbound import schema_walk
from tests.security.outbound.conftest import NOW, SERVER_BOT_TOKEN

pytestmark = pytest.mark.anyio
MASK = "******"


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, reply.body
    return reply.data


async def page(api: Api, integration_key: str, alert_key: str) -> None:
    assert (await push(api, integration_key, alert_key=alert_key,
                       title=f"checkout {alert_key}")).status == 200
    await run_jobs(api)


def by_path(receiver: Receiver) -> dict[str, Any]:
    return {r.path: r for r in receiver.take()}


# --- server-wide credentials ------------------------------------------------------------


async def test_the_server_bot_token_never_goes_to_a_tenant_url(
        api: Api, owner: Person, receivers: tuple[Receiver, Receiver, Receiver]) -> None:
    tenant, _, operator = receivers
    hook = {"type": "telegram", "settings": {"url": tenant.url("/evil"), "chat_id": "-100"}}
    channel_id = await make_channel(api, owner)
    await create_rule(api, owner, rule_body(channel_id, [layer(webhooks=[hook])]))
    await page(api, await make_integration(api, owner, channel_id), "k1")
    # Without a token of its own, the target is posted by the server's bot at the
    # operator's API base; the tenant's URL sees nothing, the token least of all.
    assert tenant.take() == []
    [sent] = operator.take()
    assert sent.path == f"/tg/bot{SERVER_BOT_TOKEN}/sendMessage"
    assert json.loads(sent.body)["chat_id"] == -100
    # With a token of its own, the target's URL is used (with that token only).
    own = {"type": "telegram", "settings": {**hook["settings"], "token": "7:own"}}
    channel_id = await make_channel(api, owner, "Other")
    await create_rule(api, owner, rule_body(channel_id, [layer(webhooks=[own])]))
    await page(api, await make_integration(api, owner, channel_id), "k2")
    assert [r.path for r in tenant.take()] == ["/evil/bot7:own/sendMessage"]
    assert operator.take() == []


# --- escalation rules: webhooks and chat robots ------------------------------------------


def _hooks(base: str, **secrets: str) -> list[dict[str, Any]]:
    return [
        {"type": "webhook", "settings": {"url": f"{base}/hook", "secret": secrets["secret"]}},
        {"type": "dingtalk", "settings": {"url": f"{base}/ding",
                                          "sign_secret": secrets["sign_secret"]}},
        {"type": "zoom", "settings": {"url": f"{base}/zoom", "token": secrets["token"]}},
    ]


async def test_escalation_webhook_secrets_masked_keep_and_moved_drop(
        api: Api, owner: Person, receivers: tuple[Receiver, Receiver, Receiver]) -> None:
    first, second, _ = receivers
    channel_id = await make_channel(api, owner)
    key = await make_integration(api, owner, channel_id)
    body = rule_body(channel_id, [layer(webhooks=_hooks(
        first.base_url, secret="hmac-key", sign_secret="ding-key", token="zoom-key"))])
    rule_id = await create_rule(api, owner, body)
    upd = "/channel/escalate/rule/update"

    # The masks sent back keep the stored secrets: the next page is signed with them.
    masked = _hooks(first.base_url, secret=MASK, sign_secret=MASK, token=MASK)
    await ok(api, upd, {**body, "rule_id": rule_id, "layers": [layer(webhooks=masked)]}, owner)
    await page(api, key, "k1")
    got = by_path(first)
    hook = got["/hook"]
    assert hook.headers["x-dutyline-signature"] == webhook.signature("hmac-key", hook.body)
    ding = got["/ding"]
    assert ding.query["sign"] == dingtalk.sign("ding-key", int(ding.query["timestamp"]))
    assert got["/zoom"].headers["authorization"] == "zoom-key"

    # A mask cannot carry a secret to another origin: refused, naming the field.
    moved = _hooks(second.base_url, secret=MASK, sign_secret=MASK, token=MASK)
    refused = await api.call(upd, {**body, "rule_id": rule_id,
                                   "layers": [layer(webhooks=moved)]}, key=owner.key)
    assert refused.code == "InvalidParameter"
    assert "layers[0].target.webhooks[0].settings.secret" in refused.message

    # Moved without secrets: the stored ones stay behind.
    bare = [{"type": h["type"], "settings": {"url": h["settings"]["url"]}} for h in moved]
    await ok(api, upd, {**body, "rule_id": rule_id, "layers": [layer(webhooks=bare)]}, owner)
    await page(api, key, "k2")
    got = by_path(second)
    assert set(got) == {"/hook", "/ding", "/zoom"}
    assert "x-dutyline-signature" not in got["/hook"].headers
    assert "sign" not in got["/ding"].query
    assert "authorization" not in got["/zoom"].headers
    assert first.take() == []

    # A mask on a new rule has nothing to keep.
    fresh = await api.call("/channel/escalate/rule/create", {**body, "rule_name": "New"},
                           key=owner.key)
    assert fresh.status == 200
    nothing = await api.call("/channel/escalate/rule/create", {
        **body, "rule_name": "Masked", "layers": [layer(webhooks=masked)]}, key=owner.key)
    assert nothing.code == "InvalidParameter" and "settings.secret" in nothing.message


# --- schedules: IM webhooks -------------------------------------------------------------


async def _stored_settings(api: Api, schedule_id: int) -> dict[str, Any]:
    async with api.runtime.db.connect() as conn:
        raw = (await conn.execute(select(schedule.c.notify).where(
            schedule.c.schedule_id == schedule_id))).scalar_one()
    settings: dict[str, Any] = json.loads(raw)["webhooks"][0]["settings"]
    box: SecretBox = api.runtime.secrets
    return {k: box.open(v) if k in ("token", "sign_secret") and v else v
            for k, v in settings.items()}


async def test_schedule_webhook_secrets_masked_keep_and_changed_type_drops(
        api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    hook = {"type": "feishu_app", "settings": {"token": "t0ken", "sign_secret": "s1gn",
                                                "chat_ids": ["oc_1"]}}
    created = await ok(api, "/schedule/create", {
        "schedule_name": "Primary", "time_zone": "UTC",
        "layers": [rotation([owner.person_id], [mate.person_id], enable=NOW)],
        "notify": {"webhooks": [hook]}}, owner)
    sid = int(created["schedule_id"])
    masked = {"type": "feishu_app", "settings": {"token": MASK, "sign_secret": MASK,
                                                  "chat_ids": ["oc_1"]}}
    await ok(api, "/schedule/update", {"schedule_id": sid, "notify": {"webhooks": [masked]}},
             owner)
    stored = await _stored_settings(api, sid)
    assert (stored["token"], stored["sign_secret"]) == ("t0ken", "s1gn")
    # A schedule's IM webhook names no URL: its type is where its secret goes. Another
    # type at the same place does not inherit the secret, masked or left out.
    other = {"type": "dingtalk_app", "settings": {"token": MASK, "chat_ids": ["c1"]}}
    refused = await api.call("/schedule/update", {
        "schedule_id": sid, "notify": {"webhooks": [other]}}, key=owner.key)
    assert refused.code == "InvalidParameter"
    assert "notify.webhooks[0].settings.token" in refused.message
    other["settings"].pop("token")
    await ok(api, "/schedule/update", {"schedule_id": sid, "notify": {"webhooks": [other]}},
             owner)
    stored = await _stored_settings(api, sid)
    assert (stored["token"], stored["sign_secret"]) == ("", "")


# --- monit data sources -----------------------------------------------------------------


@pytest.fixture
def prom_peers(receivers: tuple[Receiver, Receiver, Receiver]) -> tuple[Receiver, Receiver]:
    return receivers[0], receivers[1]


async def test_datasource_secrets_masked_keep_and_moved_drop(
        api: Api, owner: Person, prom_peers: tuple[Receiver, Receiver]) -> None:
    first, second = prom_peers
    base = {"type_ident": "prometheus", "name": "prom", "edge_cluster_name": "default"}
    secrets = {"basic_auth_enabled": True, "basic_auth_username": "u",
               "basic_auth_password": "hunter2", "headers": ["X-Api-Key: tok"],
               "params": ["token=ptok"]}
    made = await ok(api, "/monit/datasource/create", {
        **base, "address": first.base_url, "payload": {"prometheus": secrets}}, owner)
    ds_id = made["id"]
    masked = {**secrets, "basic_auth_password": MASK, "headers": ["X-Api-Key: ******"],
              "params": ["token=******"]}

    async def query() -> None:
        # The receiver is no Prometheus: the query fails, after the request was made.
        await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"},
                       key=owner.key)

    await ok(api, "/monit/datasource/update", {
        **base, "id": ds_id, "address": first.base_url + "/p",
        "payload": {"prometheus": masked}}, owner)
    await query()
    [sent] = first.take()
    assert sent.headers["x-api-key"] == "tok"
    assert parse_qs(sent.body.decode())["token"] == ["ptok"]  # Prometheus takes a form
    assert sent.headers["authorization"] == "Basic dTpodW50ZXIy"  # u:hunter2
    for field, payload in (("headers.X-Api-Key", masked),
                           ("params.token", {**masked, "headers": []}),
                           ("basic_auth_password", {**masked, "headers": [], "params": []})):
        refused = await api.call("/monit/datasource/update", {
            **base, "id": ds_id, "address": second.base_url,
            "payload": {"prometheus": payload}}, key=owner.key)
        assert refused.code == "InvalidParameter"
        assert f"payload.prometheus.{field}" in refused.message
    await ok(api, "/monit/datasource/update", {
        **base, "id": ds_id, "address": second.base_url, "payload": {"prometheus": {
            "basic_auth_enabled": True, "basic_auth_username": "u"}}}, owner)
    await query()
    [sent] = second.take()
    assert "x-api-key" not in sent.headers and "token" not in parse_qs(sent.body.decode())
    assert sent.headers["authorization"] == "Basic dTo="  # "u:" and no password


# --- mapping APIs -----------------------------------------------------------------------


@pytest.fixture
def mapping_peers() -> Iterator[tuple[MappingApiPeer, MappingApiPeer]]:
    table = {f"web{i}": {"owner": "alice"} for i in range(5)}
    lookup.CACHE.clear()
    with mapping_api_peer(table) as first, mapping_api_peer(table) as second:
        yield first, second
    lookup.CACHE.clear()


async def test_mapping_api_headers_masked_keep_and_moved_drop(
        api: Api, owner: Person, mapping_peers: tuple[MappingApiPeer, MappingApiPeer]) -> None:
    first, second = mapping_peers
    api_id = (await ok(api, "/enrichment/mapping/api/create", {
        "api_name": "CMDB", "url": first.url, "headers": {"X-Token": "s3cret"}}, owner))["api_id"]
    wired = await wire(api, owner)
    await ok(api, "/enrichment/upsert", {"integration_id": wired.integration_id, "rules": [
        {"kind": "mapping", "settings": {"mapping_type": "api", "api_id": api_id,
                                         "result_labels": ["owner"]}}]}, owner)
    info = await ok(api, "/enrichment/mapping/api/info", {"api_id": api_id}, owner)
    upd = "/enrichment/mapping/api/update"
    # What the read shows, sent back, keeps the stored value.
    await ok(api, upd, {"api_id": api_id, "headers": info["headers"]}, owner)
    await push_alert(api, wired.key, "web1")
    assert [c["headers"]["x-token"] for c in first.received] == ["s3cret"]

    refused = await api.call(upd, {"api_id": api_id, "url": second.url,
                                   "headers": info["headers"]}, key=owner.key)
    assert refused.code == "InvalidParameter" and "headers.X-Token" in refused.message
    await ok(api, upd, {"api_id": api_id, "url": second.url}, owner)
    await push_alert(api, wired.key, "web2")
    [call] = second.received
    assert "x-token" not in call["headers"]
    info = await ok(api, "/enrichment/mapping/api/info", {"api_id": api_id}, owner)
    assert info["headers"] == {}
    masked_create = await api.call("/enrichment/mapping/api/create", {
        "api_name": "Other", "url": first.url, "headers": {"X-Token": "***"}}, key=owner.key)
    assert masked_create.code == "InvalidParameter"


async def push_alert(api: Api, integration_key: str, host: str) -> None:
    reply = await api.raw("POST", "/event/push/alert/standard",
                          params={"integration_key": integration_key},
                          json=event(key=host, labels={"host": host}))
    assert reply.status_code == 200, reply.text


# --- every outbound field is covered ------------------------------------------------------

_SECRET_ORIGIN_TESTS = "tests/aisre/test_secret_origin.py"

# Each marked field of a request schema -> the test that proves, for its target, that a
# masked value keeps (and is never stored) and that a move of origin drops the secret.
COVERED: dict[tuple[str, str], str] = {
    **{("dutyline.dispatch.schemas.WebhookTarget", f"settings.{k}"):
       "test_escalation_webhook_secrets_masked_keep_and_moved_drop"
       for k in ("url", "secret", "sign_secret", "token")},
    **{("dutyline.schedule.schemas.ScheduleImNotifySettings", k):
       "test_schedule_webhook_secrets_masked_keep_and_changed_type_drops"
       for k in ("token", "verify_token", "sign_secret")},
    **{("dutyline.monit.schemas.DSPrometheusConfig", k):
       "test_datasource_secrets_masked_keep_and_moved_drop"
       for k in ("basic_auth_password", "headers", "params", "tls_key", "tls_key_pwd")},
    ("dutyline.monit.schemas.DataSourceUpsertRequest", "address"):
        "test_datasource_secrets_masked_keep_and_moved_drop",
    **{(f"dutyline.enrichment.api.schemas.Api{kind}Request", k):
       "test_mapping_api_headers_masked_keep_and_moved_drop"
       for kind in ("Create", "Update") for k in ("url", "headers")},
    **{(f"dutyline.aisre.mcp.schemas.McpServer{kind}Request", k):
       f"{_SECRET_ORIGIN_TESTS}::test_mcp_headers_dropped_when_url_changes_origin"
       for kind in ("Create", "Update") for k in ("url", "headers")},
    **{(f"dutyline.aisre.a2a.schemas.A2aAgent{kind}Request", "card_url"):
       f"{_SECRET_ORIGIN_TESTS}::test_a2a_auth_dropped_when_card_url_changes_origin"
       for kind in ("Create", "Update")},
    # A custom action's webhook: set once at creation (no update can move it); the
    # credentials its URL carries are masked in answers and the audit log.
    ("dutyline.channel.integration.schemas.CreateIntegrationRequest", "url"):
        "tests/security/test_webhook_url_secrets.py::"
        "test_credentials_in_stored_urls_are_write_only",
    **{("dutyline.aisre.a2a.schemas.AuthConfig", k):
       f"{_SECRET_ORIGIN_TESTS}::test_a2a_auth_dropped_when_card_url_changes_origin"
       for k in ("token", "api_key")},
}

# Fields whose names look outbound but that are not a stored target's URL or secret.
NOT_OUTBOUND: dict[tuple[str, str], str] = {
    **{(f"dutyline.aisre.a2a.schemas.A2aAgent{kind}Request", k): "the secret is in AuthConfig"
       for kind in ("Create", "Update") for k in ("auth_config", "auth_type")},
    **{(f"dutyline.aisre.mcp.schemas.McpServer{kind}Request", "auth_mode"): "a mode, no secret"
       for kind in ("Create", "Update")},
    ("dutyline.aisre.automation.schemas.RuleUpdateRequest", "rotate_http_post_trigger_token"):
        "an inbound trigger token, rotated by the server",
    **{(f"dutyline.channel.schemas.{kind}ChannelRequest", "external_report_token"):
       "an inbound token external reporters present, kept as a hash"
       for kind in ("Create", "Update")},
    ("dutyline.dispatch.schemas.EscalateTarget", "webhooks"): "marked in WebhookTarget",
    ("dutyline.schedule.schemas.NotifyIn", "webhooks"): "marked in ScheduleImNotifySettings",
    ("dutyline.monit.schemas.DSPrometheusConfig", "basic_auth_enabled"): "a switch",
    ("dutyline.monit.schemas.DSPrometheusConfig", "basic_auth_username"): "not a secret",
    ("dutyline.monit.schemas.DSPrometheusConfig", "tls_cert"): "a public certificate",
    **{(f"dutyline.status_page.migration.schemas.Migrate{kind}Request", "api_key"):
       "not stored: used once, at the operator's Statuspage API URL"
       for kind in ("Structure", "Subscribers")},
    **{(f"dutyline.status_page.page.schemas.Page{kind}Request", "url_name"):
       "a path of our own public page" for kind in ("Create", "Update")},
    ("dutyline.status_page.page.schemas.PageUpdateRequest", "rotate_access_token"):
        "an inbound access token, rotated by the server",
}


def test_every_outbound_url_and_secret_field_is_covered() -> None:
    found = schema_walk.fields()
    marked = {(f.struct, f.name) for f in found if f.mark}
    unmarked = {(f.struct, f.name) for f in found if not f.mark}
    # A new marked field needs its target's test here; a field that looks outbound needs a
    # mark (and so the rules) or a reason it is something else.
    assert marked - set(COVERED) == set(), "outbound fields no test covers"
    assert unmarked - set(NOT_OUTBOUND) == set(), "unmarked URL or secret fields"
    assert set(COVERED) - marked == set(), "covered fields that are gone or unmarked"
    assert set(NOT_OUTBOUND) - unmarked == set(), "stale entries"
    here = globals()
    for test in set(COVERED.values()):
        path, _, name = test.rpartition("::")
        if path:
            with open(path, encoding="utf-8") as source:
                assert f"def {name}(" in source.read(), test
        else:
            assert callable(here.get(name)), test
