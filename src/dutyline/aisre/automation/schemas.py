"""Requests and records of automation rules and runs.

The rule record is the contract's AutomationRuleItem: required fields have no default (always
sent), optional ones default to None and are left out when absent (`http_post_token` only in
the response that creates or rotates it)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64
from dutyline.kit.vocabulary import Severity

EnvironmentKind = Literal["", "cloud", "byoc"]
_Page = Annotated[int, msgspec.Meta(ge=1, le=10_000)]
_Limit = Annotated[int, msgspec.Meta(ge=1, le=100)]
_Id = Annotated[str, msgspec.Meta(max_length=64)]
_ChannelIds = Annotated[list[Id], msgspec.Meta(max_length=100)]
_Severities = Annotated[list[Severity], msgspec.Meta(max_length=3)]


class RuleCreateRequest(msgspec.Struct, kw_only=True):
    # Required by the service (400 naming the field when missing or empty).
    name: str = ""
    prompt: str = ""
    cron_expr: str = ""
    team_id: NonNegInt64 = 0
    enabled: bool = False
    timezone: Annotated[str, msgspec.Meta(max_length=64)] = "UTC"
    environment_kind: EnvironmentKind = ""
    environment_id: Annotated[str, msgspec.Meta(max_length=128)] = ""
    schedule_trigger_enabled: bool = True
    http_post_trigger_enabled: bool = False
    oncall_incident_trigger_enabled: bool = False
    oncall_incident_channel_ids: _ChannelIds | None = None
    oncall_incident_severities: _Severities | None = None


class RuleUpdateRequest(msgspec.Struct, kw_only=True):
    """The contract's update: every field but rule_id may be left out (left unchanged)."""

    rule_id: _Id
    name: str | None = None
    team_id: NonNegInt64 | None = None
    enabled: bool | None = None
    cron_expr: str | None = None
    timezone: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    schedule_trigger_enabled: bool | None = None
    prompt: str | None = None
    environment_kind: EnvironmentKind | None = None
    environment_id: Annotated[str, msgspec.Meta(max_length=128)] | None = None
    http_post_trigger_enabled: bool | None = None
    rotate_http_post_trigger_token: bool | None = None
    oncall_incident_trigger_enabled: bool | None = None
    oncall_incident_channel_ids: _ChannelIds | None = None
    oncall_incident_severities: _Severities | None = None


class RuleLookup(msgspec.Struct, kw_only=True):
    rule_id: _Id


class RuleListRequest(msgspec.Struct, kw_only=True):
    p: _Page = 1
    limit: _Limit = 20
    team_ids: Annotated[list[NonNegInt64], msgspec.Meta(max_length=100)] | None = None
    query: Annotated[str, msgspec.Meta(max_length=255)] = ""

    def __post_init__(self) -> None:
        if self.p * self.limit > 10_000:
            raise ValueError("p × limit must not exceed 10000")


class RuleRunRequest(msgspec.Struct, kw_only=True):
    rule_id: _Id
    # Optional context for this run (any JSON), like the HTTP trigger's body.
    context: Any = None


class AutomationRuleItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    rule_id: str
    account_id: int
    team_id: int
    owner_id: int
    name: str
    enabled: bool
    run_scope: str
    cron_expr: str
    timezone: str
    prompt: str
    environment_kind: str
    environment_id: str
    schedule_trigger_enabled: bool
    http_post_trigger_enabled: bool
    can_edit: bool
    created_at: int
    updated_at: int
    schedule_next_fire_at_ms: int
    oncall_incident_trigger_enabled: bool
    schedule_trigger_id: str | None = None
    http_post_trigger_id: str | None = None
    http_post_trigger_url: str | None = None
    http_post_token: str | None = None
    oncall_incident_trigger_id: str | None = None
    oncall_incident_channel_ids: list[int] | None = None
    oncall_incident_severities: list[str] | None = None


class RuleListResponse(msgspec.Struct, kw_only=True):
    total: int
    rules: list[AutomationRuleItem]


class RunListRequest(msgspec.Struct, kw_only=True):
    rule_id: _Id = ""  # empty: every visible rule's runs
    status: Literal["", "queued", "running", "succeeded", "failed", "skipped"] = ""
    p: _Page = 1
    limit: _Limit = 20

    def __post_init__(self) -> None:
        if self.p * self.limit > 10_000:
            raise ValueError("p × limit must not exceed 10000")


class RunLookup(msgspec.Struct, kw_only=True):
    run_id: _Id


class RunStep(msgspec.Struct, kw_only=True):
    seq: int
    kind: str  # llm_request | llm_response | tool_call | tool_result | answer | error
    name: str
    content: str
    created_at: int


class RunRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    run_id: str
    rule_id: str
    account_id: int
    trigger_kind: str  # schedule | http_post | oncall_incident | manual
    trigger_id: str
    status: str  # queued | running | succeeded | failed | skipped
    context: Any
    due_at: int
    missed_fires: int
    session_id: str
    answer: str
    error: str
    created_by: int
    created_at: int
    started_at: int
    finished_at: int
    updated_at: int
    steps: list[RunStep] | None = None  # run/get only


class RunListResponse(msgspec.Struct, kw_only=True):
    total: int
    runs: list[RunRecord]


class FireResponse(msgspec.Struct, kw_only=True):
    type: str
    run_id: str
    session_id: str
