"""Requests and records of mapping APIs (reference MappingAPI*)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.outbound_secrets import OUTBOUND_SECRET, OUTBOUND_URL
from dutyline.api.secret import SECRET
from dutyline.api.types import NonNegInt64

ApiId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
ApiName = Annotated[str, msgspec.Meta(min_length=1, max_length=199)]
Url = Annotated[str, msgspec.Meta(min_length=1, max_length=500), OUTBOUND_URL]
Description = Annotated[str, msgspec.Meta(max_length=500)]
Headers = Annotated[dict[Annotated[str, msgspec.Meta(pattern="^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")],
                         Annotated[str, msgspec.Meta(max_length=1024), SECRET]],
                    msgspec.Meta(max_length=20), OUTBOUND_SECRET]
Timeout = Annotated[int, msgspec.Meta(ge=1, le=3)]
RetryCount = Annotated[int, msgspec.Meta(ge=0, le=1)]
MAX_APIS = 50
MASK = "***"


class ApiIDRequest(msgspec.Struct, kw_only=True):
    api_id: ApiId


class ApiCreateRequest(msgspec.Struct, kw_only=True):
    api_name: ApiName
    url: Url
    description: Description = ""
    insecure_skip_verify: bool = False
    headers: Headers = msgspec.field(default_factory=dict)
    timeout: Timeout = 2
    retry_count: RetryCount = 0
    team_id: NonNegInt64 = 0


class ApiUpdateRequest(msgspec.Struct, kw_only=True):
    api_id: ApiId
    api_name: ApiName | None = None
    url: Url | None = None
    description: Description | None = None
    insecure_skip_verify: bool | None = None
    headers: Headers | None = None
    timeout: Timeout | None = None
    retry_count: RetryCount | None = None
    team_id: NonNegInt64 | None = None


class ApiCreateResponse(msgspec.Struct, kw_only=True):
    api_id: str
    api_name: str


class MappingApiItem(msgspec.Struct, kw_only=True):
    api_id: str
    api_name: str
    description: str
    url: str
    headers: dict[str, str]  # values masked: they are often credentials
    timeout: int
    retry_count: int
    insecure_skip_verify: bool
    status: str
    team_id: int
    creator_id: int
    updated_by: int
    created_at: int
    updated_at: int


class ApiListResponse(msgspec.Struct, kw_only=True):
    total: int
    items: list[MappingApiItem]
