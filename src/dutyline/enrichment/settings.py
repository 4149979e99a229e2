"""Enrichment settings of an integration (reference EnrichRule) and their evaluation at ingest.

Rules run in order on every event the integration receives, before the alert is stored,
grouped or matched by noise rules; each may have an `if` (an AND list of label conditions):
- `extraction`: a regular expression (RE2; the named group `result`, else the whole match) or
  a GJson-style dotted path (into the JSON text of the field) over `title`, `description` or
  `labels.<key>` writes `result_label`;
- `composition`: a Go template over `{{.title}}`, `{{.description}}`, `{{.labels.key}}`
  writes `result_label`;
- `mapping`: the row of a mapping schema whose source labels equal the alert's adds the asked
  `result_labels` (all source labels must be present, else nothing);
- `drop`: removes `drop_labels`.
Without `override`, a label the alert already has is kept.

The compiled rules are cached per integration and reloaded when the setting's `version`
moves. Looked-up rows (and misses) are cached per integration too, for as long as the "data
epoch" of its schemas (the sum of their `data_version`s, read with the version in the one
query a push costs) stays put; a miss in that cache is one primary-key probe per schema
(consecutive mappings share one statement)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.channel.integration import service as integrations
from dutyline.db.per_integration import saved_values
from dutyline.enrichment import repository as repo
from dutyline.enrichment.api import lookup
from dutyline.enrichment.api import repository as api_repo
from dutyline.enrichment.api import service as api_service
from dutyline.enrichment.api.lookup import Answers, ApiTarget, Key, LookupsNeeded
from dutyline.enrichment.permissions import READ, WRITE
from dutyline.enrichment.schemas import EnrichmentItem
from dutyline.enrichment.tabular import row_key
from dutyline.kit.filters import Filter, FilterError, compile_filters, compile_regex
from dutyline.kit.gotemplate import Limits, Template, TemplateError

KINDS = ("extraction", "composition", "mapping", "drop")
_RESULT_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_TOP_FIELDS = ("title", "description", "severity", "event_status", "alert_key")
_LIMITS = Limits(max_steps=10_000, max_output=2048, max_depth=5, max_value=2048, max_seconds=0.25)
_MAX_VALUE = 2048
_encode = msgspec.json.encode
_decode_rules = msgspec.json.Decoder(list[Any])
_decode_labels = msgspec.json.Decoder(list[str])
_decode_vals = msgspec.json.Decoder(list[str])


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise errors.invalid(path, "must be an object")
    return value


def _str(settings: dict[str, Any], name: str, path: str, *, required: bool = True,
         max_len: int = 1024) -> str:
    value = settings.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise errors.invalid(f"{path}.{name}", "is required (a string)")
    if len(value) > max_len:
        raise errors.invalid(f"{path}.{name}", f"is at most {max_len} characters")
    return value


def _bool(settings: dict[str, Any], name: str, path: str) -> bool:
    value = settings.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise errors.invalid(f"{path}.{name}", "must be a boolean")
    return value


def _result_label(settings: dict[str, Any], path: str) -> str:
    label = _str(settings, "result_label", path, max_len=63)
    if not _RESULT_LABEL.match(label):
        raise errors.invalid(f"{path}.result_label", "must match ^[a-z][a-z0-9_]{0,62}$")
    return label


def _label_list(settings: dict[str, Any], name: str, path: str) -> list[str]:
    value = settings.get(name)
    if (not isinstance(value, list) or not value or len(value) > 50
            or not all(isinstance(v, str) and 0 < len(v) <= 128 for v in value)):
        raise errors.invalid(f"{path}.{name}", "must be a list of 1 to 50 label names")
    return list(dict.fromkeys(value))


def _condition_key(key: str) -> str:
    return key if key.startswith("labels.") or key in _TOP_FIELDS else f"labels.{key}"


def _compile_if(value: Any, path: str) -> Filter | None:
    if value is None or value == []:
        return None
    if not isinstance(value, list):
        raise errors.invalid(path, "must be a list of conditions")
    group = []
    for i, cond in enumerate(value):
        cond = _obj(cond, f"{path}[{i}]")
        key = cond.get("key")
        group.append({**cond, "key": _condition_key(key) if isinstance(key, str) else key})
    try:
        return compile_filters([group], path=path)
    except FilterError as exc:
        raise errors.invalid(exc.path.replace(f"{path}[0]", path, 1), exc.message) from None


# -- compiled rules ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    when: Filter | None
    override: bool = False
    result_label: str = ""
    source_field: str = ""
    pattern: Any = None
    g_json: tuple[str, ...] = ()
    template: Template | None = None
    schema_id: str = ""
    source_labels: tuple[str, ...] = ()
    # (result label, its position in the row's values)
    results: tuple[tuple[str, int], ...] = ()
    drop_labels: tuple[str, ...] = ()
    # mapping_type api (internal kind "api"): the API to call and the labels it may set.
    api: ApiTarget | None = None
    api_results: tuple[str, ...] = ()


def _check_rule(raw: Any, path: str) -> tuple[dict[str, Any], str]:
    """Shape checks that need no database; returns (settings, kind)."""
    rule = _obj(raw, path)
    kind = rule.get("kind")
    if kind not in KINDS:
        raise errors.invalid(f"{path}.kind", "must be one of " + ", ".join(KINDS))
    _compile_if(rule.get("if"), f"{path}.if")
    return _obj(rule.get("settings"), f"{path}.settings"), kind


def _compile_rule(raw: dict[str, Any], path: str,
                  schemas: dict[str, tuple[list[str], list[str]]],
                  apis: Mapping[str, ApiTarget | None]) -> Rule:
    settings, kind = _check_rule(raw, path)
    spath = f"{path}.settings"
    when = _compile_if(raw.get("if"), f"{path}.if")
    override = _bool(settings, "override", spath)
    if kind == "extraction":
        field = _str(settings, "source_field", spath, max_len=136)
        if field not in ("title", "description") and not (
                field.startswith("labels.") and len(field) > 7):
            raise errors.invalid(f"{spath}.source_field",
                                 "must be title, description or labels.<key>")
        pattern = _str(settings, "pattern", spath, required=False)
        g_json = _str(settings, "g_json", spath, required=False, max_len=256)
        if bool(pattern) == bool(g_json):
            raise errors.invalid(f"{spath}.pattern", "give exactly one of pattern and g_json")
        compiled = None
        if pattern:
            try:
                compiled = compile_regex(pattern, f"{spath}.pattern")
            except FilterError as exc:
                raise errors.invalid(exc.path, exc.message) from None
        return Rule(kind, when, override, result_label=_result_label(settings, spath),
                    source_field=field, pattern=compiled,
                    g_json=tuple(g_json.split(".")) if g_json else ())
    if kind == "composition":
        text = _str(settings, "template", spath, max_len=500)
        try:
            template = Template.parse(text, name="composition")
        except TemplateError as exc:
            raise errors.invalid(f"{spath}.template", str(exc)) from None
        return Rule(kind, when, override, result_label=_result_label(settings, spath),
                    template=template)
    if kind == "mapping":
        mapping_type = settings.get("mapping_type") or "schema"
        if mapping_type == "api":
            api_id = _str(settings, "api_id", spath, max_len=24).lower()
            if api_id not in apis:
                raise errors.invalid(f"{spath}.api_id", f"mapping API {api_id} not found")
            return Rule("api", when, override, api=apis[api_id],
                        api_results=tuple(_label_list(settings, "result_labels", spath)))
        if mapping_type != "schema":
            raise errors.invalid(f"{spath}.mapping_type", "must be schema or api")
        schema_id = _str(settings, "schema_id", spath, max_len=24).lower()
        if schema_id not in schemas:
            raise errors.invalid(f"{spath}.schema_id", f"mapping schema {schema_id} not found")
        source, result = schemas[schema_id]
        wanted = _label_list(settings, "result_labels", spath)
        unknown = [w for w in wanted if w not in result]
        if unknown:
            raise errors.invalid(f"{spath}.result_labels", "not result labels of the schema: "
                                 + ",".join(unknown))
        offset = len(source)
        return Rule(kind, when, override, schema_id=schema_id, source_labels=tuple(source),
                    results=tuple((w, offset + result.index(w)) for w in wanted))
    return Rule(kind, when, drop_labels=tuple(_label_list(settings, "drop_labels", spath)))


def _referenced_ids(rules: Sequence[Any], field: str) -> list[str]:
    """The schema ids (field "schema_id") or API ids ("api_id") mapping rules name."""
    ids: list[str] = []
    for rule in rules:
        if isinstance(rule, dict) and rule.get("kind") == "mapping":
            settings = rule.get("settings")
            if not isinstance(settings, dict):
                continue
            is_api = settings.get("mapping_type") == "api"
            if is_api == (field == "api_id") and isinstance(settings.get(field), str):
                ids.append(settings[field].lower()[:24])
    return list(dict.fromkeys(ids))


def _schema_ids(rules: Sequence[Any]) -> list[str]:
    return _referenced_ids(rules, "schema_id")


# -- service ---------------------------------------------------------------------------------------


def _item(row: Any) -> EnrichmentItem:
    return EnrichmentItem(
        integration_id=row.integration_id, rules=_decode_rules.decode(row.rules),
        status=row.status, updated_by=row.updated_by, creator_id=row.creator_id,
        created_at=row.created_at, updated_at=row.updated_at)


@writes("/enrichment/upsert", *WRITE)
async def upsert(conn: AsyncConnection, actor: Actor, *, integration_id: int,
                 rules: list[Any]) -> None:
    """Check and store an integration's rules (a bad rule is a 400 naming it; nothing is
    written) for a live integration the actor sees (another's: not found)."""
    actor.note_audit_targets(integration_id)
    await integrations.require_live(conn, actor, integration_id=integration_id)
    for i, rule in enumerate(rules):
        _check_rule(rule, f"rules[{i}]")
    ids = _schema_ids(rules)
    found = await repo.schemas_by_id(conn, actor.account_id, ids) if ids else {}
    schemas = {sid: (_decode_labels.decode(r.source_labels), _decode_labels.decode(
        r.result_labels)) for sid, r in found.items()}
    api_ids = _referenced_ids(rules, "api_id")
    apis = dict.fromkeys(await api_service.existing_api_ids(conn, actor, api_ids=api_ids))
    for i, rule in enumerate(rules):
        _compile_rule(rule, f"rules[{i}]", schemas, apis)
    existing = await repo.get_setting(conn, actor.account_id, integration_id)
    values = saved_values(actor, {"rules": _encode(rules).decode()}, new=existing is None)
    # API ids share the reference table with schema ids (both random 24-hex ids): each is
    # refused deletion while a setting names it.
    await repo.save_setting(conn, exists=existing is not None, integration_id=integration_id,
                            values=values, schema_ids=ids + api_ids)


@reads_sync(*READ)
def info_sync(conn: Connection, actor: Actor, *, integration_id: int) -> EnrichmentItem:
    integrations.require_live_sync(conn, actor, integration_id=integration_id)
    row = repo.get_setting_sync(conn, actor.account_id, integration_id)
    if row is None:
        return EnrichmentItem(integration_id=integration_id, rules=[], status="enabled",
                              updated_by=0, creator_id=0, created_at=0, updated_at=0)
    return _item(row)


@reads_sync(*READ)
def list_settings_sync(conn: Connection, actor: Actor, *,
                       integration_ids: list[int]) -> list[EnrichmentItem]:
    if not integration_ids:
        return []
    return [_item(r) for r in repo.list_settings_sync(conn, actor.account_id,
                                                       integration_ids)]


# -- ingest (sync, on the push's connection) -------------------------------------------------------

_CACHE: dict[int, tuple[int, tuple[Rule, ...]]] = {}
_CACHE_MAX = 10_000
# Rows looked up per integration: ((setting version, data epoch), {(schema_id, key): vals, or
# None if absent}). The version is part of the key: a setting that stops reading a schema
# takes its data_version out of the epoch's sum, which another schema's writes could refill.
_ROWS: dict[int, tuple[tuple[int, int], dict[tuple[str, str], str | None]]] = {}
_ROWS_MAX = 20_000  # entries per integration; the map starts over beyond it


def _load(conn: Connection, integration_id: int, version: int | None,
          epoch: int) -> tuple[tuple[Rule, ...], dict[tuple[str, str], str | None]]:
    """The integration's compiled rules and its cache of looked-up rows."""
    if version is None:
        return (), {}
    rows = _ROWS.get(integration_id)
    if rows is None or rows[0] != (version, epoch) or len(rows[1]) > _ROWS_MAX:
        if len(_ROWS) >= _CACHE_MAX:
            _ROWS.clear()
        rows = _ROWS[integration_id] = ((version, epoch), {})
    cached = _CACHE.get(integration_id)
    if cached is not None and cached[0] == version:
        return cached[1], rows[1]
    row = repo.setting_sync(conn, integration_id)
    if row is None:
        return (), {}
    raw = _decode_rules.decode(row.rules)
    ids = _schema_ids(raw)
    schemas = {r.schema_id: (_decode_labels.decode(r.source_labels),
                             _decode_labels.decode(r.result_labels))
               for r in repo.schema_labels_sync(conn, ids)} if ids else {}
    api_ids = _referenced_ids(raw, "api_id")
    apis = {r.api_id: ApiTarget(r.api_id, r.url, r.headers_sealed, r.timeout, r.retry_count,
                                r.updated_at)
            for r in api_repo.targets_sync(conn, api_ids)} if api_ids else {}
    compiled: list[Rule] = []
    for i, rule in enumerate(raw):
        try:
            compiled.append(_compile_rule(rule, f"rules[{i}]", schemas, apis))
        except errors.ApiError:
            continue  # its schema vanished since it was written: skip it, keep the rest
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[integration_id] = (row.version, tuple(compiled))
    return _CACHE[integration_id][1], rows[1]


def _set(labels: dict[str, str], name: str, value: str, override: bool) -> None:
    if override or name not in labels:
        labels[name] = value[:_MAX_VALUE]


def _field(subject: dict[str, Any], labels: dict[str, str], field: str) -> str | None:
    if field.startswith("labels."):
        return labels.get(field[7:])
    value = subject.get(field)
    return value if isinstance(value, str) else None


def _g_json(text: str, path: tuple[str, ...]) -> str | None:
    try:
        node: Any = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    for step in path:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return None
    if node is None or isinstance(node, (dict, list)):
        return None if node is None else msgspec.json.encode(node).decode()
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _extract(rule: Rule, subject: dict[str, Any], labels: dict[str, str]) -> str | None:
    text = _field(subject, labels, rule.source_field)
    if text is None:
        return None
    if rule.g_json:
        return _g_json(text, rule.g_json)
    m = rule.pattern.search(text)
    if m is None:
        return None
    if "result" in rule.pattern.groupindex:
        return m.group("result")  # type: ignore[no-any-return]
    return m.group(0)  # type: ignore[no-any-return]


def enrich_sync(conn: Connection, integration_id: int, *, version: int | None, epoch: int,
                title: str, description: str, severity: str, labels: dict[str, str],
                now_s: int = 0, answers: Answers | None = None) -> dict[str, str] | None:
    """The labels of an event after the integration's enrichment (at setting `version` and
    data `epoch`, from `ingest_state_sync`), or None when it has no rules. A mapping API
    whose answer is not known yet (in the process's cache or `answers`) raises
    LookupsNeeded once every rule has run, before the caller writes anything."""
    rules, known = _load(conn, integration_id, version, epoch)
    if not rules:
        return None
    pending: list[Key] = []
    out = dict(labels)
    subject: dict[str, Any] = {"title": title, "description": description,
                               "severity": severity, "event_status": severity,
                               "labels": out}
    i, n = 0, len(rules)
    while i < n:
        rule = rules[i]
        if rule.kind == "mapping":
            i = _mappings(conn, rules, i, subject, out, known)
            continue
        i += 1
        if rule.when is not None and not rule.when.matches(subject):
            continue
        if rule.kind == "drop":
            for name in rule.drop_labels:
                out.pop(name, None)
        elif rule.kind == "api":
            assert rule.api is not None
            found = lookup.answer(rule.api, out, now_s=now_s, answers=answers,
                                  pending=pending)
            for name in rule.api_results:
                if found and name in found:
                    _set(out, name, found[name], rule.override)
        elif rule.kind == "extraction":
            value = _extract(rule, subject, out)
            if value is not None:
                _set(out, rule.result_label, value, rule.override)
        else:
            assert rule.template is not None
            try:
                value = rule.template.render(subject, limits=_LIMITS)
            except TemplateError:
                continue
            _set(out, rule.result_label, value, rule.override)
    if pending:
        raise LookupsNeeded(pending)
    return out


def _mappings(conn: Connection, rules: tuple[Rule, ...], start: int, subject: dict[str, Any],
              labels: dict[str, str], known: dict[tuple[str, str], str | None]) -> int:
    """Apply the run of consecutive mapping rules from `start` with one lookup; a mapping
    whose source labels another mapping of the run writes ends the run. Returns the index of
    the first rule after the run."""
    wanted: list[tuple[Rule, tuple[str, str]]] = []
    written: set[str] = set()
    i = start
    while i < len(rules) and rules[i].kind == "mapping":
        rule = rules[i]
        if written.intersection(rule.source_labels):
            break
        i += 1
        written.update(name for name, _ in rule.results)
        if rule.when is not None and not rule.when.matches(subject):
            continue
        values = [labels.get(name) for name in rule.source_labels]
        if any(v is None for v in values):
            continue
        wanted.append((rule, (rule.schema_id, row_key(values))))  # type: ignore[arg-type]
    if wanted:
        missing = [key for key in dict.fromkeys(key for _, key in wanted) if key not in known]
        if missing:
            found = repo.lookup_sync(conn, missing)
            for key in missing:
                known[key] = found.get(key)
        for rule, key in wanted:
            vals = known.get(key)
            if vals is None:
                continue
            decoded = _decode_vals.decode(vals)
            for name, position in rule.results:
                if position < len(decoded):
                    _set(labels, name, decoded[position], rule.override)
    return i
