"""Write-only secrets never reach the audit table, the logs or an answer. What is secret is
marked once, on the request Struct's field (api/secret.py); these tests take every marked
field of every operation from the operation registry, and refuse a field whose name looks
secret but carries no mark."""

from __future__ import annotations

import itertools
import re
from typing import Any

import msgspec
import pytest
import structlog
from msgspec import inspect as mi
from sqlalchemy import select

from dutyline.api.operation import Operation
from dutyline.api.secret import MASK, for_audit, holds_secret, secret_paths
from dutyline.db.tables.platform import audit_log
from dutyline.domains import all_routers
from dutyline.kit.channels import APP_TYPES, WEBHOOK_TYPES
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

OPERATIONS: list[Operation] = [op for router in all_routers() for op in router.operations]
SECRET_OPERATIONS = [op for op in OPERATIONS if secret_paths(op.request_type)]

LOOKS_SECRET = re.compile(r"secret|token|passw|pwd|key|sign|auth|credential|header|cookie")
# Fields whose names look secret and are not: a choice, a flag, an id, a name, a key of
# a record. Each is "Struct.field" of a request type.
NOT_SECRET = {
    "A2aAgentCreateRequest.auth_type",  # none | api_key | bearer
    "A2aAgentUpdateRequest.auth_type",
    "AuthConfig.header_name",  # which header carries the key
    "McpServerCreateRequest.auth_mode",  # "shared"
    "McpServerUpdateRequest.auth_mode",
    "RuleUpdateRequest.rotate_http_post_trigger_token",  # a flag: make a new one
    "PageUpdateRequest.rotate_access_token",
    "RunnerKeyLookup.key_id",  # an id
    "AppKeyCreateRequest.key_name",
    "AppKeyDeleteRequest.key_id",
    "Group.i_keys",  # alert field names to group by
    "DataDeleteRequest.keys",  # row keys of a mapping schema
    "AlertListRequest.alert_keys",  # alerts' dedup keys
    "AssignIncidentRequest.assigned_to",  # "sign" in "assigned"
    "CreateIncidentRequest.assigned_to",
    "DSPrometheusConfig.basic_auth_enabled",
    "DSPrometheusConfig.basic_auth_username",
}


def _request_fields() -> dict[str, mi.Type]:
    """Every field of every request Struct reachable from the registry: "Struct.field"."""
    found: dict[str, mi.Type] = {}
    seen: set[type] = set()

    def walk(t: mi.Type) -> None:
        if isinstance(t, mi.Metadata):
            walk(t.type)
        elif isinstance(t, mi.StructType):
            if t.cls in seen:
                return
            seen.add(t.cls)
            for f in t.fields:
                found[f"{t.cls.__name__}.{f.encode_name}"] = f.type
                walk(f.type)
        elif isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
            walk(t.item_type)
        elif isinstance(t, mi.DictType):
            walk(t.value_type)
        elif isinstance(t, mi.UnionType | mi.TupleType):
            for x in t.types if isinstance(t, mi.UnionType) else t.item_types:
                walk(x)

    for op in OPERATIONS:
        walk(mi.type_info(op.request_type))
    return found


def test_every_field_that_looks_secret_is_marked() -> None:
    fields = _request_fields()
    unmarked = sorted(name for name, t in fields.items()
                      if LOOKS_SECRET.search(name.split(".", 1)[1].lower())
                      and not holds_secret(t) and name not in NOT_SECRET)
    assert unmarked == [], "mark them with api.secret.SECRET (or allow-list a look-alike)"
    assert sorted(NOT_SECRET - set(fields)) == []  # the allow-list names no stale field


def test_the_secrets_of_the_security_review_are_marked() -> None:
    marked = {op.path: secret_paths(op.request_type) for op in SECRET_OPERATIONS}
    prom = "payload.prometheus."
    for name in ("basic_auth_password", "params", "tls_key", "tls_key_pwd"):
        assert prom + name in marked["/monit/datasource/create"]
        assert prom + name in marked["/monit/datasource/update"]
    for key in ("secret", "sign_secret", "token"):
        assert f"layers[].target.webhooks[].settings{{{key}}}" in marked[
            "/channel/escalate/rule/create"]
    for name in ("verify_token", "sign_secret", "token"):
        assert f"notify.webhooks[].settings.{name}" in marked["/schedule/create"]


def test_masking_walks_by_type_not_by_name() -> None:
    from dutyline.monit.schemas import DataSourceUpsertRequest

    body = {"name": "password", "secret": "not a field: left out", "payload": {"prometheus": {
        "basic_auth_username": "u", "basic_auth_password": "p", "tls_key_pwd": "",
        "params": ["a=b"]}}}
    assert for_audit(body, DataSourceUpsertRequest) == {"name": "password", "payload": {
        "prometheus": {"basic_auth_username": "u", "basic_auth_password": MASK,
                       "tls_key_pwd": "", "params": MASK}}}


def test_credentials_inside_free_form_values_are_masked_by_name() -> None:
    from dutyline.incident.lifecycle.schemas import ResetIncidentFieldRequest

    body = {"incident_id": "a" * 24, "field_name": "ops",
            "field_value": {"note": "kept", "Password": "p", "nested": [{"token": "t"}]}}
    assert for_audit(body, ResetIncidentFieldRequest)["field_value"] == {
        "note": "kept", "Password": MASK, "nested": [{"token": MASK}]}


# -- the canaries -----------------------------------------------------------------------------

_counter = itertools.count()


def canary() -> str:
    return f"canary{next(_counter):04d}zq"


def plant(doc: Any, path: str, planted: list[str]) -> Any:
    """Put a fresh canary at `path` (secret_paths' syntax) in `doc`, building what is
    missing; every item of a list gets its own."""
    m = re.match(r"([^.\[{]*)(\[\]|\{[^}]*\}|\.)?(.*)", path)
    assert m is not None
    name, sep, rest = m.group(1), m.group(2) or "", m.group(3)
    if isinstance(doc, list):
        return [plant(item, path, planted) for item in doc]
    doc = dict(doc) if isinstance(doc, dict) else {}
    if not sep:
        value = canary()
        planted.append(value)
        given = doc.get(name)
        if isinstance(given, list) and given:
            # "Name: value" or "key=value": the value is the secret, the name is shown
            head = re.match(r"[^:=]*[:=] ?", given[0])
            doc[name] = [(head.group(0) if head else "") + value]
        else:
            doc[name] = value
    elif sep == "[]":
        items = doc.get(name) or [{}]
        doc[name] = [plant(item, rest.lstrip("."), planted) if rest else item for item in items]
        if not rest:
            value = canary()
            planted.append(value)
            doc[name] = [value]
    elif sep == ".":
        doc[name] = plant(doc.get(name, {}), rest, planted)
    else:
        key = sep[1:-1] or "X-Canary"
        inner = dict(doc.get(name) or {})
        value = canary()
        planted.append(value)
        inner[key] = value
        doc[name] = inner
    return doc


ROBOTS = sorted(set(WEBHOOK_TYPES) - APP_TYPES)


async def _bodies(api: Api, owner: Person) -> dict[str, dict[str, Any]]:
    """A valid body for the create operations, so their secrets are stored and read back;
    the others get only their secret fields (refused, and audited as failures)."""
    from tests.dispatch.support import PRESET_TEMPLATE, make_channel
    from tests.schedule.helpers import MONDAY_SHANGHAI, rotation

    channel_id = await make_channel(api, owner)
    hooks = [{"type": t, "settings": {"url": f"https://hooks.example.com/{t}", "chat_id": "7"}}
             for t in ROBOTS]
    return {
        "/channel/escalate/rule/create": {
            "channel_id": channel_id, "template_id": PRESET_TEMPLATE, "rule_name": "Robots",
            "layers": [{"target": {"webhooks": hooks}}]},
        "/monit/datasource/create": {
            "type_ident": "prometheus", "name": "prom", "address": "http://127.0.0.1:9",
            "edge_cluster_name": "default", "payload": {"prometheus": {
                "basic_auth_enabled": True, "basic_auth_username": "u",
                "headers": ["X-Scope-OrgID: t"], "params": ["dedup=true"]},
                # A Loki data source's block (the same fields), ignored on a Prometheus one.
                "loki": {"headers": ["X-Scope-OrgID: t"], "params": ["dedup=true"]}}},
        "/schedule/create": {
            "schedule_name": "Primary", "time_zone": "Asia/Shanghai",
            "layers": [rotation([owner.person_id], enable=MONDAY_SHANGHAI)],
            "notify": {"webhooks": [
                {"type": "feishu_app", "settings": {"chat_ids": ["oc_1"]}},
                {"type": "dingtalk_app", "settings": {"chat_ids": ["oc_2"]}}]}},
    }


# A client key must be a real PEM key for the create to succeed: these canaries go in the
# update's body only (refused there, and audited as a failure).
NOT_ON_CREATE = {"/monit/datasource/create": {"payload.prometheus.tls_key",
                                              "payload.prometheus.tls_key_pwd"}}

READ_BACKS = [
    ("/channel/escalate/rule/list", "channel_id"),
    ("/monit/datasource/list", None),
    ("/schedule/list", None),
    ("/safari/mcp/server/list", None),
    ("/safari/a2a-agent/list", None),
    ("/enrichment/mapping/api/list", None),
]


@pytest.mark.anyio
async def test_no_secret_reaches_the_audit_table_the_logs_or_an_answer(
        api: Api, owner: Person) -> None:
    bodies = await _bodies(api, owner)
    planted: list[str] = []
    answers: list[str] = []
    stored: set[str] = set()
    with structlog.testing.capture_logs() as logs:
        for op in SECRET_OPERATIONS:
            body = bodies.get(op.path, {})
            for path in secret_paths(op.request_type):
                if path not in NOT_ON_CREATE.get(op.path, ()):
                    body = plant(body, path, planted)
            reply = await api.call(op.path, body, key=owner.key)
            answers.append(msgspec.json.encode(reply.body).decode())
            if op.path in bodies:
                assert reply.status == 200, (op.path, reply.body)
                stored.add(op.path)
        channel_id = bodies["/channel/escalate/rule/create"]["channel_id"]
        for path, by_channel in READ_BACKS:
            reply = await api.call(path, {"channel_id": channel_id} if by_channel else {},
                                   key=owner.key)
            assert reply.status == 200, (path, reply.body)
            answers.append(msgspec.json.encode(reply.body).decode())
        search = await api.call("/audit/search", {}, key=owner.key)
        answers.append(msgspec.json.encode(search.body).decode())
    assert stored == set(bodies)
    assert NOT_ON_CREATE["/monit/datasource/create"] <= set(secret_paths(
        next(op for op in OPERATIONS if op.path == "/monit/datasource/update").request_type))
    # every robot type got its own secret of each kind, every operation was audited
    assert len(planted) >= len(ROBOTS) * 3 + len(SECRET_OPERATIONS)
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.account_id == owner.account_id))).all()
    audited = {row.operation for row in rows}
    assert {op.operation_name for op in SECRET_OPERATIONS if op.audited} <= audited
    table = "\n".join(repr(tuple(row)) for row in rows)
    assert MASK in table
    log_text = repr(logs)
    for value in planted:
        assert value not in table, value
        assert value not in log_text, value
        for answer in answers:
            assert value not in answer, (value, answer[:300])
