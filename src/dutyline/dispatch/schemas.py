"""Escalation rules (reference EscalateRuleItem, EscalateLayer, EscalateTarget and the
create/update requests). Ranges as docs/paging.md states them; the record carries every field of the
contract's dispatch rule record, layers included."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dutyline.api.outbound_secrets import mask_url, outbound_settings
from dutyline.api.secret import secret_keys
from dutyline.api.types import Id, NonNegInt64, SaveWarning

HexId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
# A rule's template as the service takes it: an id, or "" for the account's default template.
TemplateRef = Annotated[str, msgspec.Meta(pattern="^([0-9a-fA-F]{24})?$")]
Priority = Annotated[int, msgspec.Meta(ge=0, le=200)]
AggrWindow = Annotated[int, msgspec.Meta(ge=0, le=3600)]
MaxTimes = Annotated[int, msgspec.Meta(ge=0, le=6)]
NotifyStep = Annotated[float, msgspec.Meta(ge=0.5, le=120)]
EscalateWindow = Annotated[int, msgspec.Meta(ge=0, le=720)]
RuleName = Annotated[str, msgspec.Meta(min_length=1, max_length=39)]
Description = Annotated[str, msgspec.Meta(max_length=500)]
# Keys of a webhook's settings that are secrets: sealed at rest, never read back.
SECRET_SETTINGS = ("secret", "sign_secret", "token")


class NotifyBy(msgspec.Struct, kw_only=True, omit_defaults=True):
    follow_preference: bool = False
    critical: list[str] = msgspec.field(default_factory=list)
    warning: list[str] = msgspec.field(default_factory=list)
    info: list[str] = msgspec.field(default_factory=list)



class WebhookTarget(msgspec.Struct, kw_only=True):
    """A group chat / webhook target. `settings` by type: `url` for all but the apps'
    (`feishu_app`..., which name `chat_ids`); `secret` (HMAC-SHA256 signature, custom
    webhooks) or `sign_secret` (Feishu, DingTalk): write-only."""

    type: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    settings: Annotated[dict[str, Any], outbound_settings(url="url", secrets=SECRET_SETTINGS),
                        secret_keys(*SECRET_SETTINGS)]


class EscalateTarget(msgspec.Struct, kw_only=True, omit_defaults=True):
    person_ids: list[Id] = msgspec.field(default_factory=list)
    team_ids: list[Id] = msgspec.field(default_factory=list)
    # Schedule id -> the roles of it paged (JSON object keys, decoded as ids).
    schedule_to_role_ids: dict[Id, list[NonNegInt64]] = msgspec.field(default_factory=dict)
    emails: list[str] = msgspec.field(default_factory=list)
    by: NotifyBy | None = None
    webhooks: list[WebhookTarget] | None = None


class EscalateLayer(msgspec.Struct, kw_only=True):
    target: EscalateTarget
    max_times: MaxTimes = 0
    notify_step: NotifyStep = 10
    escalate_window: EscalateWindow = 0
    force_escalate: bool = False


class RuleSpec(msgspec.Struct, kw_only=True):
    """An escalation rule as the dispatch service's create and update take it (their keyword
    arguments, checked on entry with these limits). No template (`""`): the account's
    default one (the built-in preset); the API's requests name one, as the reference
    requires."""

    channel_id: Id
    template_id: TemplateRef = ""
    rule_name: RuleName
    layers: list[EscalateLayer]
    priority: Priority = 0
    aggr_window: AggrWindow = 0
    description: Description = ""
    time_filters: list[dict[str, Any]] = msgspec.field(default_factory=list)
    filters: list[list[dict[str, Any]]] = msgspec.field(default_factory=list)


class CreateEscalationRuleRequest(RuleSpec, kw_only=True):
    template_id: HexId  # required on the wire (the reference's request)


class UpdateEscalationRuleRequest(CreateEscalationRuleRequest, kw_only=True):
    rule_id: HexId


class ChannelRuleIDRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    rule_id: HexId


class ChannelScopedListRequest(msgspec.Struct, kw_only=True):
    channel_id: Id


class RuleCreateResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    rule_id: str
    rule_name: str
    # What the rule asks for that the server's settings cannot send (left out when none).
    warnings: list[SaveWarning] = msgspec.field(default_factory=list)


class EscalateRuleItem(msgspec.Struct, kw_only=True):
    account_id: int
    channel_id: int
    priority: int
    aggr_window: int
    rule_name: str
    description: str
    layers: list[dict[str, Any]]
    time_filters: list[dict[str, Any]]
    filters: list[list[dict[str, Any]]]
    status: str
    template_id: str
    rule_id: str
    updated_by: int
    created_at: int
    updated_at: int
    channel_name: str = ""  # filled by info and the lists (the reference's item has it)


class ListEscalationRulesResponse(msgspec.Struct, kw_only=True):
    items: list[EscalateRuleItem]


_json = msgspec.json.Decoder()


def public_webhook(stored: dict[str, Any]) -> dict[str, Any]:
    settings = {k: v for k, v in stored["settings"].items() if k not in SECRET_SETTINGS}
    if isinstance(settings.get("url"), str):
        settings["url"] = mask_url(settings["url"])
    return {"type": stored["type"], "settings": settings}


def public_layers(stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Layers as a caller reads them: webhook secrets are write-only, so they are left out
    (and the credentials a webhook's URL carries are masked).
    Clients read `webhooks` (an array, empty when the layer has none: the reference's
    schema allows no null) and `by.follow_preference` (false included) by name."""
    out: list[dict[str, Any]] = []
    for layer in stored:
        target = dict(layer.get("target") or {})
        target["webhooks"] = [
            public_webhook(h) for h in target.get("webhooks") or ()
        ]
        if target.get("by") is not None:
            target["by"] = {"follow_preference": False, **target["by"]}
        out.append({**layer, "target": target})
    return out


def public_target(stored: dict[str, Any]) -> dict[str, Any]:
    """A notification rule's target as a caller reads it: webhook secrets are write-only, so
    they are left out (and the credentials in a webhook's URL masked); `webhooks` is an
    array (empty when there are none) and `by` names `follow_preference` (false included),
    as clients read escalation layers' targets."""
    target = dict(stored)
    target["webhooks"] = [
        public_webhook(h) for h in target.get("webhooks") or ()
    ]
    if target.get("by") is not None:
        target["by"] = {"follow_preference": False, **target["by"]}
    return target


def rule_item(row: Any, channel_name: str = "") -> EscalateRuleItem:
    """The one row -> record mapper."""
    return EscalateRuleItem(
        account_id=row.account_id, channel_id=row.channel_id, priority=row.priority,
        aggr_window=row.aggr_window, rule_name=row.rule_name, description=row.description,
        layers=public_layers(_json.decode(row.layers)),
        time_filters=_json.decode(row.time_filters), filters=_json.decode(row.filters),
        status=row.status, template_id=row.template_id, rule_id=row.rule_id,
        updated_by=row.updated_by, created_at=row.created_at, updated_at=row.updated_at,
        channel_name=channel_name,
    )
