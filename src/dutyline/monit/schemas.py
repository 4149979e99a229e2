"""Monit requests and records, with the reference's field names (AlertRule, RuleConfigs,
DataSourceItem, DSPrometheusConfig and the /monit/* request schemas)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import msgspec

from dutyline.api.outbound_secrets import OUTBOUND_SECRET, OUTBOUND_URL
from dutyline.api.secret import SECRET
from dutyline.api.types import Id, NonNegInt64
from dutyline.kit.vocabulary import WARNING, Severity

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
Text = Annotated[str, msgspec.Meta(max_length=16_384)]
Short = Annotated[str, msgspec.Meta(max_length=1024)]
Expr = Annotated[str, msgspec.Meta(max_length=8192)]
LabelKey = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
LabelValue = Annotated[str, msgspec.Meta(max_length=2048)]
Labels = Annotated[dict[LabelKey, LabelValue], msgspec.Meta(max_length=50)]
Args = Annotated[dict[Annotated[str, msgspec.Meta(max_length=128)], Short],
                 msgspec.Meta(max_length=50)]
Seconds = Annotated[int, msgspec.Meta(ge=0, le=30 * 86_400)]
Count = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]
CheckTimes = Annotated[int, msgspec.Meta(ge=0, le=1000)]
IdList = Annotated[list[Id], msgspec.Meta(max_length=1000)]


# --- data sources ----------------------------------------------------------------------


# Every field is always answered (false and "" included): clients read each by name.
class DSPrometheusConfig(msgspec.Struct, kw_only=True):
    basic_auth_enabled: bool = False
    basic_auth_username: Short = ""
    # Secrets, and the header lines whose values are (api/outbound_secrets.py).
    basic_auth_password: Annotated[Short, OUTBOUND_SECRET, SECRET] = ""
    headers: Annotated[list[Short], msgspec.Meta(max_length=50), OUTBOUND_SECRET,
                       SECRET] = msgspec.field(
        default_factory=list)
    params: Annotated[list[Short], msgspec.Meta(max_length=50), OUTBOUND_SECRET,
                      SECRET] = msgspec.field(
        default_factory=list)
    tls_ca: Text = ""
    tls_cert: Text = ""
    tls_key: Annotated[Text, OUTBOUND_SECRET, SECRET] = ""
    tls_key_pwd: Annotated[Short, OUTBOUND_SECRET, SECRET] = ""
    tls_skip_verify: bool = False
    tls_server_name: Short = ""
    tls_min_version: Short = ""
    tls_max_version: Short = ""


class DSPayload(msgspec.Struct, kw_only=True, omit_defaults=True):
    prometheus: DSPrometheusConfig | None = None
    # The reference's DSLokiConfig has exactly the fields of DSPrometheusConfig.
    loki: DSPrometheusConfig | None = None


DS_TYPES = ("prometheus", "loki", "mysql", "oracle", "postgres", "clickhouse",
            "elasticsearch", "sls", "victorialogs")
# Data sources that can be saved and queried; alert rules evaluate only RULE_DS_TYPES.
SUPPORTED_DS_TYPES = ("prometheus", "loki")
RULE_DS_TYPES = ("prometheus",)
UNSUPPORTED_DS_TYPE = "only prometheus and loki data sources are supported"


class DataSourceUpsertRequest(msgspec.Struct, kw_only=True):
    type_ident: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    name: Name
    edge_cluster_name: Annotated[str, msgspec.Meta(max_length=128)] = ""
    payload: DSPayload = msgspec.field(default_factory=DSPayload)
    id: NonNegInt64 = 0
    note: Short = ""
    address: Annotated[str, msgspec.Meta(max_length=2048), OUTBOUND_URL] = ""
    enabled: bool = True


class DataSourceListRequest(msgspec.Struct, kw_only=True):
    type: Annotated[str, msgspec.Meta(max_length=32)] = ""


class IDRequest(msgspec.Struct, kw_only=True):
    id: Id


class DataSourceItem(msgspec.Struct, kw_only=True):
    id: int
    account_id: int
    type_ident: str
    name: str
    enabled: bool
    note: str
    address: str
    payload: DSPayload
    edge_cluster_name: str
    updated_at: int


class QueryRequest(msgspec.Struct, kw_only=True):
    """An ad-hoc instant query for a rule editor (our own operation)."""

    ds_id: Id
    expr: Annotated[str, msgspec.Meta(min_length=1, max_length=8192)]
    time: NonNegInt64 = 0  # Unix seconds; 0: now


class QueryRow(msgspec.Struct, kw_only=True):
    labels: dict[str, str]
    value: float | None


class QueryResponse(msgspec.Struct, kw_only=True):
    result_type: str
    rows: list[QueryRow]


# --- alert rules -----------------------------------------------------------------------


class RuleQuery(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: Annotated[str, msgspec.Meta(max_length=16)] = "A"
    expr: Expr = ""
    label_fields: Annotated[list[Short], msgspec.Meta(max_length=50)] = msgspec.field(
        default_factory=list)
    value_fields: Annotated[list[Short], msgspec.Meta(max_length=50)] = msgspec.field(
        default_factory=list)
    args: Args = msgspec.field(default_factory=dict)


class RelateQuery(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: Annotated[str, msgspec.Meta(max_length=16)] = ""
    expr: Expr = ""
    args: Args = msgspec.field(default_factory=dict)


class Recovery(msgspec.Struct, kw_only=True, omit_defaults=True):
    mode: Literal["", "invert", "threshold", "ql", "nodata"] = ""
    condition: Expr = ""
    args: Args = msgspec.field(default_factory=dict)


class CheckThreshold(msgspec.Struct, kw_only=True, omit_defaults=True):
    enabled: bool = False
    alerting_check_times: CheckTimes = 0
    recovery_check_times: CheckTimes = 0
    push_recovery_event: bool = False
    critical: Expr = ""
    warning: Expr = ""
    info: Expr = ""
    recovery: Recovery | None = None


class CheckAnydata(msgspec.Struct, kw_only=True, omit_defaults=True):
    enabled: bool = False
    alerting_check_times: CheckTimes = 0
    recovery_check_times: CheckTimes = 0
    push_recovery_event: bool = False
    severity: Severity = WARNING
    recovery: Recovery | None = None


class CheckNodata(msgspec.Struct, kw_only=True, omit_defaults=True):
    enabled: bool = False
    alerting_check_times: CheckTimes = 0
    recovery_check_times: CheckTimes = 0
    push_recovery_event: bool = False
    severity: Severity = WARNING
    resolve_timeout: Seconds = 0


class RuleConfigs(msgspec.Struct, kw_only=True, omit_defaults=True):
    queries: Annotated[list[RuleQuery], msgspec.Meta(max_length=10)] = msgspec.field(
        default_factory=list)
    relate_queries: Annotated[list[RelateQuery], msgspec.Meta(max_length=10)] = msgspec.field(
        default_factory=list)
    check_threshold: CheckThreshold | None = None
    check_anydata: CheckAnydata | None = None
    check_nodata: CheckNodata | None = None


TimeOfDay = Annotated[str, msgspec.Meta(max_length=8)]


class EnabledTime(msgspec.Struct, kw_only=True, omit_defaults=True):
    days: Annotated[list[Annotated[int, msgspec.Meta(ge=0, le=6)]],
                    msgspec.Meta(max_length=7)] = msgspec.field(default_factory=list)
    stime: TimeOfDay = ""
    etime: TimeOfDay = ""


class RuleSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a person writes of a rule: the request of create, update and import, and the
    body of export. Server-assigned fields sent back are accepted and ignored."""

    id: NonNegInt64 = 0
    account_id: NonNegInt64 = 0
    folder_id: NonNegInt64 = 0
    name: Annotated[str, msgspec.Meta(max_length=255)] = ""
    labels: Labels = msgspec.field(default_factory=dict)
    ds_type: Annotated[str, msgspec.Meta(max_length=32)] = "prometheus"
    ds_list: Annotated[list[Short], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)
    ds_ids: IdList = msgspec.field(default_factory=list)
    enabled: bool = True
    debug_log_enabled: bool = False
    rule_configs: RuleConfigs = msgspec.field(default_factory=RuleConfigs)
    cron_pattern: Annotated[str, msgspec.Meta(max_length=128)] = "* * * * *"
    delay_seconds: Annotated[int, msgspec.Meta(ge=0, le=86_400)] = 0
    enabled_times: Annotated[list[EnabledTime], msgspec.Meta(max_length=50)] = msgspec.field(
        default_factory=list)
    annotations: Labels = msgspec.field(default_factory=dict)
    description_type: Literal["text", "markdown"] = "text"
    description: Text = ""
    channel_ids: IdList = msgspec.field(default_factory=list)
    repeat_interval: Seconds = 0
    repeat_total: Count = 0
    creator_id: NonNegInt64 = 0
    creator_name: Short = ""
    updater_id: NonNegInt64 = 0
    updater_name: Short = ""
    created_at: NonNegInt64 = 0
    updated_at: NonNegInt64 = 0


# /monit/rule/update: the fields given replace the rule's and those left out keep their value
# (the reference's own example sends a name and its queries only). Built from RuleSpec, so the
# two never drift apart.
RuleUpdate: Any = msgspec.defstruct(
    "RuleUpdate",
    [(f.name, f.type | msgspec.UnsetType, msgspec.UNSET)  # type: ignore[operator,unused-ignore]
     for f in msgspec.structs.fields(RuleSpec)],
    kw_only=True, module=__name__)


# Its fields are named as on AlertRule: a rule's record is its row's columns plus this body.
class RuleBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The stored JSON body of a rule (everything evaluation reads that has no column)."""

    labels: dict[str, str] = msgspec.field(default_factory=dict)
    ds_list: list[str] = msgspec.field(default_factory=list)
    ds_ids: list[int] = msgspec.field(default_factory=list)
    rule_configs: RuleConfigs = msgspec.field(default_factory=RuleConfigs)
    enabled_times: list[EnabledTime] = msgspec.field(default_factory=list)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    description_type: str = "text"
    description: str = ""
    channel_ids: list[int] = msgspec.field(default_factory=list)
    repeat_interval: int = 0
    repeat_total: int = 0


_body_decoder = msgspec.json.Decoder(RuleBody)


def decode_body(raw: str) -> RuleBody:
    return _body_decoder.decode(raw)


S = TypeVar("S", bound=msgspec.Struct)


def shaped(shape: type[S], source: Any, **given: Any) -> S:
    """`shape` filled from the same-named fields of `source` (a record, a spec or a row) and
    `given`: each shape of a record declares its fields once, and no mapping names them."""
    return shape(**{name: getattr(source, name) for name in shape.__struct_fields__
                    if name not in given}, **given)


class EvalStatus(msgspec.Struct, kw_only=True):
    """Our addition to the rule record: how its last evaluation went."""

    last_eval_at_ms: int
    last_eval_ms: int
    last_error: str
    firing_count: int


# The rule itself: the one record every shape of it is drawn from by field name (`shaped`):
# the answer of create, update and info; the list item, the export, the audit snapshot, the
# spec that update/fields edits and the stored body. Built from a row in service.rule_of.
# (No docstring: the OpenAPI document would publish it as the schema's description.)
class AlertRule(msgspec.Struct, kw_only=True):
    id: int
    account_id: int
    folder_id: int
    name: str
    labels: dict[str, str]
    ds_type: str
    ds_list: list[str]
    ds_ids: list[int]
    enabled: bool
    debug_log_enabled: bool
    rule_configs: RuleConfigs
    cron_pattern: str
    delay_seconds: int
    enabled_times: list[EnabledTime]
    annotations: dict[str, str]
    description_type: str
    description: str
    channel_ids: list[int]
    repeat_interval: int
    repeat_total: int
    creator_id: int
    creator_name: str
    updater_id: int
    updater_name: str
    created_at: int
    updated_at: int
    eval_status: EvalStatus


class AlertRuleBasic(msgspec.Struct, kw_only=True):
    id: int
    account_id: int
    folder_id: int
    name: str
    labels: dict[str, str]
    ds_type: str
    enabled: bool
    debug_log_enabled: bool
    cron_pattern: str
    delay_seconds: int
    creator_id: int
    creator_name: str
    updater_id: int
    updater_name: str
    created_at: int
    updated_at: int
    triggered: bool


class AlertRuleExport(msgspec.Struct, kw_only=True):
    name: str
    labels: dict[str, str]
    ds_type: str
    ds_list: list[str]
    ds_ids: list[int]
    enabled: bool
    debug_log_enabled: bool
    rule_configs: RuleConfigs
    cron_pattern: str
    delay_seconds: int
    enabled_times: list[EnabledTime]
    annotations: dict[str, str]
    description_type: str
    description: str
    repeat_interval: int
    repeat_total: int


class RuleIDRequest(msgspec.Struct, kw_only=True):
    id: Id


class RuleIDsRequest(msgspec.Struct, kw_only=True):
    ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=1000)]


class RuleListRequest(msgspec.Struct, kw_only=True):
    folder_id: NonNegInt64 = 0


class RuleFolderIDRequest(msgspec.Struct, kw_only=True):
    folder_id: NonNegInt64 = 0


class RuleFieldsUpdateRequest(msgspec.Struct, kw_only=True):
    ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=1000)]
    fields: Annotated[list[Annotated[str, msgspec.Meta(max_length=64)]],
                      msgspec.Meta(min_length=1, max_length=20)]
    labels: Labels | None = None
    ds_type: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    ds_list: Annotated[list[Short], msgspec.Meta(max_length=100)] | None = None
    ds_ids: IdList | None = None
    enabled: bool | None = None
    debug_log_enabled: bool | None = None
    cron_pattern: Annotated[str, msgspec.Meta(max_length=128)] | None = None
    delay_seconds: Annotated[int, msgspec.Meta(ge=0, le=86_400)] | None = None
    enabled_times: Annotated[list[EnabledTime], msgspec.Meta(max_length=50)] | None = None
    annotations: Labels | None = None
    description: Text | None = None
    channel_ids: IdList | None = None
    repeat_interval: Seconds | None = None
    repeat_total: Count | None = None


UPDATABLE_FIELDS = frozenset(RuleFieldsUpdateRequest.__struct_fields__) - {"ids", "fields"}


class NameMessage(msgspec.Struct, kw_only=True):
    name: str
    message: str


class AlertRuleStatus(msgspec.Struct, kw_only=True):
    folder_id: int
    folder_name: str
    rule_total: int
    triggered_rule_count: int


RuleImportRequest = Annotated[list[RuleSpec], msgspec.Meta(min_length=1, max_length=500)]


class RuleMoveRequest(msgspec.Struct, kw_only=True):
    ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=1000)]
    dest_folder_id: NonNegInt64


class RuleEmptyRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """No parameters (the reference's RuleEmptyRequest admits no fields)."""


class AlertRuleAudit(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: int
    account_id: int
    alert_rule_id: int
    action: str
    creator_id: int
    creator_name: str
    created_at: int
    content: str = ""  # the rule's JSON snapshot: on audit/detail only


class DSType(msgspec.Struct, kw_only=True):
    id: int
    name: str
    ident: str
    account_id: int
    weight: int


class AlertRuleCounter(msgspec.Struct, kw_only=True):
    id: int
    account_id: int
    num: int
    clock: int


# --- the rule repository ---------------------------------------------------------------

OpenFlag = Literal[0, 1, 2]
RulesetPayload = Annotated[str, msgspec.Meta(min_length=1, max_length=1_048_576)]


class StoreRulesetUpsertRequest(msgspec.Struct, kw_only=True):
    type_ident: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    note: Short
    payload: RulesetPayload
    open_flag: OpenFlag = 0


class StoreRulesetUpdateRequest(msgspec.Struct, kw_only=True):
    id: Id
    note: Short
    payload: RulesetPayload
    open_flag: OpenFlag | None = None  # omitted: unchanged


class StoreRulesetListRequest(msgspec.Struct, kw_only=True):
    type_ident: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]


class StoreRulesetItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: int
    type_ident: str
    note: str
    open_flag: int
    creator_account_id: int
    creator_id: int
    creator_name: str
    created_at: int
    updated_at: int
    payload: str = ""  # on create, info and update; not in lists
