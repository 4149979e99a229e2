"""/safari/automation/rule/* and /safari/automation/run/* operations.

Any valid key may call them; what a caller may see and manage is the rule's scope
(service.py): the contract gives no permission for automation, only "can manage the rule"."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.aisre.automation import runs, service
from dutyline.aisre.automation.schemas import (
    AutomationRuleItem,
    RuleCreateRequest,
    RuleListRequest,
    RuleListResponse,
    RuleLookup,
    RuleRunRequest,
    RuleUpdateRequest,
    RunListRequest,
    RunListResponse,
    RunLookup,
    RunRecord,
)
from dutyline.api.operation import Context, Router

router = Router("Automation rules")


@router.post("/safari/automation/rule/create", write=True)
async def automation_rule_create(ctx: Context, req: RuleCreateRequest) -> AutomationRuleItem:
    """Create an automation rule (personal with team_id 0, or for a team of the account)."""
    item = await service.create_rule(
        ctx.conn, ctx.actor, name=req.name, prompt=req.prompt, cron_expr=req.cron_expr,
        changes=service.RuleChanges.of(req),
    )
    ctx.audit_targets.append(item.rule_id)
    return item


@router.post("/safari/automation/rule/update", write=True)
async def automation_rule_update(ctx: Context, req: RuleUpdateRequest) -> AutomationRuleItem:
    """Update an automation rule; omitted fields are left unchanged."""
    ctx.audit_targets.append(req.rule_id)
    return await service.update_rule(
        ctx.conn, ctx.actor, rule_id=req.rule_id, changes=service.RuleChanges.of(req)
    )


@router.post("/safari/automation/rule/get")
def automation_rule_get(conn: Connection, ctx: Context, req: RuleLookup) -> AutomationRuleItem:
    """One automation rule the caller can see."""
    return service.get_rule_sync(conn, ctx.actor, rule_id=req.rule_id)


@router.post("/safari/automation/rule/list")
def automation_rule_list(conn: Connection, ctx: Context,
                         req: RuleListRequest) -> RuleListResponse:
    """Rules visible to the caller: owners/admins all, members their own and their teams'."""
    return service.list_rules_sync(
        conn, ctx.actor, team_ids=req.team_ids, query=req.query,
        offset=(req.p - 1) * req.limit, limit=req.limit,
    )


@router.post("/safari/automation/rule/delete", write=True, empty="null")
async def automation_rule_delete(ctx: Context, req: RuleLookup) -> None:
    """Delete a rule with its triggers, schedule and runs."""
    ctx.audit_targets.append(await service.delete_rule(ctx.conn, ctx.actor, rule_id=req.rule_id))


@router.post("/safari/automation/rule/enable", write=True, empty="null")
async def automation_rule_enable(ctx: Context, req: RuleLookup) -> None:
    """Enable a rule (its schedule resumes from now)."""
    ctx.audit_targets.append(req.rule_id)
    await service.enable_rule(ctx.conn, ctx.actor, rule_id=req.rule_id)


@router.post("/safari/automation/rule/disable", write=True, empty="null")
async def automation_rule_disable(ctx: Context, req: RuleLookup) -> None:
    """Disable a rule: no trigger fires it until it is enabled again."""
    ctx.audit_targets.append(req.rule_id)
    await service.disable_rule(ctx.conn, ctx.actor, rule_id=req.rule_id)


@router.post("/safari/automation/rule/run", write=True)
async def automation_rule_run(ctx: Context, req: RuleRunRequest) -> RunRecord:
    """Run an enabled rule now (once a minute per rule)."""
    ctx.audit_targets.append(req.rule_id)
    return await runs.run_now(ctx.conn, ctx.actor, rule_id=req.rule_id, context=req.context)


@router.post("/safari/automation/run/list")
def automation_run_list(conn: Connection, ctx: Context, req: RunListRequest) -> RunListResponse:
    """Runs of the rules the caller can see, newest first."""
    return runs.list_runs_sync(
        conn, ctx.actor, rule_id=req.rule_id, status=req.status,
        offset=(req.p - 1) * req.limit, limit=req.limit,
    )


@router.post("/safari/automation/run/get")
def automation_run_get(conn: Connection, ctx: Context, req: RunLookup) -> RunRecord:
    """One run with its steps: every LLM request and answer, tool call and result."""
    return runs.get_run_sync(conn, ctx.actor, run_id=req.run_id)
