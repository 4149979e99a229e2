"""/channel/inhibit/rule/*, /channel/silence/rule/*, /channel/unsubscribe/rule/* (drop
rules); /incident/silence/quick is the incident domain's (incident/quick_silence.py). Reads
need channel view, writes channel management; every write is audited with the rule's id
(the services check and note both: service.WRITES)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.channel.noise import service
from dutyline.channel.noise.schemas import (
    ChannelRuleIDRequest,
    ChannelScopedRequest,
    CreateDropRuleRequest,
    CreateInhibitRuleRequest,
    CreateSilenceRuleRequest,
    InhibitRuleItem,
    ListDropRulesResponse,
    ListInhibitRulesResponse,
    ListSilenceRulesResponse,
    RuleCreateResponse,
    SilenceRuleItem,
    UnsubscribeRuleItem,
    UpdateDropRuleRequest,
    UpdateInhibitRuleRequest,
    UpdateSilenceRuleRequest,
)

router = Router("Channel noise rules")

INHIBIT, SILENCE, DROP = service.INHIBIT, service.SILENCE, service.DROP


def _created(created: tuple[str, str]) -> RuleCreateResponse:
    return RuleCreateResponse(rule_id=created[0], rule_name=created[1])


def _common_routes(prefix: str, kind: str, item: Any) -> None:
    """info, delete, enable, disable: the same for every kind."""
    rules = service.WRITES[kind]

    @router.post(f"{prefix}/info", response=item, service=service.rule_info_sync)
    def info(conn: Connection, ctx: Context, req: ChannelRuleIDRequest) -> Any:
        """Get one rule of the channel."""
        return service.rule_info_sync(conn, ctx.actor, kind=kind, channel_id=req.channel_id,
                                      rule_id=req.rule_id)

    @router.post(f"{prefix}/delete", service=rules.delete, write=True)
    async def remove(ctx: Context, req: ChannelRuleIDRequest) -> None:
        """Delete a rule."""
        await rules.delete(ctx.conn, ctx.actor, channel_id=req.channel_id,
                           rule_id=req.rule_id)

    @router.post(f"{prefix}/enable", service=rules.enable, write=True)
    async def enable(ctx: Context, req: ChannelRuleIDRequest) -> None:
        """Enable a rule (idempotent)."""
        await rules.enable(ctx.conn, ctx.actor, channel_id=req.channel_id,
                           rule_id=req.rule_id)

    @router.post(f"{prefix}/disable", service=rules.disable, write=True)
    async def disable(ctx: Context, req: ChannelRuleIDRequest) -> None:
        """Disable a rule without deleting it (idempotent)."""
        await rules.disable(ctx.conn, ctx.actor, channel_id=req.channel_id,
                            rule_id=req.rule_id)


# -- inhibit --------------------------------------------------------------------------------


@router.post("/channel/inhibit/rule/list", service=service.list_rules_sync)
def inhibit_list(conn: Connection, ctx: Context,
                 req: ChannelScopedRequest) -> ListInhibitRulesResponse:
    """List the channel's inhibit rules (full records)."""
    items = service.list_rules_sync(conn, ctx.actor, kind=INHIBIT, channel_id=req.channel_id)
    return ListInhibitRulesResponse(items=items)  # type: ignore[arg-type]


@router.post("/channel/inhibit/rule/create", service=service.INHIBIT_RULES.create, write=True)
async def inhibit_create(ctx: Context, req: CreateInhibitRuleRequest) -> RuleCreateResponse:
    """Create an inhibit rule: alerts matching target_filters are held back while an active
    alert matching source_filters agrees with them on every `equals` path."""
    config = service.inhibit_config(
        equals=req.equals, source_filters=req.source_filters,
        target_filters=req.target_filters, is_directly_discard=req.is_directly_discard)
    return _created(await service.INHIBIT_RULES.create(
        ctx.conn, ctx.actor, channel_id=req.channel_id,
        rule_name=req.rule_name, description=req.description, priority=req.priority,
        config=config))


@router.post("/channel/inhibit/rule/update", service=service.INHIBIT_RULES.update, write=True)
async def inhibit_update(ctx: Context, req: UpdateInhibitRuleRequest) -> None:
    """Change an inhibit rule's settings; a field left out keeps its stored value."""
    config = service.inhibit_update(
        equals=req.equals, source_filters=req.source_filters,
        target_filters=req.target_filters, is_directly_discard=req.is_directly_discard)
    await service.INHIBIT_RULES.update(
        ctx.conn, ctx.actor, channel_id=req.channel_id, rule_id=req.rule_id,
        rule_name=req.rule_name, description=req.description, priority=req.priority,
        config=config)


_common_routes("/channel/inhibit/rule", INHIBIT, InhibitRuleItem)


# -- silence --------------------------------------------------------------------------------


def _silence_config(req: CreateSilenceRuleRequest) -> dict[str, Any]:
    return service.silence_config(
        time_filters=req.time_filters, time_filter=req.time_filter, filters=req.filters,
        is_directly_discard=req.is_directly_discard, from_incident_id=req.from_incident_id)


@router.post("/channel/silence/rule/list", service=service.list_rules_sync)
def silence_list(conn: Connection, ctx: Context,
                 req: ChannelScopedRequest) -> ListSilenceRulesResponse:
    """List the channel's silence rules."""
    items = service.list_rules_sync(conn, ctx.actor, kind=SILENCE, channel_id=req.channel_id)
    return ListSilenceRulesResponse(items=items)  # type: ignore[arg-type]


@router.post("/channel/silence/rule/create", service=service.SILENCE_RULES.create, write=True)
async def silence_create(ctx: Context, req: CreateSilenceRuleRequest) -> RuleCreateResponse:
    """Create a silence rule: matching alerts are stored and open no incident during its
    one-off window (`time_filter`) or recurring windows (`time_filters`)."""
    return _created(await service.SILENCE_RULES.create(
        ctx.conn, ctx.actor, channel_id=req.channel_id,
        rule_name=req.rule_name, description=req.description, priority=req.priority,
        config=_silence_config(req)))


@router.post("/channel/silence/rule/update", service=service.SILENCE_RULES.update, write=True)
async def silence_update(ctx: Context, req: UpdateSilenceRuleRequest) -> None:
    """Change a silence rule's settings; a field left out keeps its stored value (the window,
    `time_filter` with `time_filters`, is replaced as a whole when either is given)."""
    await service.SILENCE_RULES.update(
        ctx.conn, ctx.actor, channel_id=req.channel_id, rule_id=req.rule_id,
        rule_name=req.rule_name, description=req.description, priority=req.priority,
        config=service.silence_update(
            time_filters=req.time_filters, time_filter=req.time_filter, filters=req.filters,
            is_directly_discard=req.is_directly_discard))


_common_routes("/channel/silence/rule", SILENCE, SilenceRuleItem)


# -- drop (unsubscribe) ---------------------------------------------------------------------


@router.post("/channel/unsubscribe/rule/list", service=service.list_rules_sync)
def drop_list(conn: Connection, ctx: Context,
              req: ChannelScopedRequest) -> ListDropRulesResponse:
    """List the channel's drop rules."""
    items = service.list_rules_sync(conn, ctx.actor, kind=DROP, channel_id=req.channel_id)
    return ListDropRulesResponse(items=items)  # type: ignore[arg-type]


@router.post("/channel/unsubscribe/rule/create", service=service.DROP_RULES.create, write=True)
async def drop_create(ctx: Context, req: CreateDropRuleRequest) -> RuleCreateResponse:
    """Create a drop rule: matching new alerts are counted on the rule and not stored."""
    return _created(await service.DROP_RULES.create(
        ctx.conn, ctx.actor, channel_id=req.channel_id, rule_name=req.rule_name,
        description=req.description, priority=req.priority,
        config=service.drop_config(filters=req.filters)))


@router.post("/channel/unsubscribe/rule/update", service=service.DROP_RULES.update, write=True)
async def drop_update(ctx: Context, req: UpdateDropRuleRequest) -> None:
    """Change a drop rule's settings; a field left out keeps its stored value."""
    await service.DROP_RULES.update(
        ctx.conn, ctx.actor, channel_id=req.channel_id, rule_id=req.rule_id,
        rule_name=req.rule_name, description=req.description, priority=req.priority,
        config=service.drop_update(filters=req.filters))


_common_routes("/channel/unsubscribe/rule", DROP, UnsubscribeRuleItem)
