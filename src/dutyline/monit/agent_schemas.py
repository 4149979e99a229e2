"""Requests and answers of the agent-facing monitor operations: /monit/tools/catalog,
/monit/tools/invoke, /monit/query/diagnose and /monit/query/rows (shapes published clients
read: spec decisions §10). Optional fields default to what a client that omits them means."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import NonNegInt64

MAX_TOOLS_PER_INVOKE = 8
DEFAULT_MAX_LOGS = 10_000
MAX_LOGS = 50_000
DEFAULT_MAX_PATTERNS = 20
MAX_PATTERNS = 50
DEFAULT_TIMEOUT_S = 25
MAX_TIMEOUT_S = 30

# Checked by the service (bytes, characters); the bound here only caps what is decoded.
LocatorText = Annotated[str, msgspec.Meta(max_length=1024)]
KindName = Annotated[str, msgspec.Meta(max_length=64)]
DsType = Annotated[str, msgspec.Meta(max_length=32)]
DsName = Annotated[str, msgspec.Meta(max_length=255)]
QueryText = Annotated[str, msgspec.Meta(max_length=8192)]
# An optional consistency check a client may send: it must be the caller's own account.
AccountCheck = NonNegInt64


class CatalogRequest(msgspec.Struct, kw_only=True):
    target_locator: LocatorText = ""
    target_kind: KindName = ""
    account_id: AccountCheck = 0


class ToolInfo(msgspec.Struct, kw_only=True):
    name: str
    description: str
    input_schema: dict[str, Any]


class TargetInfo(msgspec.Struct, kw_only=True):
    """The target as resolved: its kind, and the data source and `instance` label values
    its tools are scoped to."""

    target_locator: str
    target_kind: str
    name: str
    datasource_id: int
    datasource_name: str
    instances: list[str]


class CatalogResponse(msgspec.Struct, kw_only=True):
    target: TargetInfo
    tools: list[ToolInfo]
    # Names this catalogue; an invoke that sends it is refused (unknown_toolset_hash) once
    # the catalogue has changed.
    toolset_hash: str


class InvokeTool(msgspec.Struct, kw_only=True):
    tool: Annotated[str, msgspec.Meta(max_length=128)] = ""
    params: dict[str, Any] | None = None


class InvokeRequest(msgspec.Struct, kw_only=True):
    target_locator: LocatorText = ""
    target_kind: KindName = ""
    tools: Annotated[list[InvokeTool], msgspec.Meta(max_length=MAX_TOOLS_PER_INVOKE)] | None = None
    toolset_hash: Annotated[str, msgspec.Meta(max_length=64)] = ""
    account_id: AccountCheck = 0


class InvokeResult(msgspec.Struct, kw_only=True):
    """One tool's answer: `data` (`{summary, data}`) on success, `error` when it failed."""

    tool: str
    data: Any = None
    error: str = ""


class InvokeResponse(msgspec.Struct, kw_only=True):
    target: TargetInfo
    results: list[InvokeResult]


class TimeRange(msgspec.Struct, kw_only=True):
    start: NonNegInt64 = 0  # Unix seconds; both 0: the last 15 minutes
    end: NonNegInt64 = 0


class DiagnoseInput(msgspec.Struct, kw_only=True):
    query: QueryText = ""


Operation = Literal["", "log_patterns", "metric_trends"]


class DiagnoseRequest(msgspec.Struct, kw_only=True):
    ds_type: DsType = ""
    ds_name: DsName = ""
    time_range: TimeRange = msgspec.field(default_factory=TimeRange)
    input: DiagnoseInput = msgspec.field(default_factory=DiagnoseInput)
    operation: Operation = ""
    # 0 (or absent): the default.
    max_logs_scanned: Annotated[int, msgspec.Meta(ge=0, le=MAX_LOGS)] = 0
    max_patterns: Annotated[int, msgspec.Meta(ge=0, le=MAX_PATTERNS)] = 0
    timeout_seconds: Annotated[int, msgspec.Meta(ge=0, le=MAX_TIMEOUT_S)] = 0
    account_id: AccountCheck = 0


class Window(msgspec.Struct, kw_only=True):
    start: int
    end: int


class DiagnoseResponse(msgspec.Struct, kw_only=True):
    operation: str
    ds_type: str
    ds_name: str
    query: str
    window: Window
    # log_patterns: {signature, sample_count, first_seen, sample}, most frequent first;
    # metric_trends: {labels, points, first, last, min, max, avg, change, change_percent,
    # trend}, largest relative change first.
    results: list[dict[str, Any]]
    scanned: int  # log lines read, or series read
    truncated: bool  # the limit (max_logs_scanned, max_patterns, series cap) cut the input


class RowsRequest(msgspec.Struct, kw_only=True):
    ds_type: DsType = ""
    ds_name: DsName = ""
    expr: QueryText = ""
    args: Annotated[dict[Annotated[str, msgspec.Meta(max_length=128)],
                         Annotated[str, msgspec.Meta(max_length=1024)]],
                    msgspec.Meta(max_length=50)] = msgspec.field(default_factory=dict)
    account_id: AccountCheck = 0


class Row(msgspec.Struct, kw_only=True):
    """A series' labels in `fields` and its number in `values.value`; a log line's stream
    labels in `fields` and `values.timestamp` (Unix seconds) and `values.line`."""

    fields: dict[str, str]
    values: dict[str, float | str | None]
