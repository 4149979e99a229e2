"""A request and a response example for every operation of the OpenAPI document.

A request example is the reference's own (its fields that we also take) where it has one,
else `REQUESTS` below, else the request's required fields. A response example is built
from our response schema, so it always fits it, with the reference's example values put in
wherever they fit the same field. Ids in examples are illustrations: a request naming an
id answers `not found` until it names one of yours."""

from __future__ import annotations

from typing import Any

import re2

from dutyline.api.openapi_words import reference

Schema = dict[str, Any]
_DEPTH = 12

# Operations the reference has no example for, whose body needs more than their required
# fields to be accepted.
REQUESTS: dict[str, dict[str, Any]] = {
    "/channel/notify/rule/create": {
        "channel_id": 3521074710131, "rule_name": "Tell the team on acknowledge",
        "events": ["i_ack"],
        "target": {"person_ids": [3790925372131], "by": {"follow_preference": True}}},
    "/channel/notify/rule/update": {
        "channel_id": 3521074710131, "rule_id": "6621b23f4a2c5e0012ab34cd",
        "rule_name": "Tell the team on acknowledge or close", "events": ["i_ack", "i_rslv"],
        "target": {"person_ids": [3790925372131], "by": {"follow_preference": True}}},
    "/status-page/change/create": {
        "page_id": 5750613685214, "type": "incident", "title": "Web console is slow",
        "status": "investigating", "start_at_seconds": 1712000000, "notify_subscribers": False,
        "updates": [{"status": "investigating",
                     "description": "We are looking into slow pages in the web console."}]},
    "/safari/automation/rule/create": {
        "name": "Morning digest", "prompt": "Summarise the incidents of the last 24 hours.",
        "cron_expr": "0 9 * * 1-5", "timezone": "Asia/Shanghai", "team_id": 0,
        "enabled": True, "schedule_trigger_enabled": True},
    "/safari/a2a-agent/create": {
        "agent_name": "Database expert",
        "card_url": "https://agents.example.com/.well-known/agent-card.json",
        "instructions": "Ask it about slow queries and replication lag.", "auth_type": "none"},
    "/safari/mcp/server/create": {
        "server_name": "Grafana", "url": "https://mcp.example.com/mcp",
        "transport": "streamable-http", "connect_timeout": 10, "call_timeout": 30},
    "/safari/worknode/create": {"name": "dc1-runner", "description": "Runner in the DC1 network"},
    "/report/oncall/notifications": {"start_time": 1712000000, "end_time": 1712604800,
                                     "step": "day"},
    "/report/oncall/changes": {"start_time": 1712000000, "end_time": 1712604800,
                               "step": "day"},
    "/field/create": {"field_name": "affected_service", "display_name": "Affected service",
                      "field_type": "text", "description": "The service customers noticed."},
    "/field/info": {"field_name": "affected_service"},
    "/field/delete": {"field_id": "65f1c2a9e4b0a1b2c3d4e5f6"},
    "/enrichment/mapping/data/upload": {
        "schema_id": "665f1a2b3c4d5e6f7a8b9c01", "truncate": False,
        "file": "host,owner,team,service\nserver03,carol,sre,billing\n"},
    "/member/invite": {"members": [{
        "member_name": "Charlie", "email": "charlie@example.com", "role_ids": [4021],
        "locale": "en-US", "time_zone": "Asia/Shanghai"}]},
    "/member/delete": {"member_id": 5068740052131},
    "/member/role/update": {"member_id": 5068740052131, "role_ids": [4021]},
    "/webhook/history/detail": {"event_id": "66a0c2f1e4b0a1b2c3d4e5f6-1",
                                "integration_id": 6113996590131},
    "/monit/datasource/update": {
        "id": 10, "type_ident": "prometheus", "name": "Prometheus Prod",
        "edge_cluster_name": "default", "address": "http://prometheus-v2.example.com:9090",
        "payload": {"prometheus": {"basic_auth_enabled": False}},
        "note": "Moved to the new Prometheus server"},
    "/monit/datasource/query": {"ds_id": 1, "expr": "up"},
    "/monit/query/rows": {"ds_type": "prometheus", "ds_name": "Prometheus Prod",
                          "expr": "up{job=\"node\"}"},
    "/monit/query/diagnose": {
        "ds_type": "prometheus", "ds_name": "Prometheus Prod", "operation": "metric_trends",
        "input": {"query": "rate(node_cpu_seconds_total{mode=\"user\"}[5m])"},
        "time_range": {"start": 1712000000, "end": 1712000900}},
    "/monit/tools/catalog": {"target_locator": "host:web-01"},
    "/monit/tools/invoke": {"target_locator": "host:web-01", "tools": [
        {"tool": "host.cpu", "params": {}},
        {"tool": "promql_query", "params": {"query": "up{instance=\"web-01:9100\"}"}}]},
}


class _Builder:
    def __init__(self, components: dict[str, Schema]) -> None:
        self.components = components

    def resolve(self, schema: Schema) -> Schema:
        while "$ref" in schema:
            schema = self.components.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return schema

    def value(self, schema: Schema, like: Any = None, depth: int = 0) -> Any:
        """A value that fits `schema`: `like` where it fits, else one made up."""
        schema = self.resolve(schema)
        if "anyOf" in schema or "oneOf" in schema:
            options: list[Schema] = schema.get("anyOf") or schema.get("oneOf") or []
            kinds = [self.resolve(k) for k in options]
            if like is None and any(k.get("type") == "null" for k in kinds):
                return None
            for option in kinds:
                if option.get("type") != "null" and _fits_kind(option, like):
                    return self.value(option, like, depth)
            solid = [k for k in kinds if k.get("type") != "null"]
            return self.value(solid[0], None, depth) if solid else None
        if "enum" in schema:
            return like if like in schema["enum"] else schema["enum"][0]
        if "const" in schema:
            return schema["const"]
        kind: Any = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or "properties" in schema:
            return self.object(schema, like if isinstance(like, dict) else None, depth)
        if kind == "array":
            if depth >= _DEPTH and not schema.get("minItems"):
                return []
            items = schema.get("items", {})
            given = like if isinstance(like, list) else None
            count = 1 if given is None else min(len(given), 5)
            count = max(min(count, schema.get("maxItems", count)), schema.get("minItems", 0))
            given = given or []
            return [self.value(items, given[i] if i < len(given) else None, depth + 1)
                    for i in range(count)]
        if kind == "string":
            fits = isinstance(like, str) and (_fits_string(schema, like) or (
                "pattern" in schema and re2.search(schema["pattern"], like) is not None))
            return like if fits else _string(schema)
        if kind == "integer":
            if isinstance(like, int) and not isinstance(like, bool) and _in_range(schema, like):
                return like
            return _number(schema, 1)
        if kind == "number":
            if isinstance(like, int | float) and not isinstance(like, bool) and _in_range(
                    schema, like):
                return like
            return _number(schema, 1.5)
        if kind == "boolean":
            return like if isinstance(like, bool) else bool(schema.get("default", False))
        if kind == "null":
            return None
        return like if like is not None else {}

    def object(self, schema: Schema, like: dict[str, Any] | None, depth: int) -> Any:
        props: dict[str, Schema] = schema.get("properties") or {}
        if not props:
            return like if like is not None else {}
        required = set(schema.get("required") or ())
        out: dict[str, Any] = {}
        for name, field in props.items():
            given = (like or {}).get(name)
            if name in required or (like is not None and name in like) or (
                    like is None and depth < 3):
                out[name] = self.value(field, given, depth + 1)
        return out


def _fits_kind(kind: Schema, like: Any) -> bool:
    t = kind.get("type")
    if like is None:
        return True
    if "enum" in kind:
        return like in kind["enum"]
    fits = {"string": isinstance(like, str), "integer": isinstance(like, int),
            "number": isinstance(like, int | float), "boolean": isinstance(like, bool),
            "array": isinstance(like, list), "object": isinstance(like, dict)}
    return fits.get(str(t), "$ref" in kind or "properties" in kind)


def _fits_string(schema: Schema, like: str) -> bool:
    return (schema.get("minLength", 0) <= len(like) <= schema.get("maxLength", 10**9)
            and "pattern" not in schema and "format" not in schema)


def _in_range(schema: Schema, number: float) -> bool:
    return bool(schema.get("minimum", -1e30) <= number <= schema.get("maximum", 1e30)
                and number > schema.get("exclusiveMinimum", -1e30)
                and number < schema.get("exclusiveMaximum", 1e30))


# A value for each pattern our schemas use (an example must match its field's pattern).
_PATTERN_VALUES = {
    "^[0-9a-fA-F]{24}$": "65f1c2a9e4b0a1b2c3d4e5f6",
    "^[0-9a-f]{24}$": "65f1c2a9e4b0a1b2c3d4e5f6",
    "^([0-9a-fA-F]{24})?$": "65f1c2a9e4b0a1b2c3d4e5f6",
    "^[0-9a-fA-F]{32}$": "0123456789abcdef0123456789abcdef",
    "^(created_at|updated_at|)$": "created_at",
    "^[!-~]+$": "example",
    "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$": "X-Example",
    "^[A-Za-z_][A-Za-z0-9_.\\-]{0,127}$": "example",
    "^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$": "example",
    "^(prod|staging|dev).*$": "prod",
    "(?P<result>prod|staging|dev)": "prod",
}


def _string(schema: Schema) -> str:
    if isinstance(schema.get("default"), str) and schema["default"]:
        return str(schema["default"])
    if "pattern" in schema:
        return _PATTERN_VALUES.get(schema["pattern"], "")
    if "format" in schema:
        formats = {"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01",
                   "email": "alice@example.com", "uri": "https://example.com/"}
        return formats.get(str(schema["format"]), "")
    word = "example"
    low, high = int(schema.get("minLength", 0)), int(schema.get("maxLength", 10**9))
    return (word * (low // len(word) + 1))[:max(low, min(high, len(word)))]


def _number(schema: Schema, fallback: float) -> Any:
    if "default" in schema and _in_range(schema, schema["default"]):
        return schema["default"]
    low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1
                     if "exclusiveMinimum" in schema else None)
    if low is not None and low > fallback:
        return low
    high = schema.get("maximum")
    if high is not None and high < fallback:
        return high
    return int(fallback) if isinstance(fallback, int) else fallback


def _content(operation: dict[str, Any], status: str | None = None) -> dict[str, Any]:
    holder = operation.get("requestBody", {}) if status is None else operation.get(
        "responses", {}).get(status, {})
    found: dict[str, Any] = holder.get("content", {}).get("application/json", {})
    return found


def _example_of(content: dict[str, Any]) -> Any:
    if "example" in content:
        return content["example"]
    for named in (content.get("examples") or {}).values():
        if isinstance(named, dict) and "value" in named:
            return named["value"]
    return None


def _only_known(body: Any, schema: Schema, build: _Builder) -> Any:
    """The reference's request example, less the fields this server does not take."""
    schema = build.resolve(schema)
    props = schema.get("properties")
    if not isinstance(body, dict) or not props:
        return body
    return {k: v for k, v in body.items() if k in props}


def attach(spec: dict[str, Any]) -> None:
    ref = reference()
    build = _Builder(spec["components"]["schemas"])
    for path, item in spec["paths"].items():
        post = item["post"]
        theirs = ref["paths"].get(path, {}).get("post", {})
        body_content = _content(post)
        body = REQUESTS.get(path)
        if body is None:
            given = _example_of(_content(theirs))
            given = _only_known(given, body_content["schema"], build)
            body = build.value(body_content["schema"], given if isinstance(given, dict) else {})
        body_content["example"] = body
        answer = _content(post, "200")
        answer["example"] = build.value(answer["schema"], _example_of(_content(theirs, "200")))
