"""Alert pipelines (reference AlertPipeline*): an integration's ordered processing rules, run on
every event it receives before enrichment, noise rules and grouping. Each rule has an optional
`if` (an OR-of-AND filter over `title`, `description`, `severity`/`alert_severity`,
`alert_key` and `labels.<name>`):
- `title_reset` / `description_reset`: a Go template over the event (`{{.title}}`,
  `{{.description}}`, `{{.severity}}`, `{{.labels.host}}`) replaces the title (its rule: label
  placeholders `$host` still apply) or the description;
- `severity_reset`: Critical, Warning or Info (a recovery, `Ok`, stays a recovery);
- `alert_drop`: the event is answered 200 and not stored.
`alert_inhibit` is refused for now (channels' inhibit rules cover it).

Compiled rules are cached per integration and reloaded when the pipeline's `version` moves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INTEGRATION_MANAGE, INTEGRATION_VIEW
from dutyline.channel.integration import service as integrations
from dutyline.channel.pipeline import repository as repo
from dutyline.db.per_integration import saved_values
from dutyline.kit.filters import Filter, FilterError, compile_filters
from dutyline.kit.gotemplate import Limits, Template, TemplateError
from dutyline.kit.vocabulary import OK, SEVERITIES

KINDS = ("title_reset", "description_reset", "severity_reset", "alert_drop")
_LIMITS = Limits(max_steps=10_000, max_output=16_384, max_depth=5, max_value=16_384,
                 max_seconds=0.25)
_encode = msgspec.json.encode
_decode_rules = msgspec.json.Decoder(list[Any])


class PipelineItem(msgspec.Struct, kw_only=True):
    integration_id: int
    rules: list[Any]
    status: str
    creator_id: int
    updated_by: int
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    when: Filter | None
    template: Template | None = None
    severity: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """An event after the pipeline: dropped, or its (possibly new) fields."""

    drop: bool
    title_rule: str
    description: str
    severity: str


def _compile(raw: Any, path: str) -> Rule:
    if not isinstance(raw, dict):
        raise errors.invalid(path, "must be an object")
    kind = raw.get("kind")
    if kind == "alert_inhibit":
        raise errors.invalid(f"{path}.kind", "alert_inhibit is not supported; use the "
                                             "channel's inhibit rules")
    if kind not in KINDS:
        raise errors.invalid(f"{path}.kind", "must be one of " + ", ".join(KINDS))
    when: Filter | None = None
    if raw.get("if") not in (None, []):
        try:
            when = compile_filters(raw["if"], path=f"{path}.if")
        except FilterError as exc:
            raise errors.invalid(exc.path, exc.message) from None
    settings = raw.get("settings", {})
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise errors.invalid(f"{path}.settings", "must be an object")
    if kind in ("title_reset", "description_reset"):
        name = "title" if kind == "title_reset" else "description"
        text = settings.get(name)
        limit = 512 if name == "title" else 16_384
        if not isinstance(text, str) or not text.strip() or len(text) > limit:
            raise errors.invalid(f"{path}.settings.{name}",
                                 f"is required (a template of 1 to {limit} characters)")
        try:
            template = Template.parse(text, name=name)
        except TemplateError as exc:
            raise errors.invalid(f"{path}.settings.{name}", str(exc)) from None
        return Rule(kind, when, template=template)
    if kind == "severity_reset":
        severity = settings.get("severity")
        if severity not in SEVERITIES:
            raise errors.invalid(f"{path}.settings.severity",
                                 "must be one of " + ", ".join(SEVERITIES))
        return Rule(kind, when, severity=severity)
    return Rule(kind, when)


def _item(row: Any) -> PipelineItem:
    return PipelineItem(integration_id=row.integration_id,
                        rules=_decode_rules.decode(row.rules), status=row.status,
                        creator_id=row.creator_id, updated_by=row.updated_by,
                        created_at=row.created_at, updated_at=row.updated_at)


@writes("/alert/pipeline/upsert", INTEGRATION_MANAGE)
async def upsert(conn: AsyncConnection, actor: Actor, *, integration_id: int,
                 rules: list[Any]) -> None:
    """Check and store the pipeline of a live integration the actor sees."""
    await integrations.require_live(conn, actor, integration_id=integration_id)
    actor.note_audit_targets(integration_id)
    for i, rule in enumerate(rules):
        _compile(rule, f"rules[{i}]")
    existing = await repo.get(conn, actor.account_id, integration_id)
    values = saved_values(actor, {"rules": _encode(rules).decode()}, new=existing is None)
    await repo.save(conn, exists=existing is not None, integration_id=integration_id,
                    values=values)


@reads_sync(INTEGRATION_VIEW, INTEGRATION_MANAGE)
def info_sync(conn: Connection, actor: Actor, *, integration_id: int) -> PipelineItem:
    """The pipeline of a live integration the actor sees (an empty, enabled one when none
    was written)."""
    integrations.require_live_sync(conn, actor, integration_id=integration_id)
    row = repo.get_sync(conn, actor.account_id, integration_id)
    if row is None:
        return PipelineItem(integration_id=integration_id, rules=[], status="enabled",
                            creator_id=0, updated_by=0, created_at=0, updated_at=0)
    return _item(row)


@reads_sync(INTEGRATION_VIEW, INTEGRATION_MANAGE)
def list_pipelines_sync(conn: Connection, actor: Actor, *,
                        integration_ids: list[int]) -> list[PipelineItem]:
    return [_item(r) for r in repo.list_for_sync(conn, actor.account_id, integration_ids)]


# -- ingest (sync, on the push's connection) ----------------------------------------------------

_CACHE: dict[int, tuple[int, tuple[Rule, ...]]] = {}
_CACHE_MAX = 10_000


def _load(conn: Connection, integration_id: int, version: int | None) -> tuple[Rule, ...]:
    if version is None:
        return ()
    cached = _CACHE.get(integration_id)
    if cached is not None and cached[0] == version:
        return cached[1]
    row = repo.rules_sync(conn, integration_id)
    if row is None:
        return ()
    compiled = []
    for i, raw in enumerate(_decode_rules.decode(row.rules)):
        try:
            compiled.append(_compile(raw, f"rules[{i}]"))
        except errors.ApiError:
            continue
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[integration_id] = (row.version, tuple(compiled))
    return _CACHE[integration_id][1]


def apply_sync(conn: Connection, integration_id: int, *, version: int | None,
               title_rule: str, description: str, severity: str, alert_key: str,
               labels: dict[str, str]) -> Outcome | None:
    """The event after the integration's pipeline (at `version`, from the enrichment
    service's `ingest_state_sync`), or None when it has none."""
    rules = _load(conn, integration_id, version)
    if not rules:
        return None
    subject: dict[str, Any] = {"title": title_rule, "description": description,
                               "severity": severity, "alert_severity": severity,
                               "alert_key": alert_key, "labels": labels}
    for rule in rules:
        if rule.when is not None and not rule.when.matches(subject):
            continue
        if rule.kind == "alert_drop":
            return Outcome(True, subject["title"], subject["description"], subject["severity"])
        if rule.kind == "severity_reset":
            if subject["severity"] != OK:
                subject["severity"] = subject["alert_severity"] = rule.severity
            continue
        assert rule.template is not None
        try:
            text = rule.template.render(subject, limits=_LIMITS)
        except TemplateError:
            continue
        if rule.kind == "title_reset":
            if text.strip():
                subject["title"] = text[:512]
        else:
            subject["description"] = text[:16_384]
    return Outcome(False, subject["title"], subject["description"], subject["severity"])
