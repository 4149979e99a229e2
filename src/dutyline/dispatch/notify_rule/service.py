"""Channel notification rules: create, update, delete, enable, disable, list
(docs/notification-rules.md).

Writes need channel_manage; the list, as the reference says, any member (who still sees only
the rules of channels they may see: a private channel's rules are not found outside its
teams, as the channel is). Targets follow the escalation layers' rules (dispatch.service:
persons, teams and schedules of the account, webhook URLs through the outbound guard's
static check, webhook secrets sealed at rest and never read back)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import CHANNEL_MANAGE
from dutyline.api.types import SaveWarnings
from dutyline.channel import service as channels
from dutyline.dispatch import peers
from dutyline.dispatch import service as escalation
from dutyline.dispatch.notify_rule import repository as repo
from dutyline.dispatch.notify_rule.schemas import EVENT_TYPES, NotifyRuleItem
from dutyline.dispatch.notify_rule.schemas import NotifyRuleSpec as NotifyRuleSpec  # taken
from dutyline.dispatch.schemas import EscalateTarget, RuleCreateResponse, public_target
from dutyline.kit.ids import hex_id

MAX_RULES_PER_CHANNEL = 50
ENABLED, DISABLED = "enabled", "disabled"
_json = msgspec.json.Decoder()


def _dump(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def rule_item(row: Any) -> NotifyRuleItem:
    """The one row -> record mapper."""
    return NotifyRuleItem(
        account_id=row.account_id, channel_id=row.channel_id, rule_id=row.rule_id,
        rule_name=row.rule_name, description=row.description, events=_json.decode(row.events),
        target=public_target(_json.decode(row.target)), template_id=row.template_id,
        filters=_json.decode(row.filters), time_filters=_json.decode(row.time_filters),
        status=row.status, updated_by=row.updated_by, created_at=row.created_at,
        updated_at=row.updated_at)


async def _require_rule(conn: Any, actor: Actor, channel_id: int, rule_id: str) -> Any:
    await channels.require_visible(conn, actor, channel_id)
    row = await repo.get_rule(conn, actor.account_id, channel_id, rule_id.lower())
    if row is None:
        raise errors.not_found("rule", rule_id)
    return row


async def _checked(conn: Any, actor: Actor, deps: Deps, *, rule_name: str,
                   events: list[str], target: EscalateTarget, template_id: str,
                   filters: list[list[dict[str, Any]]], time_filters: list[dict[str, Any]],
                   stored_template: str = "") -> dict[str, Any]:
    """The checked settings of a rule as stored (its target's secrets sealed by the caller)."""
    name = rule_name.strip()
    if not name:
        raise errors.invalid("rule_name", "is required")
    await peers.check_filters(conn, actor, filters, time_filters)
    template_id = template_id.lower()
    # A template the rule holds already is kept even if deleted since (sends then fall back
    # to the built-in texts), as escalation rules do.
    if template_id and template_id != stored_template \
            and not await peers.template_exists(conn, actor, template_id):
        raise errors.not_found("template", template_id)
    await escalation.check_targets(conn, actor, targets=[("target", target)], deps=deps)
    return {
        "rule_name": name, "template_id": template_id,
        # In the vocabulary's order, each once.
        "events": _dump([e for e in EVENT_TYPES if e in set(events)]),
        "filters": _dump(filters), "time_filters": _dump(time_filters),
    }


@writes("/channel/notify/rule/create", CHANNEL_MANAGE, inputs=NotifyRuleSpec,
        targets=lambda created: [created.rule_id])
async def create_rule(conn: Any, actor: Actor, *, deps: Deps, channel_id: int,
                      rule_name: str, description: str, events: list[str],
                      target: EscalateTarget, template_id: str,
                      filters: list[list[dict[str, Any]]],
                      time_filters: list[dict[str, Any]]) -> RuleCreateResponse:
    await channels.require_visible(conn, actor, channel_id)
    values = await _checked(conn, actor, deps, rule_name=rule_name, events=events,
                            target=target, template_id=template_id, filters=filters,
                            time_filters=time_filters)
    if await repo.count_rules(conn, actor.account_id, channel_id) >= MAX_RULES_PER_CHANNEL:
        raise errors.invalid("channel_id",
                             f"has {MAX_RULES_PER_CHANNEL} notification rules, the most")
    rule_id, now = hex_id(), actor.now_s
    sealed = escalation.seal_target(msgspec.to_builtins(target), {}, deps.box, "target")
    await repo.insert_rule(conn, {
        **values, "rule_id": rule_id, "account_id": actor.account_id,
        "channel_id": channel_id, "description": description, "target": _dump(sealed),
        "status": ENABLED, "updated_by": actor.person_id, "created_at": now,
        "updated_at": now,
    })
    return RuleCreateResponse(rule_id=rule_id, rule_name=values["rule_name"],
                              warnings=escalation.target_warnings(deps.settings, target,
                                                                  "target"))


@writes("/channel/notify/rule/update", CHANNEL_MANAGE, inputs=NotifyRuleSpec)
async def update_rule(conn: Any, actor: Actor, *, deps: Deps, channel_id: int, rule_id: str,
                      rule_name: str, description: str, events: list[str],
                      target: EscalateTarget, template_id: str,
                      filters: list[list[dict[str, Any]]],
                      time_filters: list[dict[str, Any]]) -> SaveWarnings:
    """Replace a rule's settings (its status is kept)."""
    row = await _require_rule(conn, actor, channel_id, rule_id)
    actor.note_audit_targets(row.rule_id)
    values = await _checked(conn, actor, deps, rule_name=rule_name, events=events,
                            target=target, template_id=template_id, filters=filters,
                            time_filters=time_filters, stored_template=row.template_id)
    sealed = escalation.seal_target(msgspec.to_builtins(target), _json.decode(row.target),
                                    deps.box, "target")
    await repo.update_rule(conn, actor.account_id, row.rule_id, {
        **values, "description": description, "target": _dump(sealed),
        "updated_by": actor.person_id, "updated_at": actor.now_s,
    })
    return SaveWarnings(warnings=escalation.target_warnings(deps.settings, target, "target"))


@writes("/channel/notify/rule/delete", CHANNEL_MANAGE)
async def delete_rule(conn: Any, actor: Actor, *, channel_id: int, rule_id: str) -> str:
    """Returns the rule's id. Deliveries it made already are kept (the incidents' history)."""
    row = await _require_rule(conn, actor, channel_id, rule_id)
    await repo.delete_rule(conn, actor.account_id, row.rule_id)
    return str(row.rule_id)


@writes("/channel/notify/rule/enable", CHANNEL_MANAGE)
async def enable_rule(conn: Any, actor: Actor, *, channel_id: int, rule_id: str) -> str:
    """Returns the rule's id."""
    return await _set_status(conn, actor, channel_id, rule_id, ENABLED)


@writes("/channel/notify/rule/disable", CHANNEL_MANAGE)
async def disable_rule(conn: Any, actor: Actor, *, channel_id: int, rule_id: str) -> str:
    """Returns the rule's id. A disabled rule tells nobody of anything, and is kept."""
    return await _set_status(conn, actor, channel_id, rule_id, DISABLED)


async def _set_status(conn: Any, actor: Actor, channel_id: int, rule_id: str,
                      status: str) -> str:
    row = await _require_rule(conn, actor, channel_id, rule_id)
    await repo.update_rule(conn, actor.account_id, row.rule_id, {
        "status": status, "updated_by": actor.person_id, "updated_at": actor.now_s})
    return str(row.rule_id)


@reads_sync()
def list_rules_sync(conn: Connection, actor: Actor, *,
                    channel_id: int) -> list[NotifyRuleItem]:
    """The channel's rules, oldest first."""
    channels.require_visible_sync(conn, actor, channel_id)
    return [rule_item(r) for r in repo.list_rules_sync(conn, actor.account_id, channel_id)]
