"""/member/* and /person/infos operations."""

from __future__ import annotations

from dutyline.api.operation import Context, Empty, Router
from dutyline.platform.member import service
from dutyline.platform.member.schemas import (
    MemberDeleteRequest,
    MemberInfoResponse,
    MemberInviteRequest,
    MemberInviteResponse,
    MemberListRequest,
    MemberListResponse,
    MemberRoleChangeRequest,
    MemberRoleUpdateRequest,
    PersonInfosRequest,
    PersonInfosResponse,
)
from dutyline.platform.permissions import ACCOUNT_MANAGE

router = Router("Members")


@router.post("/member/info")
async def member_info(ctx: Context, req: Empty) -> MemberInfoResponse:
    """The caller's own profile and their account."""
    return await service.member_info(ctx)


@router.post("/member/list")
async def member_list(ctx: Context, req: MemberListRequest) -> MemberListResponse:
    """List the members of the current account, a page at a time."""
    return await service.list_members(ctx, req)


@router.post("/member/invite", permissions=(ACCOUNT_MANAGE,), write=True)
async def member_invite(ctx: Context, req: MemberInviteRequest) -> MemberInviteResponse:
    """Add up to 20 members to the account."""
    return await service.invite_members(ctx, req)


@router.post("/member/delete", permissions=(ACCOUNT_MANAGE,), write=True, dangerous=True)
async def member_delete(ctx: Context, req: MemberDeleteRequest) -> None:
    """Remove a member: roles, teams and app keys go with them."""
    await service.delete_member(ctx, req)


@router.post("/member/role/grant", permissions=(ACCOUNT_MANAGE,), write=True)
async def member_role_grant(ctx: Context, req: MemberRoleChangeRequest) -> None:
    """Add roles to a member."""
    await service.grant_roles(ctx, req)


@router.post("/member/role/revoke", permissions=(ACCOUNT_MANAGE,), write=True)
async def member_role_revoke(ctx: Context, req: MemberRoleChangeRequest) -> None:
    """Remove roles from a member."""
    await service.revoke_roles(ctx, req)


@router.post("/member/role/update", permissions=(ACCOUNT_MANAGE,), write=True)
async def member_role_update(ctx: Context, req: MemberRoleUpdateRequest) -> None:
    """Replace a member's roles."""
    await service.update_roles(ctx, req)


@router.post("/person/infos")
async def person_infos(ctx: Context, req: PersonInfosRequest) -> PersonInfosResponse:
    """Profiles of up to 100 persons of the account; other ids are left out."""
    return await service.person_infos(ctx, req)
