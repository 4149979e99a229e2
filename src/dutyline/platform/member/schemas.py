"""Member and person requests and records (reference: MemberItem, MemberInviteRequest,
MemberRoleGrantRequest, PersonItem...)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64, PageRequest

Email = Annotated[str, msgspec.Meta(max_length=255)]
Phone = Annotated[str, msgspec.Meta(max_length=32)]
CountryCode = Annotated[str, msgspec.Meta(max_length=8)]
RefId = Annotated[str, msgspec.Meta(max_length=128)]


class MemberInfoResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Contacts a member has not given (the Owner made at first start has no e-mail) are
    left out, as the reference allows, rather than answered empty."""

    account_id: int
    account_name: str
    account_avatar: str
    account_email: str = ""
    account_role_ids: list[int]
    account_locale: str
    account_time_zone: str
    domain: str
    member_id: int
    member_name: str
    phone: str = ""
    phone_verified: bool
    email: str = ""
    email_verified: bool
    country_code: str
    avatar: str
    locale: str
    time_zone: str
    is_external: bool
    status: str
    # When the member joined (Unix seconds); clients of the live service read it.
    created_at: int = 0


SearchQuery = Annotated[str, msgspec.Meta(max_length=255)]


class MemberSearch(msgspec.Struct, kw_only=True):
    """The free text a member list is searched by, as the list reads it (the console's
    search box decodes into it; MemberListRequest names it with the same type)."""

    query: SearchQuery = ""


class MemberListRequest(PageRequest, kw_only=True):
    role_id: Id | None = None
    orderby: Literal["created_at", "updated_at"] = "created_at"
    asc: bool = False
    query: SearchQuery = ""


class MemberItem(msgspec.Struct, kw_only=True):
    account_id: int
    member_id: int
    member_name: str
    country_code: str
    phone: str
    email: str  # the reference requires it (no format): "" for a member without one
    locale: str
    time_zone: str
    phone_verified: bool
    email_verified: bool
    avatar: str
    status: str
    account_role_ids: list[int]
    is_external: bool
    ref_id: str
    created_at: int
    updated_at: int


class MemberListResponse(msgspec.Struct, kw_only=True):
    p: int
    limit: int
    total: int
    items: list[MemberItem]


class NewMember(msgspec.Struct, kw_only=True, frozen=True):
    """A member to add, as the member service takes them (/member/invite's items)."""

    member_name: Annotated[str, msgspec.Meta(min_length=2, max_length=39)]
    email: Email = ""
    phone: Phone = ""
    country_code: CountryCode = ""
    # None or empty: the built-in member role.
    role_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] | None = None
    locale: Literal["zh-CN", "en-US", ""] = ""
    time_zone: Annotated[str, msgspec.Meta(max_length=64)] = ""
    ref_id: RefId = ""


class Invitations(msgspec.Struct, kw_only=True, frozen=True):
    """What the member service's invite takes: 1 to 20 members at once."""

    members: Annotated[list[NewMember], msgspec.Meta(min_length=1, max_length=20)]


class MemberInviteRequest(Invitations, kw_only=True, frozen=True):
    pass


class NewMemberItem(msgspec.Struct, kw_only=True):
    member_id: int
    member_name: str


class MemberInviteResponse(msgspec.Struct, kw_only=True):
    items: list[NewMemberItem]


class MemberDeleteRequest(msgspec.Struct, kw_only=True):
    """Identify one member by id, name, email, phone (with country code) or external ref."""

    member_id: NonNegInt64 = 0
    member_name: Annotated[str, msgspec.Meta(max_length=39)] = ""
    email: Email = ""
    phone: Phone = ""
    country_code: CountryCode = ""
    ref_id: RefId = ""


class MemberRoleChangeRequest(msgspec.Struct, kw_only=True):
    """MemberRoleGrantRequest / MemberRoleRevokeRequest."""

    member_id: Id
    role_ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=100)]


class RoleChoice(msgspec.Struct, kw_only=True):
    """A member's whole set of roles, as the member service's update takes it. May be
    empty: a member without roles keeps read access to their own profile only."""

    member_id: Id
    role_ids: Annotated[list[Id], msgspec.Meta(max_length=100)]


class MemberRoleUpdateRequest(RoleChoice, kw_only=True):
    pass


class ProfileChanges(msgspec.Struct, kw_only=True, frozen=True):
    """A member's profile and contacts to change, as the member service takes them: a
    field left None is left unchanged."""

    member_name: Annotated[str, msgspec.Meta(min_length=2, max_length=39)] | None = None
    email: Email | None = None
    phone: Phone | None = None
    country_code: CountryCode | None = None
    avatar: Annotated[str, msgspec.Meta(max_length=512)] | None = None
    locale: Literal["zh-CN", "en-US"] | None = None
    time_zone: Annotated[str, msgspec.Meta(max_length=64)] | None = None


class MemberResetInfoRequest(ProfileChanges, kw_only=True, frozen=True):
    """Reference MemberResetInfoRequest: a field left out is left unchanged."""

    member_id: Id


class PersonInfosRequest(msgspec.Struct, kw_only=True):
    person_ids: Annotated[list[Id], msgspec.Meta(max_length=100)]


class PersonItem(msgspec.Struct, kw_only=True, rename={"login_as": "as"}, omit_defaults=True):
    """A contact the person has not given is left out, as the reference allows."""

    account_id: int
    person_id: int
    person_name: str
    avatar: str
    locale: str
    time_zone: str
    email: str = ""
    phone: str = ""
    phone_verified: bool
    email_verified: bool
    login_as: str
    status: str


class PersonInfosResponse(msgspec.Struct, kw_only=True):
    items: list[PersonItem]
