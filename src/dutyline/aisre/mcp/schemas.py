"""MCP server requests and records (the contract's MCP server record plus the reference's
environment, masked headers, list_error and tool schemas). Times are Unix milliseconds."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.outbound_secrets import OUTBOUND_SECRET, OUTBOUND_URL
from dutyline.api.secret import SECRET
from dutyline.api.types import Id, NonNegInt64, PageRequest

ServerName = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
Description = Annotated[str, msgspec.Meta(max_length=1024)]
Url = Annotated[str, msgspec.Meta(max_length=2048), OUTBOUND_URL]
EnvironmentKind = Literal["", "cloud", "byoc"]
EnvironmentId = Annotated[str, msgspec.Meta(max_length=128)]
Transport = Literal["streamable-http", "sse", "stdio"]
# Seconds; 0 picks the default. Upper bounds keep a bad value from pinning a connection.
ConnectTimeout = Annotated[int, msgspec.Meta(ge=0, le=120)]
CallTimeout = Annotated[int, msgspec.Meta(ge=0, le=600)]
HeaderName = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
HeaderValue = Annotated[str, msgspec.Meta(max_length=8192), SECRET]
Headers = Annotated[dict[HeaderName, HeaderValue], msgspec.Meta(max_length=32), OUTBOUND_SECRET]
ServerId = Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
Status = Literal["enabled", "disabled"]


class McpTool(msgspec.Struct, kw_only=True):
    name: str
    description: str
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)


class McpServerRecord(msgspec.Struct, kw_only=True):
    server_id: str
    account_id: int
    team_id: int
    can_edit: bool
    server_name: str
    description: str
    transport: str
    url: str
    environment_kind: str
    environment_id: str
    status: str
    connect_timeout: int
    call_timeout: int
    tool_count: int
    tools: list[McpTool]
    # Names of the stored headers, each with the value masked: secrets are write-only.
    headers: dict[str, str]
    auth_mode: str
    list_error: str
    probed_at: int
    created_by: int
    created_at: int
    updated_at: int


class McpServerCreateRequest(msgspec.Struct, kw_only=True):
    server_name: ServerName
    description: Description = ""
    transport: Transport = "streamable-http"
    url: Url = ""
    environment_kind: EnvironmentKind = ""
    environment_id: EnvironmentId = ""
    connect_timeout: ConnectTimeout = 0
    call_timeout: CallTimeout = 0
    headers: Headers = msgspec.field(default_factory=dict)
    auth_mode: Literal["shared"] = "shared"
    team_id: NonNegInt64 = 0
    status: Status = "enabled"


class McpServerUpdateRequest(msgspec.Struct, kw_only=True):
    """Fields left out (or null) keep their value. `headers` replaces the set of headers; a
    value sent back masked ("******") keeps the stored secret of that name."""

    server_id: ServerId
    server_name: ServerName | None = None
    description: Description | None = None
    transport: Transport | None = None
    url: Url | None = None
    environment_kind: EnvironmentKind | None = None
    environment_id: EnvironmentId | None = None
    connect_timeout: ConnectTimeout | None = None
    call_timeout: CallTimeout | None = None
    headers: Headers | None = None
    auth_mode: Literal["shared"] | None = None
    team_id: NonNegInt64 | None = None


class McpServerLookup(msgspec.Struct, kw_only=True):
    server_id: ServerId


class McpServerListRequest(PageRequest, kw_only=True):
    include_account: bool = True
    query: Annotated[str, msgspec.Meta(max_length=255)] = ""
    # "" or "all": account-level and team servers; "account" or "team": only that kind.
    scope: Literal["", "all", "account", "team"] = ""
    # Only team servers of these teams (still only the caller's teams unless owner/admin).
    team_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] | None = None


class McpServerListResponse(msgspec.Struct, kw_only=True):
    total: int
    servers: list[McpServerRecord]
