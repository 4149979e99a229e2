"""Audit log requests and records (reference: AuditSearchRequest, AuditLog,
AuditSearchResponse, AuditOperationTypeItem)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.types import Id

MAX_SPAN_SECONDS = 90 * 24 * 3600
DEFAULT_LIMIT = 20

OperationName = Annotated[str, msgspec.Meta(max_length=128)]
# Unix seconds up to the year 9999: in milliseconds they still fit the int64 column, so a huge
# value is a 400 here and not an overflow at the database.
Seconds = Annotated[int, msgspec.Meta(ge=0, le=253_402_300_799)]


class AuditSearchRequest(msgspec.Struct, kw_only=True):
    start_time: Seconds
    end_time: Seconds
    # 0 means the default page size (the reference: minimum 0, maximum 99, default 20).
    limit: Annotated[int, msgspec.Meta(ge=0, le=99)] = 0
    request_id: Annotated[str, msgspec.Meta(max_length=64)] = ""
    search_after_ctx: Annotated[str, msgspec.Meta(max_length=256)] = ""
    operations: Annotated[list[OperationName], msgspec.Meta(max_length=200)] | None = None
    person_id: Id | None = None
    # The reference: true returns only dangerous operations; false or absent, all of them.
    is_dangerous: bool | None = None
    # The reference: true only writes, false only reads, absent both.
    is_write: bool | None = None


class AuditParam(msgspec.Struct):
    """A URL path parameter; capitalised as the reference spells it (always empty here)."""

    Key: str
    Value: str


class AuditLog(msgspec.Struct, kw_only=True):
    created_at: int  # Unix milliseconds
    account_id: int
    member_id: int
    member_name: str
    request_id: str
    ip: str
    operation: str
    operation_name: str
    body: str
    params: list[AuditParam]
    is_dangerous: bool
    is_write: bool
    # Ours, beyond the reference: the result code, the app_key's last characters, the ids
    # the operation touched, and how the member proved who they were (app_key, session,
    # signed_link, system).
    outcome: str
    key_suffix: str
    target_ids: list[str]
    credential: str = "app_key"


class AuditSearchResponse(msgspec.Struct, kw_only=True):
    total: int
    search_after_ctx: str
    docs: list[AuditLog]


class AuditOperationTypeItem(msgspec.Struct, kw_only=True):
    name: str
    name_cn: str


class AuditOperationListResponse(msgspec.Struct, kw_only=True):
    items: list[AuditOperationTypeItem]
