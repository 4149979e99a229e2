"""/monit/datasource/* and /monit/rule/* operations (reference names and fields), plus
/monit/datasource/query, our ad-hoc instant query for a rule editor, and the agent-facing
operations published clients call: /monit/tools/catalog|invoke (tools over a monitored
target) and /monit/query/rows|diagnose (a data source named by type and name).

Every one needs the alert rule management permission (monit): the catalogue has no read
permission of its own for monitors. The services check it again and note the audit targets
of their writes, so whoever calls them is checked and audited alike."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.permissions import ALERT_RULE_MANAGE
from dutyline.monit import agent_query, history, rulesets, service, tools
from dutyline.monit.agent_schemas import (
    CatalogRequest,
    CatalogResponse,
    DiagnoseRequest,
    DiagnoseResponse,
    InvokeRequest,
    InvokeResponse,
    Row,
    RowsRequest,
)
from dutyline.monit.schemas import (
    AlertRule,
    AlertRuleAudit,
    AlertRuleBasic,
    AlertRuleCounter,
    AlertRuleExport,
    AlertRuleStatus,
    DataSourceItem,
    DataSourceListRequest,
    DataSourceUpsertRequest,
    DSType,
    IDRequest,
    NameMessage,
    QueryRequest,
    QueryResponse,
    RuleEmptyRequest,
    RuleFieldsUpdateRequest,
    RuleFolderIDRequest,
    RuleIDRequest,
    RuleIDsRequest,
    RuleImportRequest,
    RuleListRequest,
    RuleMoveRequest,
    RuleSpec,
    RuleUpdate,
    StoreRulesetItem,
    StoreRulesetListRequest,
    StoreRulesetUpdateRequest,
    StoreRulesetUpsertRequest,
)

router = Router("Monitors")
MANAGE = (ALERT_RULE_MANAGE,)


@router.post("/monit/datasource/create", service=service.create_datasource, write=True)
async def datasource_create(ctx: Context, req: DataSourceUpsertRequest) -> DataSourceItem:
    """Create a data source (type prometheus; VictoriaMetrics and Thanos speak its API)."""
    return await service.create_datasource(ctx.conn, ctx.actor, spec=_datasource_spec(req),
                                           deps=ctx.runtime.deps)


@router.post("/monit/datasource/update", service=service.update_datasource, write=True)
async def datasource_update(ctx: Context, req: DataSourceUpsertRequest) -> DataSourceItem:
    """Update a data source; blank secrets are kept unless the address moves elsewhere."""
    return await service.update_datasource(ctx.conn, ctx.actor, spec=_datasource_spec(req),
                                           deps=ctx.runtime.deps)


def _datasource_spec(req: DataSourceUpsertRequest) -> service.DataSourceSpec:
    return service.DataSourceSpec(
        type_ident=req.type_ident, name=req.name, edge_cluster_name=req.edge_cluster_name,
        payload=req.payload, id=req.id, note=req.note, address=req.address,
        enabled=req.enabled)


@router.post("/monit/datasource/info", service=service.get_datasource_sync)
def datasource_info(conn: Connection, ctx: Context, req: IDRequest) -> DataSourceItem:
    """One data source, without its credentials."""
    return service.get_datasource_sync(conn, ctx.actor, ds_id=req.id,
                                          deps=ctx.runtime.deps)


@router.post("/monit/datasource/list", service=service.list_datasources_sync)
def datasource_list(conn: Connection, ctx: Context,
        req: DataSourceListRequest) -> list[DataSourceItem]:
    """The account's data sources, without their credentials."""
    return service.list_datasources_sync(conn, ctx.actor, type_ident=req.type,
                                            deps=ctx.runtime.deps)


@router.post("/monit/datasource/delete", service=service.delete_datasource, write=True)
async def datasource_delete(ctx: Context, req: IDRequest) -> None:
    """Delete a data source no alert rule names by id."""
    await service.delete_datasource(ctx.conn, ctx.actor, ds_id=req.id)


@router.post("/monit/datasource/query", service=service.query_datasource)
async def datasource_query(ctx: Context, req: QueryRequest) -> QueryResponse:
    """Run a PromQL instant query against a data source: the rows a rule would see."""
    return await service.query_datasource(ctx.conn, ctx.actor, ds_id=req.ds_id,
                                          expr=req.expr, at=float(req.time or ctx.now),
                                          deps=ctx.runtime.deps)


@router.post("/monit/rule/create", service=service.create_rule, write=True)
async def rule_create(ctx: Context, req: RuleSpec) -> AlertRule:
    """Create an alert rule; an enabled one starts evaluating on its cron_pattern."""
    return await service.create_rule(ctx.conn, ctx.actor, spec=req)


@router.post("/monit/rule/update", service=service.update_rule, write=True, request=RuleUpdate)
async def rule_update(ctx: Context, req: Any) -> AlertRule:
    """Change an alert rule's definition: the fields given replace the rule's."""
    return await service.update_rule(ctx.conn, ctx.actor, changes=req)


@router.post("/monit/rule/update/fields", service=service.update_fields, write=True)
async def rule_update_fields(ctx: Context, req: RuleFieldsUpdateRequest) -> list[NameMessage]:
    """Set the named fields on several rules; a result per rule."""
    changes = {name: getattr(req, name, None) for name in req.fields}
    return await service.update_fields(ctx.conn, ctx.actor, rule_ids=req.ids, changes=changes)


@router.post("/monit/rule/info", service=service.get_rule_sync)
def rule_info(conn: Connection, ctx: Context, req: RuleIDRequest) -> AlertRule:
    """One alert rule with its last evaluation's status."""
    return service.get_rule_sync(conn, ctx.actor, rule_id=req.id)


@router.post("/monit/rule/list/basic", service=service.list_rules_sync)
def rule_list_basic(conn: Connection, ctx: Context, req: RuleListRequest) -> list[AlertRuleBasic]:
    """The account's alert rules (of one folder, or all with folder_id 0)."""
    return service.list_rules_sync(conn, ctx.actor, folder_id=req.folder_id)


@router.post("/monit/rule/delete", service=service.delete_rule, write=True)
async def rule_delete(ctx: Context, req: RuleIDRequest) -> None:
    """Delete an alert rule: it stops evaluating at once and its firing alerts recover."""
    await service.delete_rule(ctx.conn, ctx.actor, rule_id=req.id)


@router.post("/monit/rule/delete/batch", service=service.delete_rules, write=True)
async def rule_delete_batch(ctx: Context, req: RuleIDsRequest) -> None:
    """Delete several alert rules (all or none: an unknown id deletes nothing)."""
    await service.delete_rules(ctx.conn, ctx.actor, rule_ids=req.ids)


@router.post("/monit/rule/status", service=service.rule_status_sync)
def rule_status(conn: Connection, ctx: Context, req: RuleFolderIDRequest) -> list[AlertRuleStatus]:
    """Rules and rules with firing alerts, per folder."""
    return service.rule_status_sync(conn, ctx.actor, folder_id=req.folder_id)


@router.post("/monit/rule/import", service=service.import_rules, request=RuleImportRequest,
             write=True)
async def rule_import(ctx: Context, req: list[RuleSpec]) -> list[NameMessage]:
    """Create rules from exported definitions; a result per rule."""
    return await service.import_rules(ctx.conn, ctx.actor, specs=req)


@router.post("/monit/rule/export", service=service.export_rules_sync)
def rule_export(conn: Connection, ctx: Context, req: RuleIDsRequest) -> list[AlertRuleExport]:
    """Portable definitions of rules, for /monit/rule/import."""
    return service.export_rules_sync(conn, ctx.actor, rule_ids=req.ids)


@router.post("/monit/rule/move", service=service.move_rules, write=True)
async def rule_move(ctx: Context, req: RuleMoveRequest) -> list[NameMessage]:
    """Move rules to another folder; a result per rule."""
    return await service.move_rules(ctx.conn, ctx.actor, rule_ids=req.ids,
                                    folder_id=req.dest_folder_id)


@router.post("/monit/rule/audits", service=history.list_audits_sync)
def rule_audits(conn: Connection, ctx: Context, req: RuleIDRequest) -> list[AlertRuleAudit]:
    """A rule's change history, newest first (without the snapshots)."""
    return history.list_audits_sync(conn, ctx.actor, rule_id=req.id)


@router.post("/monit/rule/audit/detail", service=history.audit_detail_sync)
def rule_audit_detail(conn: Connection, ctx: Context, req: RuleIDRequest) -> AlertRuleAudit:
    """One change-history record (by its own id) with the rule's snapshot in `content`."""
    return history.audit_detail_sync(conn, ctx.actor, audit_id=req.id)


@router.post("/monit/rule/dstypes", service=history.ds_types_sync)
def rule_dstypes(conn: Connection, ctx: Context, req: RuleEmptyRequest) -> list[DSType]:
    """The data source types rules can use."""
    return history.ds_types_sync(conn, ctx.actor)


@router.post("/monit/rule/counter/total", service=history.counter_total_sync)
def rule_counter_total(conn: Connection, ctx: Context,
        req: RuleEmptyRequest) -> list[AlertRuleCounter]:
    """The account's rule total after each change, oldest first."""
    return history.counter_total_sync(conn, ctx.actor)


@router.post("/monit/rule/counter/status", service=service.rule_status_sync)
def rule_counter_status(conn: Connection, ctx: Context,
        req: RuleEmptyRequest) -> list[AlertRuleStatus]:
    """Rules and rules with firing alerts per top-level folder."""
    return service.rule_status_sync(conn, ctx.actor, folder_id=0)


@router.post("/monit/rule/counter/channel", service=history.counter_channel_sync)
def rule_counter_channel(conn: Connection, ctx: Context, req: RuleEmptyRequest) -> dict[str, int]:
    """Rules per channel name (the channel id when the name is unknown)."""
    return history.counter_channel_sync(conn, ctx.actor)


@router.post("/monit/rule/counter/node", service=history.counter_node_sync)
def rule_counter_node(conn: Connection, ctx: Context, req: RuleEmptyRequest) -> dict[str, int]:
    """Rules per top-level folder (named by its id: there are no folder records)."""
    return history.counter_node_sync(conn, ctx.actor)


@router.post("/monit/store/ruleset/create", service=rulesets.create_ruleset, write=True)
async def ruleset_create(ctx: Context, req: StoreRulesetUpsertRequest) -> StoreRulesetItem:
    """Keep a set of rule definitions in the rule repository (private, account or public)."""
    return await rulesets.create_ruleset(ctx.conn, ctx.actor, type_ident=req.type_ident,
                                         note=req.note, payload=req.payload,
                                         open_flag=req.open_flag)


@router.post("/monit/store/ruleset/info", service=rulesets.get_ruleset_sync)
def ruleset_info(conn: Connection, ctx: Context, req: IDRequest) -> StoreRulesetItem:
    """One ruleset the caller can see, with its payload."""
    return rulesets.get_ruleset_sync(conn, ctx.actor, ruleset_id=req.id)


@router.post("/monit/store/ruleset/list", service=rulesets.list_rulesets_sync)
def ruleset_list(conn: Connection, ctx: Context,
        req: StoreRulesetListRequest) -> list[StoreRulesetItem]:
    """The rulesets of a data source type the caller can see, without payloads."""
    return rulesets.list_rulesets_sync(conn, ctx.actor, type_ident=req.type_ident)


@router.post("/monit/store/ruleset/update", service=rulesets.update_ruleset, write=True)
async def ruleset_update(ctx: Context, req: StoreRulesetUpdateRequest) -> StoreRulesetItem:
    """Change a ruleset's note, sharing and payload (its creator's account only)."""
    return await rulesets.update_ruleset(ctx.conn, ctx.actor, ruleset_id=req.id, note=req.note,
                                         payload=req.payload, open_flag=req.open_flag)


@router.post("/monit/store/ruleset/delete", service=rulesets.delete_ruleset, write=True)
async def ruleset_delete(ctx: Context, req: IDRequest) -> None:
    """Delete a ruleset (its creator's account only)."""
    await rulesets.delete_ruleset(ctx.conn, ctx.actor, ruleset_id=req.id)


@router.post("/monit/tools/catalog", service=service.tools_catalog)
async def tools_catalog(ctx: Context, req: CatalogRequest) -> CatalogResponse:
    """The tools an agent can run against a monitored target (`host:web-01`), each with its
    input's JSON Schema; the target kind is inferred from the data sources when not named."""
    return await tools.catalog(ctx.conn, ctx.actor, locator=req.target_locator,
                               target_kind=req.target_kind, account_id=req.account_id,
                               deps=ctx.runtime.deps)


@router.post("/monit/tools/invoke", service=service.tools_invoke)
async def tools_invoke(ctx: Context, req: InvokeRequest) -> InvokeResponse:
    """Run up to 8 tools against a target concurrently; a result per tool, in order, and one
    tool's failure does not fail the others."""
    return await tools.invoke(ctx.conn, ctx.actor, locator=req.target_locator,
                              target_kind=req.target_kind, calls=req.tools or [],
                              toolset_hash=req.toolset_hash, account_id=req.account_id,
                              deps=ctx.runtime.deps)


@router.post("/monit/query/rows", service=agent_query.rows)
async def query_rows(ctx: Context, req: RowsRequest) -> list[Row]:
    """Run one query on a data source named by type and name: a row per series (or log
    line), labels in `fields`, numbers in `values`."""
    return await agent_query.rows(ctx.conn, ctx.actor, ds_type=req.ds_type,
                                  ds_name=req.ds_name, expr=req.expr, args=req.args,
                                  account_id=req.account_id, deps=ctx.runtime.deps)


@router.post("/monit/query/diagnose", service=agent_query.diagnose)
async def query_diagnose(ctx: Context, req: DiagnoseRequest) -> DiagnoseResponse:
    """Condense a window of a data source into evidence: log patterns (Loki) or metric
    trends (Prometheus); the window defaults to the last 15 minutes, at most 6 hours."""
    return await agent_query.diagnose(
        ctx.conn, ctx.actor, ds_type=req.ds_type, ds_name=req.ds_name,
        start=req.time_range.start, end=req.time_range.end, query=req.input.query,
        operation=req.operation, max_logs_scanned=req.max_logs_scanned,
        max_patterns=req.max_patterns, timeout_seconds=req.timeout_seconds,
        account_id=req.account_id, deps=ctx.runtime.deps)
