"""The Members pages: the account's members (what /member/list shows, to every member),
one member's page, and, for those who manage the account, inviting a member by e-mail,
changing their roles and removing them (of a member whose every right they hold: only the
Owner acts on the Owner). Every change goes through the member service the API calls, which
checks the permission and notes the audit entry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.platform.member import service as members
from dutyline.platform.role import service as roles
from dutyline.web import forms
from dutyline.web import mail as link_mail
from dutyline.web import service as signin
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import (
    PAGE_SIZE,
    Paging,
    page_number,
    path_id,
    require_manager,
    search_text,
    team_names_by_person,
)
from dutyline.web.page import Pages
from dutyline.web.pages import roles as role_pages

pages = Pages()

MEMBERS = "/console/members"

# The invite form's name for the record's role list (one role is chosen), and the path the
# invite service names its batch's fields by (`members[0].email`; `members.email` for all).
_INVITE_NAMES = {"role_ids": "role_id"}
_BATCH = ("members[0].", "members.")
# The role the invite form offers first: whoever is invited is paged, and must be able to
# answer (acknowledge, resolve, comment...) in the channels they see. The account's
# Responder role (role.service.responder_role), or, until it has one, this choice, which
# makes it with the invitation. The API's default when no role is named stays the
# contract's read-only Member.
NEW_RESPONDER = "responder"


# --- the list ---------------------------------------------------------------------------


def _member_list(conn: Connection, ctx: ConsoleContext, query: str,
                 number: int) -> tuple[int, list[Any], dict[int, str], dict[int, list[str]],
                                       set[int]]:
    """The list page's reads: the page of members, role and team names, who signed up."""
    total, items = members.list_members_sync(
        conn, ctx.actor, query=query, orderby="created_at", asc=True,
        offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    role_names = {r.role_id: r.role_name for r in roles.list_roles_sync(conn, ctx.actor)}
    team_names = team_names_by_person(conn, ctx)
    signed_up = signin.have_passwords_sync(conn, [m.member_id for m in items])
    return total, items, role_names, team_names, signed_up


@pages.get(MEMBERS)
async def member_list(ctx: ConsoleContext) -> Response:
    query, number = search_text(ctx, members.MemberSearch), page_number(ctx)
    total, items, role_names, team_names, signed_up = await ctx.runtime.db.run_sync(
        lambda conn: _member_list(conn, ctx, query, number), write=False)
    return ctx.render(
        "members/list.html", query=query, paging=Paging(number, total, PAGE_SIZE),
        can_manage=ctx.actor.has(ACCOUNT_MANAGE),
        rows=[{"item": m, "roles": [role_names[r] for r in m.account_role_ids
                                    if r in role_names],
               "teams": team_names.get(m.member_id, []),
               "signed_up": m.member_id in signed_up} for m in items])


# --- inviting ---------------------------------------------------------------------------


def _assignable(all_roles: Sequence[Any], owner_role: int) -> list[Any]:
    return [r for r in all_roles if r.role_id != owner_role]


def _invite_roles(conn: Connection, ctx: ConsoleContext) -> tuple[list[Any], int, int | None]:
    actor = ctx.actor
    return (roles.list_roles_sync(conn, actor, asc=True),
            roles.builtin_role_id_sync(conn, actor, builtin="owner"),
            roles.responder_role_id_sync(conn, actor))


async def _invite_form_context(ctx: ConsoleContext) -> dict[str, Any]:
    all_roles, owner_role, default_role = await ctx.runtime.db.run_sync(
        lambda conn: _invite_roles(conn, ctx), write=False)
    return {"roles": _assignable(all_roles, owner_role),
            "default_role": NEW_RESPONDER if default_role is None else str(default_role),
            "responder_missing": default_role is None,
            "mails_sent": ctx.runtime.reach_gap("email") is None}


@pages.get(MEMBERS + "/new")
async def invite_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    return ctx.render("members/invite.html", **await _invite_form_context(ctx))


@pages.post(MEMBERS + "/new", template="members/invite.html")
async def invite(ctx: ConsoleContext) -> Response:
    ctx.kept.update(await _invite_form_context(ctx))
    form = await ctx.form_lists()
    make_responder = form.get("role_id") == [NEW_RESPONDER]
    new = forms.decode({k: v for k, v in form.items() if k != "role_id" or not make_responder},
                       members.NewMember, names=_INVITE_NAMES)
    if make_responder:
        # Its own unit of work, so the audit log has the role's making as such; the role
        # stays, should the invitation be refused, as the account's default from now on.
        try:
            async with ctx.write() as conn:
                responder = await roles.responder_role(conn, ctx.actor)
        except errors.AccessDenied as exc:  # what the inviter lacks, in words
            raise role_pages.in_words(ctx, exc) from None
        ctx.kept.update(await _invite_form_context(ctx))
        new = msgspec.structs.replace(new, role_ids=[responder])
    async with ctx.write() as conn:
        try:
            [added] = await members.invite_members(conn, ctx.actor, members=[new])
        except errors.AccessDenied as exc:
            raise role_pages.in_words(ctx, exc) from None
        except errors.InvalidParameter as exc:
            raise forms.on_form(exc, form=form, names=_INVITE_NAMES, prefix=_BATCH) from None
        except errors.ResourceNotFound:  # a role id not of this account
            raise errors.invalid("role_id", "is invalid") from None
        if ctx.kept["mails_sent"]:
            # The same action as the list's "Send invitation" button.
            await link_mail.invite(conn, ctx.actor, person_id=added.member_id)
    if ctx.kept["mails_sent"]:
        ctx.flash(f"{added.member_name} is added, and an invitation is on its way.")
    else:
        ctx.flash(f"{added.member_name} is added. This server sends no e-mail: the server's "
                  "shell makes their sign-in link (dutyline invite-link).")
    return ctx.redirect(f"{MEMBERS}/{added.member_id}")


# --- one member -------------------------------------------------------------------------


async def _member_context(ctx: ConsoleContext, member_id: int) -> dict[str, Any]:
    """The member page's context, its reads as one unit of database work."""
    return await ctx.runtime.db.run_sync(lambda conn: _member_reads(conn, ctx, member_id),
                                         write=False)


def _member_reads(conn: Connection, ctx: ConsoleContext, member_id: int) -> dict[str, Any]:
    item = members.member_record_sync(conn, ctx.actor, member_id=member_id)
    all_roles = roles.list_roles_sync(conn, ctx.actor, asc=True)
    owner_role = roles.builtin_role_id_sync(conn, ctx.actor, builtin="owner")
    team_names = team_names_by_person(conn, ctx, person_id=member_id)
    signed_up = bool(signin.have_passwords_sync(conn, [member_id]))
    return {
        "member": item, "is_owner": owner_role in item.account_role_ids,
        "is_self": member_id == ctx.actor.person_id,
        "role_names": [r.role_name for r in all_roles if r.role_id in item.account_role_ids],
        "roles": _assignable(all_roles, owner_role),
        "teams": team_names.get(member_id, []), "signed_up": signed_up,
        "can_manage": ctx.actor.has(ACCOUNT_MANAGE) and _outranks(conn, ctx, member_id),
        "mails_sent": ctx.runtime.reach_gap("email") is None,
    }


def _outranks(conn: Connection, ctx: ConsoleContext, member_id: int) -> bool:
    """Whether the actor may act on this member at all (they hold every right the member
    holds; only the Owner acts on the Owner): the page offers only changes the services
    would make."""
    try:
        roles.require_over_sync(conn, ctx.actor, member_ids=[member_id])
    except errors.AccessDenied:
        return False
    return True


@pages.get(MEMBERS + "/{person_id}")
async def member_page(ctx: ConsoleContext) -> Response:
    member_id = path_id(ctx, "person_id", "member")
    return ctx.render("members/member.html", **await _member_context(ctx, member_id))


# These forms name no `template` for the page layer: a member that does not exist is a
# plain 404 page; the service's refusal of the change shows the member's page again.
@pages.post(MEMBERS + "/{person_id}/roles")
async def change_roles(ctx: ConsoleContext) -> Response:
    member_id = path_id(ctx, "person_id", "member")
    form = await ctx.form_lists()
    context = await _member_context(ctx, member_id)
    try:
        wanted = list(forms.decode(form, members.RoleChoice, shown=("role_ids",),
                                   given={"member_id": member_id}).role_ids)
        async with ctx.write() as conn:
            owner_role = await roles.builtin_role_id(conn, ctx.actor, builtin="owner")
            current = (await members.member_record(conn, ctx.actor, member_id=member_id)
                       ).account_role_ids
            # The Owner role is no checkbox: it stays with whoever holds it.
            if owner_role in current and owner_role not in wanted:
                wanted.append(owner_role)
            await members.update_roles(conn, ctx.actor, member_id=member_id, role_ids=wanted)
    except errors.ApiError as exc:
        return ctx.form_failed("members/member.html",
                               role_pages.in_words(ctx, forms.on_form(exc, form=form)), **context)
    ctx.flash("The roles are saved.")
    return ctx.redirect(f"{MEMBERS}/{member_id}")


async def _member_record(ctx: ConsoleContext, member_id: int) -> Any:
    actor = ctx.actor
    return await ctx.runtime.db.run_sync(
        lambda conn: members.member_record_sync(conn, actor, member_id=member_id), write=False)


@pages.get(MEMBERS + "/{person_id}/remove")
async def remove_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    member_id = path_id(ctx, "person_id", "member")
    return ctx.render("members/remove.html", member=await _member_record(ctx, member_id))


@pages.post(MEMBERS + "/{person_id}/remove")
async def remove(ctx: ConsoleContext) -> Response:
    member_id = path_id(ctx, "person_id", "member")
    item = await _member_record(ctx, member_id)
    try:
        async with ctx.write() as conn:
            await members.delete_member(conn, ctx.actor, member_id=member_id)
    except errors.ApiError as exc:
        return ctx.form_failed("members/remove.html", exc, member=item)
    ctx.flash(f"{item.member_name} is removed; they are signed out of the console.")
    return ctx.redirect(MEMBERS)
