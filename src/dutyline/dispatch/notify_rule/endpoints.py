"""/channel/notify/rule/* operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.types import SaveWarnings
from dutyline.dispatch.notify_rule import service
from dutyline.dispatch.notify_rule.schemas import (
    CreateNotifyRuleRequest,
    ListNotifyRulesResponse,
    UpdateNotifyRuleRequest,
)
from dutyline.dispatch.schemas import (
    ChannelRuleIDRequest,
    ChannelScopedListRequest,
    RuleCreateResponse,
)

router = Router("Channel notification rules")


@router.post("/channel/notify/rule/create", service=service.create_rule, write=True)
async def rule_create(ctx: Context, req: CreateNotifyRuleRequest) -> RuleCreateResponse:
    """Create a notification rule: who is told of which events of the channel's incidents
    (those its filters match), beside escalation."""
    return await service.create_rule(
        ctx.conn, ctx.actor, deps=ctx.runtime.deps, channel_id=req.channel_id,
        rule_name=req.rule_name, description=req.description, events=list(req.events),
        target=req.target, template_id=req.template_id, filters=req.filters,
        time_filters=req.time_filters)


@router.post("/channel/notify/rule/update", service=service.update_rule, write=True)
async def rule_update(ctx: Context, req: UpdateNotifyRuleRequest) -> SaveWarnings:
    """Replace a notification rule's settings (its status is kept); `warnings` names what
    the server's settings cannot send."""
    return await service.update_rule(
        ctx.conn, ctx.actor, deps=ctx.runtime.deps, channel_id=req.channel_id,
        rule_id=req.rule_id, rule_name=req.rule_name, description=req.description,
        events=list(req.events), target=req.target, template_id=req.template_id,
        filters=req.filters, time_filters=req.time_filters)


@router.post("/channel/notify/rule/delete", service=service.delete_rule, write=True)
async def rule_delete(ctx: Context, req: ChannelRuleIDRequest) -> None:
    """Delete a notification rule."""
    await service.delete_rule(ctx.conn, ctx.actor, channel_id=req.channel_id,
                              rule_id=req.rule_id)


@router.post("/channel/notify/rule/enable", service=service.enable_rule, write=True)
async def rule_enable(ctx: Context, req: ChannelRuleIDRequest) -> None:
    """Enable a notification rule."""
    await service.enable_rule(ctx.conn, ctx.actor, channel_id=req.channel_id,
                              rule_id=req.rule_id)


@router.post("/channel/notify/rule/disable", service=service.disable_rule, write=True)
async def rule_disable(ctx: Context, req: ChannelRuleIDRequest) -> None:
    """Disable a notification rule: it tells nobody, and is kept."""
    await service.disable_rule(ctx.conn, ctx.actor, channel_id=req.channel_id,
                               rule_id=req.rule_id)


@router.post("/channel/notify/rule/list")
def rule_list(conn: Connection, ctx: Context,
              req: ChannelScopedListRequest) -> ListNotifyRulesResponse:
    """Every notification rule of a channel, oldest first."""
    return ListNotifyRulesResponse(
        items=service.list_rules_sync(conn, ctx.actor, channel_id=req.channel_id))
