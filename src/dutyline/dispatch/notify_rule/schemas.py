"""Channel notification rules on the wire. The reference names the six operations and
nothing of their bodies; the shapes follow the escalation rule's (docs/notification-rules.md):
the same `target` (persons, teams, schedules' roles, e-mail addresses, chat robots and
webhooks, `by`), the same `filters` and `time_filters`, the same template, plus `events`,
the incident events the rule tells of, named by the reference's incident feed types."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec

from dutyline.api.types import Id
from dutyline.dispatch.schemas import Description, EscalateTarget, HexId, RuleName

# The incident events a rule can tell of (reference IncidentFeedType).
EventType = Literal["i_new", "i_ack", "i_unack", "i_rslv", "i_reopen", "i_snooze", "i_wake"]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
# A template id, or "" for the built-in texts.
TemplateId = Annotated[str, msgspec.Meta(pattern="^([0-9a-fA-F]{24})?$")]


class NotifyRuleSpec(msgspec.Struct, kw_only=True):
    """A notification rule as the service's create and update take it (their keyword
    arguments, checked on entry with these limits)."""

    channel_id: Id
    rule_name: RuleName
    events: Annotated[list[EventType], msgspec.Meta(min_length=1, max_length=16)]
    target: EscalateTarget
    template_id: TemplateId = ""
    description: Description = ""
    filters: list[list[dict[str, Any]]] = msgspec.field(default_factory=list)
    time_filters: list[dict[str, Any]] = msgspec.field(default_factory=list)


class CreateNotifyRuleRequest(NotifyRuleSpec, kw_only=True):
    pass


class UpdateNotifyRuleRequest(CreateNotifyRuleRequest, kw_only=True):
    rule_id: HexId


class NotifyRuleItem(msgspec.Struct, kw_only=True):
    account_id: int
    channel_id: int
    rule_id: str
    rule_name: str
    description: str
    events: list[str]
    target: dict[str, Any]
    template_id: str
    filters: list[list[dict[str, Any]]]
    time_filters: list[dict[str, Any]]
    status: str  # enabled | disabled
    updated_by: int
    created_at: int
    updated_at: int


class ListNotifyRulesResponse(msgspec.Struct, kw_only=True):
    items: list[NotifyRuleItem]
