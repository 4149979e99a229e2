"""/channel/escalate/rule/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.types import SaveWarnings
from dutyline.dispatch import service
from dutyline.dispatch.schemas import (
    ChannelRuleIDRequest,
    ChannelScopedListRequest,
    CreateEscalationRuleRequest,
    EscalateRuleItem,
    ListEscalationRulesResponse,
    RuleCreateResponse,
    UpdateEscalationRuleRequest,
)

router = Router("Escalation rules")


@router.post("/channel/escalate/rule/create", service=service.create_rule, write=True)
async def rule_create(ctx: Context, req: CreateEscalationRuleRequest) -> RuleCreateResponse:
    """Create an escalation rule: who is paged, how, and when, for the channel's incidents."""
    created = await service.create_rule(
        ctx.conn, ctx.actor, deps=ctx.runtime.deps,
        channel_id=req.channel_id, template_id=req.template_id, rule_name=req.rule_name,
        description=req.description,
        priority=req.priority, aggr_window=req.aggr_window, layers=req.layers,
        time_filters=req.time_filters, filters=req.filters)
    return created


@router.post("/channel/escalate/rule/update", service=service.update_rule, write=True)
async def rule_update(ctx: Context, req: UpdateEscalationRuleRequest) -> SaveWarnings:
    """Replace an escalation rule's settings (its status is kept); `warnings` names what
    the server's settings cannot send."""
    saved = await service.update_rule(
        ctx.conn, ctx.actor, deps=ctx.runtime.deps,
        channel_id=req.channel_id,
        rule_id=req.rule_id, template_id=req.template_id, rule_name=req.rule_name,
        description=req.description, priority=req.priority, aggr_window=req.aggr_window,
        layers=req.layers, time_filters=req.time_filters, filters=req.filters)
    return saved


@router.post("/channel/escalate/rule/delete", service=service.delete_rule, write=True)
async def rule_delete(ctx: Context, req: ChannelRuleIDRequest) -> None:
    """Delete an escalation rule (escalations already running keep their snapshot)."""
    await service.delete_rule(ctx.conn, ctx.actor, channel_id=req.channel_id,
                              rule_id=req.rule_id)


@router.post("/channel/escalate/rule/enable", service=service.enable_rule, write=True)
async def rule_enable(ctx: Context, req: ChannelRuleIDRequest) -> None:
    """Enable an escalation rule."""
    await service.enable_rule(ctx.conn, ctx.actor, channel_id=req.channel_id,
                              rule_id=req.rule_id)


@router.post("/channel/escalate/rule/disable", service=service.disable_rule, write=True)
async def rule_disable(ctx: Context, req: ChannelRuleIDRequest) -> None:
    """Disable an escalation rule: it is skipped, and kept."""
    await service.disable_rule(ctx.conn, ctx.actor, channel_id=req.channel_id,
                               rule_id=req.rule_id)


@router.post("/channel/escalate/rule/info", service=service.rule_info_sync)
def rule_info(conn: Connection, ctx: Context, req: ChannelRuleIDRequest) -> EscalateRuleItem:
    """One escalation rule, layers included."""
    return service.rule_info_sync(conn, ctx.actor, channel_id=req.channel_id,
                                  rule_id=req.rule_id)


@router.post("/channel/escalate/rule/list", service=service.list_rules_sync)
def rule_list(conn: Connection, ctx: Context,
              req: ChannelScopedListRequest) -> ListEscalationRulesResponse:
    """Every escalation rule of a channel, in the order they are tried."""
    return ListEscalationRulesResponse(
        items=service.list_rules_sync(conn, ctx.actor, channel_id=req.channel_id))
