"""Requests and records of inhibit, silence and drop rules (reference: CreateInhibitRuleRequest,
InhibitRuleItem, CreateSilenceRuleRequest, SilenceRuleItem, CreateDropRuleRequest,
UnsubscribeRuleItem, ChannelRuleIDRequest, RuleCreateResponse...).

Filters arrive as plain JSON (`Any`): kit/filters checks them and names the offending
condition (`source_filters[1][0].vals[2]`), which msgspec's own errors could not."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import Id

RuleName = Annotated[str, msgspec.Meta(min_length=1, max_length=39)]
Description = Annotated[str, msgspec.Meta(max_length=500)]
RuleId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
Priority = Annotated[int, msgspec.Meta(ge=-1_000_000, le=1_000_000)]
EqualsPath = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Equals = Annotated[list[EqualsPath], msgspec.Meta(max_length=20)]
RuleStatus = Literal["enabled", "disabled"]


class RuleFields(msgspec.Struct, kw_only=True):
    """What every noise rule's create and update take besides its kind's settings (their
    keyword arguments, checked on entry; each kind's requests name them with these types).
    UNSET on an update: unchanged."""

    channel_id: Id
    rule_name: RuleName
    priority: Priority | msgspec.UnsetType = msgspec.UNSET
    description: Description | msgspec.UnsetType = msgspec.UNSET


class ChannelScopedRequest(msgspec.Struct, kw_only=True):
    channel_id: Id


class ChannelRuleIDRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    rule_id: RuleId


class RuleCreateResponse(msgspec.Struct, kw_only=True):
    rule_id: str
    rule_name: str


class OnceWindow(msgspec.Struct, kw_only=True):
    """A one-off silence window, Unix seconds (reference OnceTimeFilter)."""

    start_time: Annotated[int, msgspec.Meta(gt=0, le=2**40)]
    end_time: Annotated[int, msgspec.Meta(gt=0, le=2**40)]


# -- requests -------------------------------------------------------------------------------


class CreateInhibitRuleRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    rule_name: RuleName
    equals: Equals
    priority: Priority = 0
    description: Description = ""
    source_filters: Any = None
    target_filters: Any = None
    is_directly_discard: bool = False


# Updates are partial, as the reference's update schemas imply (only the ids, the name and, for
# inhibit rules, `equals` are required): a field left out (UNSET) keeps its stored value. An
# explicit `null` or empty filter is not "left out": it is refused like an empty one on create.


class UpdateInhibitRuleRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    rule_id: RuleId
    rule_name: RuleName
    equals: Equals
    priority: Priority | msgspec.UnsetType = msgspec.UNSET
    description: Description | msgspec.UnsetType = msgspec.UNSET
    source_filters: Any = msgspec.UNSET
    target_filters: Any = msgspec.UNSET
    is_directly_discard: bool | msgspec.UnsetType = msgspec.UNSET


class CreateSilenceRuleRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    rule_name: RuleName
    priority: Priority = 0
    description: Description = ""
    from_incident_id: str = ""
    time_filters: Any = None
    time_filter: OnceWindow | None = None
    filters: Any = None
    is_directly_discard: bool = False


class UpdateSilenceRuleRequest(msgspec.Struct, kw_only=True):
    """`time_filter` and `time_filters` are one setting, the rule's window: either given
    replaces the stored window; neither keeps it."""

    channel_id: Id
    rule_id: RuleId
    rule_name: RuleName
    priority: Priority | msgspec.UnsetType = msgspec.UNSET
    description: Description | msgspec.UnsetType = msgspec.UNSET
    time_filters: Any = msgspec.UNSET
    time_filter: OnceWindow | msgspec.UnsetType | None = msgspec.UNSET
    filters: Any = msgspec.UNSET
    is_directly_discard: bool | msgspec.UnsetType = msgspec.UNSET


class CreateDropRuleRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    rule_name: RuleName
    priority: Priority = 0
    description: Description = ""
    filters: Any = None


class UpdateDropRuleRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    rule_id: RuleId
    rule_name: RuleName
    priority: Priority | msgspec.UnsetType = msgspec.UNSET
    description: Description | msgspec.UnsetType = msgspec.UNSET
    filters: Any = msgspec.UNSET


class QuickSilenceRequest(msgspec.Struct, kw_only=True):
    """Silence alerts like this incident's for `minutes` from now."""

    incident_id: RuleId
    minutes: Annotated[int, msgspec.Meta(ge=1, le=43_200)] = 60
    rule_name: Annotated[str, msgspec.Meta(max_length=39)] = ""


# -- records --------------------------------------------------------------------------------

Filters = list[list[dict[str, Any]]]


class _RuleBase(msgspec.Struct, kw_only=True):
    account_id: int
    channel_id: int
    priority: int
    rule_name: str
    description: str
    status: RuleStatus
    rule_id: str
    updated_by: int
    created_at: int
    updated_at: int
    # Alerts the rule dropped (not stored) since it was created.
    dropped_cnt: int


class InhibitRuleItem(_RuleBase, kw_only=True):
    source_filters: Filters
    target_filters: Filters
    equals: list[str]
    is_directly_discard: bool


class SilenceRuleItem(_RuleBase, kw_only=True):
    time_filters: list[dict[str, Any]]
    time_filter: OnceWindow | None
    filters: Filters
    is_directly_discard: bool
    is_effective: bool  # in its window now (and enabled)
    from_incident_id: str = ""


class UnsubscribeRuleItem(_RuleBase, kw_only=True):
    filters: Filters


class ListInhibitRulesResponse(msgspec.Struct, kw_only=True):
    items: list[InhibitRuleItem]


class ListSilenceRulesResponse(msgspec.Struct, kw_only=True):
    items: list[SilenceRuleItem]


class ListDropRulesResponse(msgspec.Struct, kw_only=True):
    items: list[UnsubscribeRuleItem]


RuleItem = InhibitRuleItem | SilenceRuleItem | UnsubscribeRuleItem
