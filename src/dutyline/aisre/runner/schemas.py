"""Worknode and runner-key requests and records. The reference (openapi.en.json) describes no
runner operations, so the names follow the runner's own words (protocol/messages.go of
github.com/flashcatcloud/flashduty-runner: worknode, name, labels, version, environment).
Times are Unix milliseconds."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dutyline.api.types import PageRequest

WorknodeId = Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
KeyId = Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Labels = Annotated[list[Label], msgspec.Meta(max_length=64)]
Description = Annotated[str, msgspec.Meta(max_length=1024)]


class WorknodeRecord(msgspec.Struct, kw_only=True):
    worknode_id: str
    account_id: int
    name: str
    labels: list[str]
    description: str
    # From the runner's heartbeats.
    runner_name: str
    runner_labels: list[str]
    version: str
    environment: dict[str, Any]
    metrics: dict[str, Any]
    online: bool
    connected_at: int
    last_heartbeat_at: int
    disconnected_at: int
    key_count: int
    created_at: int
    updated_at: int


class WorknodeCreateRequest(msgspec.Struct, kw_only=True):
    name: Name
    labels: Labels = msgspec.field(default_factory=list)
    description: Description = ""


class WorknodeUpdateRequest(msgspec.Struct, kw_only=True):
    """Fields left out (or null) keep their value; the runner gets them in its next welcome."""

    worknode_id: WorknodeId
    name: Name | None = None
    labels: Labels | None = None
    description: Description | None = None


class WorknodeLookup(msgspec.Struct, kw_only=True):
    worknode_id: WorknodeId


class WorknodeListRequest(PageRequest, kw_only=True):
    query: Annotated[str, msgspec.Meta(max_length=255)] = ""
    online: bool | None = None


class WorknodeListResponse(msgspec.Struct, kw_only=True):
    total: int
    p: int
    limit: int
    items: list[WorknodeRecord]


class RunnerKeyRecord(msgspec.Struct, kw_only=True):
    key_id: str
    worknode_id: str
    name: str
    key_suffix: str
    revoked: bool
    revoked_at: int
    last_used_at: int
    created_at: int


class RunnerKeyCreated(RunnerKeyRecord, kw_only=True):
    """The one response that carries the key itself; it is stored only as a hash."""

    key: str


class RunnerKeyCreateRequest(msgspec.Struct, kw_only=True):
    worknode_id: WorknodeId
    name: Annotated[str, msgspec.Meta(max_length=255)] = ""


class RunnerKeyLookup(msgspec.Struct, kw_only=True):
    key_id: KeyId


class RunnerKeyListRequest(PageRequest, kw_only=True):
    worknode_id: Annotated[str, msgspec.Meta(max_length=40)] = ""
    include_revoked: bool = False


class RunnerKeyListResponse(msgspec.Struct, kw_only=True):
    total: int
    p: int
    limit: int
    items: list[RunnerKeyRecord]
