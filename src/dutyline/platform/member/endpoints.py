"""/member/* and /person/infos operations."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Empty, Router
from dutyline.api.types import SaveWarnings
from dutyline.platform.member import service
from dutyline.platform.member.schemas import (
    MemberDeleteRequest,
    MemberInfoResponse,
    MemberInviteRequest,
    MemberInviteResponse,
    MemberListRequest,
    MemberListResponse,
    MemberResetInfoRequest,
    MemberRoleChangeRequest,
    MemberRoleUpdateRequest,
    PersonInfosRequest,
    PersonInfosResponse,
)

router = Router("Members")


@router.post("/member/info")
def member_info(conn: Connection, ctx: Context, req: Empty) -> MemberInfoResponse:
    """The caller's own profile and their account."""
    return service.member_info_sync(conn, ctx.actor)


@router.post("/member/list")
def member_list(conn: Connection, ctx: Context, req: MemberListRequest) -> MemberListResponse:
    """List the members of the current account, a page at a time."""
    total, items = service.list_members_sync(
        conn, ctx.actor, role_id=req.role_id, query=req.query, orderby=req.orderby,
        asc=req.asc, offset=req.offset, limit=req.limit)
    return MemberListResponse(p=req.p, limit=req.limit, total=total, items=items)


@router.post("/member/invite", service=service.invite_members, write=True)
async def member_invite(ctx: Context, req: MemberInviteRequest) -> MemberInviteResponse:
    """Add up to 20 members to the account."""
    added = await service.invite_members(ctx.conn, ctx.actor, members=req.members)
    return MemberInviteResponse(items=added)


@router.post("/member/delete", service=service.delete_member, write=True)
async def member_delete(ctx: Context, req: MemberDeleteRequest) -> None:
    """Remove a member: roles, teams and app keys go with them."""
    await service.delete_member(
        ctx.conn, ctx.actor, member_id=req.member_id, member_name=req.member_name,
        email=req.email, phone=req.phone, country_code=req.country_code, ref_id=req.ref_id)


@router.post("/member/role/grant", service=service.grant_roles, write=True)
async def member_role_grant(ctx: Context, req: MemberRoleChangeRequest) -> None:
    """Add roles to a member."""
    await service.grant_roles(ctx.conn, ctx.actor, member_id=req.member_id,
                              role_ids=req.role_ids)


@router.post("/member/role/revoke", service=service.revoke_roles, write=True)
async def member_role_revoke(ctx: Context, req: MemberRoleChangeRequest) -> None:
    """Remove roles from a member."""
    await service.revoke_roles(ctx.conn, ctx.actor, member_id=req.member_id,
                               role_ids=req.role_ids)


@router.post("/member/role/update", service=service.update_roles, write=True)
async def member_role_update(ctx: Context, req: MemberRoleUpdateRequest) -> None:
    """Replace a member's roles."""
    await service.update_roles(ctx.conn, ctx.actor, member_id=req.member_id,
                               role_ids=req.role_ids)


@router.post("/member/info/reset", write=True)
async def member_info_reset(ctx: Context, req: MemberResetInfoRequest) -> SaveWarnings:
    """Update a member's profile and contacts (e-mail, phone, country code...): one's own,
    or another member's with account management. Fields left out are left unchanged;
    `warnings` names a contact the server's settings cannot page (a phone without SMS and
    voice configured, an e-mail address without SMTP)."""
    # The request is the ProfileChanges, and whose.
    await service.reset_info(ctx.conn, ctx.actor, member_id=req.member_id, changes=req)
    return SaveWarnings(warnings=service.contact_warnings(
        ctx.runtime.reach_gap, email=req.email, phone=req.phone))


@router.post("/person/infos")
def person_infos(conn: Connection, ctx: Context, req: PersonInfosRequest) -> PersonInfosResponse:
    """Profiles of up to 100 persons of the account; other ids are left out."""
    return PersonInfosResponse(items=service.person_infos_sync(
        conn, ctx.actor, person_ids=req.person_ids))
