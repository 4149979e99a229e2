"""Rules of monit: alert rules, each rule's schedule kept in step with it in the same
transaction (data sources: datasources.py)."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import ALERT_RULE_MANAGE
from dutyline.kit.cron import CronInvalid, next_after
from dutyline.kit.ids import numeric_id
from dutyline.kit.vocabulary import SEVERITY_KEYS
from dutyline.monit import agent_schemas, conditions, datasources, engine, history, prom, tools
from dutyline.monit import repository as repo
from dutyline.monit.schemas import (
    DS_TYPES,
    RULE_DS_TYPES,
    UPDATABLE_FIELDS,
    AlertRule,
    AlertRuleBasic,
    AlertRuleExport,
    AlertRuleStatus,
    EvalStatus,
    NameMessage,
    QueryResponse,
    QueryRow,
    RuleBody,
    RuleConfigs,
    RuleSpec,
    decode_body,
    shaped,
)
from dutyline.work import scheduler

SCHEDULE_KIND = "monit.rule"
_EVERY = re.compile(r"^@every\s+([0-9]+)(s|m|h)$")
_TIME = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")
MIN_INTERVAL_S = 5


# Data sources live in datasources.py; what the rest of monit uses of them is named here.
open_payload = datasources.open_payload
matching_datasources = datasources.matching_datasources
create_datasource = datasources.create_datasource
update_datasource = datasources.update_datasource
get_datasource = datasources.get_datasource
get_datasource_sync = datasources.get_datasource_sync
list_datasources = datasources.list_datasources
list_datasources_sync = datasources.list_datasources_sync
delete_datasource = datasources.delete_datasource
# The agent-facing tools over monitored targets, for an automation's agent loop.
tools_catalog = tools.catalog
tools_invoke = tools.invoke
InvokeTool = agent_schemas.InvokeTool
DataSourceSpec = datasources.DataSourceSpec


@reads(ALERT_RULE_MANAGE)
async def query_datasource(conn: AsyncConnection, actor: Actor, *, ds_id: int, expr: str,
                           at: float, deps: Deps) -> QueryResponse:
    """A PromQL instant query against a data source: the rows a rule would see."""
    row = await datasources.require_datasource_row(conn, actor, ds_id=ds_id)
    target = engine.target_of(deps.box, row)
    try:
        result = await prom.instant_query(deps.policy, target, expr, at,
                                          transport=engine.transport_override)
    except prom.QueryFailed as exc:
        raise errors.BadRequest("The query failed: {reason}", reason=exc.reason) from None
    return QueryResponse(result_type=result.result_type,
                         rows=[QueryRow(labels=s.labels, value=s.value) for s in result.samples])


# --- rules -----------------------------------------------------------------------------


def schedule_of(cron_pattern: str) -> tuple[str, int]:
    """(cron expression, interval ms) of a rule's `cron_pattern`: 5-field cron, or our
    `@every 30s` form for an interval."""
    text = " ".join(cron_pattern.split())
    every = _EVERY.match(text)
    if every:
        seconds = int(every.group(1)) * {"s": 1, "m": 60, "h": 3600}[every.group(2)]
        if not MIN_INTERVAL_S <= seconds <= 86_400:
            raise errors.invalid("cron_pattern",
                                 f"the interval must be {MIN_INTERVAL_S}s to 24h")
        return "", seconds * 1000
    if text.startswith("@") or len(text.split()) != 5:
        raise errors.invalid("cron_pattern", "must be a 5-field cron expression or '@every 30s'")
    try:
        next_after(text, "UTC", 0)
    except (CronInvalid, ValueError, KeyError):
        raise errors.invalid("cron_pattern", "is not a valid cron expression") from None
    return text, 0


def _check_configs(spec: RuleSpec) -> None:
    cfg = spec.rule_configs
    queries = [q for q in cfg.queries if q.expr.strip()]
    if not queries:
        raise errors.invalid("rule_configs.queries", "needs at least one query with an expr")
    names = [q.name for q in cfg.queries]
    if len(set(names)) != len(names) or any(not n or not n.isalpha() for n in names):
        raise errors.invalid("rule_configs.queries", "names must be unique letters")
    if "R" in names:
        raise errors.invalid("rule_configs.queries", "the name R is reserved")
    relate = [r.name for r in cfg.relate_queries]
    if set(relate) & set(names) or len(set(relate)) != len(relate) or any(
            not r.name or not r.expr.strip() for r in cfg.relate_queries):
        raise errors.invalid("rule_configs.relate_queries",
                             "need a unique name and an expr each")
    checks = [c for c in (cfg.check_threshold, cfg.check_anydata, cfg.check_nodata)
              if c is not None and c.enabled]
    if not checks:
        raise errors.invalid("rule_configs", "enable one of check_threshold, check_anydata "
                             "or check_nodata")
    threshold = cfg.check_threshold
    if threshold is not None and threshold.enabled:
        exprs = {key: getattr(threshold, key) for key in SEVERITY_KEYS}
        if not any(e.strip() for e in exprs.values()):
            raise errors.invalid("rule_configs.check_threshold",
                                 "needs a critical, warning or info condition")
        recovery = threshold.recovery
        if recovery is not None and recovery.mode == "threshold":
            exprs["recovery.condition"] = recovery.condition or "?"
        for key, expr in exprs.items():
            if not expr.strip():
                continue
            try:
                conditions.compile_condition(expr)
            except conditions.ConditionInvalid as exc:
                raise errors.invalid(f"rule_configs.check_threshold.{key}", str(exc)) from None
            unknown = conditions.names_in(expr) - set(names)
            if unknown:
                raise errors.invalid(f"rule_configs.check_threshold.{key}",
                                     f"names unknown queries {sorted(unknown)}")
    anydata = cfg.check_anydata
    if (anydata is not None and anydata.enabled and anydata.recovery is not None
            and anydata.recovery.mode == "ql"):
        if not anydata.recovery.condition.strip():
            raise errors.invalid("rule_configs.check_anydata.recovery.condition",
                                 "is required when mode is ql")
        if names != ["A"]:
            raise errors.invalid("rule_configs.check_anydata.recovery",
                                 "mode ql allows a single query named A")


def _check_times(spec: RuleSpec) -> None:
    for n, window in enumerate(spec.enabled_times):
        for key in ("stime", "etime"):
            value = getattr(window, key)
            if not _TIME.match(value):
                raise errors.invalid(f"enabled_times[{n}].{key}", "must be HH:MM")


async def _check_channels(conn: AsyncConnection, actor: Actor, channel_ids: list[int]) -> None:
    from dutyline.channel.service import channel_names  # the channel domain's service

    found = await channel_names(conn, actor, channel_ids)
    for channel_id in channel_ids:
        if channel_id not in found or found[channel_id][1] == "deleted":
            raise errors.invalid("channel_ids", f"channel {channel_id} does not exist")


async def _check_datasources(conn: AsyncConnection, actor: Actor, spec: RuleSpec) -> None:
    if spec.ds_type not in DS_TYPES:
        raise errors.invalid("ds_type", f"must be one of {', '.join(DS_TYPES)}")
    if spec.ds_type not in RULE_DS_TYPES:
        raise errors.invalid("ds_type", "only prometheus rules are supported")
    if not spec.ds_ids and not spec.ds_list:
        raise errors.invalid("ds_ids", "name data sources by ds_ids or ds_list")
    for ds_id in spec.ds_ids:
        row = await repo.get_datasource(conn, actor.account_id, ds_id)
        if row is None:
            raise errors.invalid("ds_ids", f"data source {ds_id} does not exist")
        if row.type_ident != spec.ds_type:
            raise errors.invalid("ds_ids", f"data source {ds_id} is not of type {spec.ds_type}")


async def _validate(conn: AsyncConnection, actor: Actor, spec: RuleSpec) -> tuple[str, int]:
    if not spec.name.strip():
        raise errors.invalid("name", "is required")
    schedule = schedule_of(spec.cron_pattern)
    _check_configs(spec)
    _check_times(spec)
    await _check_datasources(conn, actor, spec)
    await _check_channels(conn, actor, spec.channel_ids)
    return schedule


def _columns_of(spec: RuleSpec) -> dict[str, Any]:
    """What a person's spec writes of a rule's row (the rest of the spec goes in its body)."""
    body = shaped(RuleBody, spec, channel_ids=list(dict.fromkeys(spec.channel_ids)))
    return {"folder_id": spec.folder_id, "name": spec.name.strip(), "ds_type": spec.ds_type,
            "enabled": spec.enabled, "debug_log_enabled": spec.debug_log_enabled,
            "cron_pattern": " ".join(spec.cron_pattern.split()),
            "delay_seconds": spec.delay_seconds, "body": msgspec.json.encode(body).decode()}


async def _sync_schedule(conn: AsyncConnection, actor: Actor, rule_id: int, cron: str,
                         interval_ms: int, enabled: bool) -> None:
    await scheduler.set_schedule(conn, kind=SCHEDULE_KIND, owner_id=str(rule_id),
                                 now_ms=actor.now_ms, cron_expr=cron, interval_ms=interval_ms,
                                 active=enabled)


def rule_of(row: Any) -> AlertRule:
    """The rule of a row: its columns, its JSON body and its evaluation status, each read
    under the record's field names (the one place a row becomes a rule)."""
    return shaped(AlertRule, row, **msgspec.structs.asdict(decode_body(row.body)),
                  eval_status=shaped(EvalStatus, row))


def _snapshot(rule: AlertRule) -> str:
    """The rule's definition as JSON for its audit trail (the evaluation status left out:
    it changes on every evaluation, not by anyone's hand)."""
    record = msgspec.to_builtins(rule)
    record.pop("eval_status", None)
    return msgspec.json.encode(record).decode()


async def _audit(conn: AsyncConnection, actor: Actor, rule_id: int, action: str) -> None:
    rule = rule_of(await repo.get_rule(conn, actor.account_id, rule_id))
    await history.record(conn, actor, rule_id=rule_id, action=action, content=_snapshot(rule))


async def _require_rule(conn: AsyncConnection, actor: Actor, rule_id: int) -> Any:
    row = await repo.get_rule(conn, actor.account_id, rule_id, lock=True)
    if row is None:
        raise errors.not_found("alert rule", rule_id)
    return row


@writes("/monit/rule/create", ALERT_RULE_MANAGE, inputs=RuleSpec,
        targets=lambda rule: [rule.id])
async def create_rule(conn: AsyncConnection, actor: Actor, *, spec: RuleSpec) -> AlertRule:
    return await _create(conn, actor, spec, "create")


async def _create(conn: AsyncConnection, actor: Actor, spec: RuleSpec,
                  action: str) -> AlertRule:
    cron, interval_ms = await _validate(conn, actor, spec)
    name = spec.name.strip()
    if await repo.rule_name_taken(conn, actor.account_id, spec.folder_id, name, 0):
        raise errors.invalid("name", "already exists in this folder")
    rule_id = numeric_id()
    now = actor.now_s
    await repo.insert_rule(conn, {
        "id": rule_id, "account_id": actor.account_id, **_columns_of(spec),
        "creator_id": actor.person_id, "creator_name": actor.person_name,
        "updater_id": actor.person_id, "updater_name": actor.person_name,
        "created_at": now, "updated_at": now,
    })
    await _sync_schedule(conn, actor, rule_id, cron, interval_ms, spec.enabled)
    await _audit(conn, actor, rule_id, action)
    await history.record_count(conn, actor)
    return rule_of(await repo.get_rule(conn, actor.account_id, rule_id))


@writes("/monit/rule/update", ALERT_RULE_MANAGE, targets=lambda rule: [rule.id])
async def update_rule(conn: AsyncConnection, actor: Actor, *, changes: Any) -> AlertRule:
    """`changes` (a RuleUpdate) replaces the fields it gives; the rest keep their value."""
    if not changes.id:
        raise errors.invalid("id", "is required")
    row = await _require_rule(conn, actor, changes.id)
    spec = _merged(rule_of(row), changes)
    cron, interval_ms = await _validate(conn, actor, spec)
    name = spec.name.strip()
    if await repo.rule_name_taken(conn, actor.account_id, spec.folder_id, name, row.id):
        raise errors.invalid("name", "already exists in this folder")
    await _write_update(conn, actor, row, spec, cron, interval_ms)
    await _audit(conn, actor, row.id, "update")
    return rule_of(await repo.get_rule(conn, actor.account_id, row.id))


def _merged(rule: AlertRule, changes: Any) -> RuleSpec:
    """The rule's spec with the given fields replaced. Inside `rule_configs`, a check left
    out (or null) and an empty query list keep the stored ones."""
    given = {name: value for name in RuleSpec.__struct_fields__
             if (value := getattr(changes, name)) is not msgspec.UNSET}
    if "rule_configs" in given:
        stored = rule.rule_configs
        given["rule_configs"] = msgspec.structs.replace(stored, **{
            name: value for name in RuleConfigs.__struct_fields__
            if (value := getattr(given["rule_configs"], name)) not in (None, [])})
    return shaped(RuleSpec, rule, **given)


async def _write_update(conn: AsyncConnection, actor: Actor, row: Any, spec: RuleSpec,
                        cron: str, interval_ms: int) -> None:
    if not spec.enabled and row.enabled:
        # Turned off: what it had firing recovers now rather than staying open forever.
        await engine.resolve_all(conn, row, now_s=actor.now_s)
    elif set(spec.channel_ids) != set(decode_body(row.body).channel_ids):
        await engine.resolve_all(conn, row, now_s=actor.now_s)
    await repo.update_rule(conn, actor.account_id, row.id, {
        **_columns_of(spec), "updater_id": actor.person_id, "updater_name": actor.person_name,
        "updated_at": actor.now_s,
    })
    await _sync_schedule(conn, actor, row.id, cron, interval_ms, spec.enabled)


@writes("/monit/rule/update/fields", ALERT_RULE_MANAGE)
async def update_fields(conn: AsyncConnection, actor: Actor, *, rule_ids: list[int],
                        changes: dict[str, Any]) -> list[NameMessage]:
    """Set the named fields (`changes`: field -> new value, None when not given) on each
    rule; a rule that fails its checks is reported by name and left as it was."""
    unknown = sorted(set(changes) - UPDATABLE_FIELDS)
    if unknown:
        raise errors.invalid("fields", f"cannot update {unknown}")
    for name, value in changes.items():
        if value is None:
            raise errors.invalid(name, "is required when named in fields")
    results = []
    for rule_id in dict.fromkeys(rule_ids):
        row = await repo.get_rule(conn, actor.account_id, rule_id, lock=True)
        if row is None:
            raise errors.not_found("alert rule", rule_id)
        actor.note_audit_targets(row.id)
        spec = shaped(RuleSpec, rule_of(row), **changes)
        try:
            async with conn.begin_nested():
                cron, interval_ms = await _validate(conn, actor, spec)
                await _write_update(conn, actor, row, spec, cron, interval_ms)
                await _audit(conn, actor, row.id, "update")
            results.append(NameMessage(name=row.name, message=""))
        except errors.ApiError as exc:
            results.append(NameMessage(name=row.name, message=str(exc)))
    return results


@reads_sync(ALERT_RULE_MANAGE)
def get_rule_sync(conn: Connection, actor: Actor, *, rule_id: int) -> AlertRule:
    row = repo.get_rule_sync(conn, actor.account_id, rule_id)
    if row is None:
        raise errors.not_found("alert rule", rule_id)
    return rule_of(row)


@reads_sync(ALERT_RULE_MANAGE)
def list_rules_sync(conn: Connection, actor: Actor, *, folder_id: int) -> list[AlertRuleBasic]:
    rules = map(rule_of, repo.list_rules_sync(conn, actor.account_id, folder_id))
    return [shaped(AlertRuleBasic, rule, triggered=rule.eval_status.firing_count > 0)
            for rule in rules]


@writes("/monit/rule/delete", ALERT_RULE_MANAGE)
async def delete_rule(conn: AsyncConnection, actor: Actor, *, rule_id: int) -> None:
    await delete_rules(conn, actor, rule_ids=[rule_id])


@writes("/monit/rule/delete/batch", ALERT_RULE_MANAGE)
async def delete_rules(conn: AsyncConnection, actor: Actor, *, rule_ids: list[int]) -> None:
    """Delete rules: unknown ids are a 400 (nothing deleted); their firing alerts recover,
    their schedules go with them, so they stop evaluating at once."""
    rows = []
    for rule_id in dict.fromkeys(rule_ids):
        rows.append(await _require_rule(conn, actor, rule_id))
    actor.note_audit_targets(*(row.id for row in rows))
    for row in rows:
        await engine.resolve_all(conn, row, now_s=actor.now_s)
        await history.record(conn, actor, rule_id=row.id, action="delete",
                             content=_snapshot(rule_of(row)))
        await repo.delete_rule(conn, actor.account_id, row.id)
        await scheduler.remove_schedule(conn, kind=SCHEDULE_KIND, owner_id=str(row.id))
    if rows:
        await history.record_count(conn, actor)


@writes("/monit/rule/move", ALERT_RULE_MANAGE)
async def move_rules(conn: AsyncConnection, actor: Actor, *, rule_ids: list[int],
                     folder_id: int) -> list[NameMessage]:
    """Move rules to another folder: unknown ids are a 400 (nothing moved); a rule whose name
    the destination already has stays where it is, reported by name."""
    rows = [await _require_rule(conn, actor, rule_id) for rule_id in dict.fromkeys(rule_ids)]
    actor.note_audit_targets(*(row.id for row in rows))
    results = []
    for row in rows:
        if row.folder_id == folder_id:
            results.append(NameMessage(name=row.name, message=""))
            continue
        if await repo.rule_name_taken(conn, actor.account_id, folder_id, row.name, row.id):
            results.append(NameMessage(name=row.name,
                                       message="a rule of this name exists in that folder"))
            continue
        await repo.update_rule(conn, actor.account_id, row.id, {
            "folder_id": folder_id, "updater_id": actor.person_id,
            "updater_name": actor.person_name, "updated_at": actor.now_s})
        await _audit(conn, actor, row.id, "move")
        results.append(NameMessage(name=row.name, message=""))
    return results


@reads_sync(ALERT_RULE_MANAGE)
def rule_status_sync(conn: Connection, actor: Actor, *,
                     folder_id: int) -> list[AlertRuleStatus]:
    return [
        AlertRuleStatus(folder_id=r.folder_id, folder_name="", rule_total=int(r.total),
                        triggered_rule_count=int(r.triggered))
        for r in repo.folder_status_sync(conn, actor.account_id, folder_id)
    ]


@reads_sync(ALERT_RULE_MANAGE)
def export_rules_sync(conn: Connection, actor: Actor, *,
                      rule_ids: list[int]) -> list[AlertRuleExport]:
    rows = repo.rules_by_ids_sync(conn, actor.account_id, list(dict.fromkeys(rule_ids)))
    found = {r.id for r in rows}
    for rule_id in rule_ids:
        if rule_id not in found:
            raise errors.not_found("alert rule", rule_id)
    return [shaped(AlertRuleExport, rule_of(row)) for row in rows]


@writes("/monit/rule/import", ALERT_RULE_MANAGE)
async def import_rules(conn: AsyncConnection, actor: Actor, *,
                       specs: list[RuleSpec]) -> list[NameMessage]:
    """Each rule is created on its own (a savepoint each): one bad rule is reported by name
    and does not stop the others."""
    results = []
    for spec in specs:
        try:
            async with conn.begin_nested():
                await _create(conn, actor, msgspec.structs.replace(spec, id=0), "import")
            results.append(NameMessage(name=spec.name, message=""))
        except errors.ApiError as exc:
            results.append(NameMessage(name=spec.name, message=str(exc)))
    return results
