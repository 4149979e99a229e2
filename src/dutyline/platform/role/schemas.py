"""Role requests and records (reference: RoleItem, RoleUpsertRequest, PermissionItem...)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64


class RoleItem(msgspec.Struct, kw_only=True):
    role_id: int
    role_name: str
    description: str
    status: str
    permission_ids: list[int]
    editable: bool
    created_at: int
    updated_at: int


class RoleIdRequest(msgspec.Struct, kw_only=True):
    """RoleInfoRequest / RoleIDRequest: one role of the caller's account."""

    role_id: Id


class RoleListRequest(msgspec.Struct, kw_only=True):
    orderby: Literal["created_at", "updated_at"] = "created_at"
    asc: bool = True


class RoleListResponse(msgspec.Struct, kw_only=True):
    total: int
    items: list[RoleItem]


class RoleUpsertRequest(msgspec.Struct, kw_only=True):
    role_name: Annotated[str, msgspec.Meta(min_length=1, max_length=39)]
    role_id: NonNegInt64 = 0
    description: Annotated[str, msgspec.Meta(max_length=499)] | None = None
    # None keeps the current set on update; a list replaces it.
    permission_ids: Annotated[list[NonNegInt64], msgspec.Meta(max_length=1000)] | None = None


class RoleUpsertResponse(msgspec.Struct, kw_only=True):
    role_id: int
    role_name: str


class RolePermissionListRequest(msgspec.Struct, kw_only=True):
    role_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] | None = None
    with_all: bool = False


class PermissionItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: int
    permission_name: str
    permission_type: str
    description: str
    # `class` is a Python keyword, so the attribute carries another name on our side.
    permission_class: str = msgspec.field(name="class")
    scope: str
    status: str
    # Only present when with_all is true (reference PermissionItem).
    is_granted: bool | None = None


class RolePermissionListResponse(msgspec.Struct, kw_only=True):
    items: list[PermissionItem]


FactorType = Literal["api", "button", "visit", "menu", "url"]


class PermissionFactorListRequest(msgspec.Struct, kw_only=True):
    factor_types: Annotated[list[FactorType], msgspec.Meta(max_length=5)] | None = None


class PermissionFactorItem(msgspec.Struct, kw_only=True):
    factor_name: str
    factor_type: FactorType


class RoleGrantRequest(msgspec.Struct, kw_only=True):
    """RoleGrantRequest: one role to (or from) up to 100 members."""

    member_ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=100)]
    role_id: Id
