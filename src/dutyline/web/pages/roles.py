"""The Roles pages: the account's roles, built-in and custom, and what each lets its holders
do, in words (from the permission catalog /role/permission/list answers); for those who
manage the account, creating and editing a custom role by ticking permissions, enabling,
disabling and deleting it, and granting it to members or revoking it from them. Every change
goes through the role service the API calls, which checks the permission, keeps everyone
within their own rights (role.service.require_within_rights, require_over) and notes the
audit entry; its refusals are shown with the permissions they name in words."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors, permissions
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.platform.member import service as members
from dutyline.platform.role import service as roles
from dutyline.platform.role.grants import service as grants
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import PAGE_SIZE, Paging, page_number, path_id, require_manager
from dutyline.web.page import Pages

pages = Pages()

ROLES = "/console/roles"
# Owners and admins hold every permission, those the catalog gains later included.
_EVERYTHING = ("owner", "admin")
# Members offered on a role's page to grant it to, at most (a search finds the others).
_CANDIDATES = 20


def say(ctx: ConsoleContext, message: str, **fields: Any) -> str:
    """A message of the console's catalog in the reader's language (flash messages)."""
    return ctx.runtime.translator.render(ctx.locale, message, fields)


def in_words(ctx: ConsoleContext, exc: errors.ApiError) -> errors.ApiError:
    """The service's refusal with the permissions it names (`incident_manage, ...`) given
    by what they let one do, in the reader's language."""
    names = exc.fields.get("names")
    if not isinstance(exc, errors.AccessDenied) or not isinstance(names, str):
        return exc
    described = [ctx.runtime.translator.gettext(ctx.locale, permissions.BY_NAME[n].description)
                 if n in permissions.BY_NAME else n for n in names.split(", ")]
    return type(exc)(exc.message, **{**exc.fields, "names": "; ".join(described)})


def _not_allowed(ctx: ConsoleContext, exc: errors.ApiError) -> None:
    """A refusal for want of managing the account at all is the "Not allowed" page (the
    service has recorded it); one that names what the manager lacks is shown on the form."""
    if isinstance(exc, errors.AccessDenied) and not ctx.actor.has(ACCOUNT_MANAGE):
        raise exc


def _kinds(conn: Connection, ctx: ConsoleContext) -> dict[int, str]:
    """role id -> its built-in kind (owner, admin, member), for the account's built-ins."""
    return {roles.builtin_role_id_sync(conn, ctx.actor, builtin=kind): kind
            for kind, *_ in permissions.BUILTIN_ROLES}


def abilities(permission_ids: list[int], kind: str) -> list[str]:
    """The permission names a role grants, implied ones included, in catalog order; none
    listed for a role that holds everything (the page says so in one sentence)."""
    if kind in _EVERYTHING:
        return []
    granted = permissions.expand(set(permission_ids))
    return [p.name for p in permissions.CATALOG if p.name in granted]


# --- the list ---------------------------------------------------------------------------


def _list_reads(conn: Connection, ctx: ConsoleContext) -> dict[str, Any]:
    items = roles.list_roles_sync(conn, ctx.actor, asc=True)
    kinds = _kinds(conn, ctx)
    holders = {r.role_id: members.list_members_sync(conn, ctx.actor, role_id=r.role_id,
                                                    offset=0, limit=1)[0] for r in items}
    order = {kind: i for i, (kind, *_) in enumerate(permissions.BUILTIN_ROLES)}
    items.sort(key=lambda r: (order.get(kinds.get(r.role_id, ""), len(order)),
                              r.role_name.lower()))
    return {"responder_missing": roles.responder_role_id_sync(conn, ctx.actor) is None,
            "rows": [{"role": r, "kind": kinds.get(r.role_id, ""), "holders": holders[r.role_id],
                      "abilities": abilities(r.permission_ids, kinds.get(r.role_id, ""))}
                     for r in items]}


@pages.get(ROLES)
async def role_list(ctx: ConsoleContext) -> Response:
    context = await ctx.runtime.db.run_sync(lambda conn: _list_reads(conn, ctx), write=False)
    return ctx.render("roles/list.html", can_manage=ctx.actor.has(ACCOUNT_MANAGE), **context)


# --- creating and editing ---------------------------------------------------------------


def _catalog(conn: Connection, ctx: ConsoleContext) -> list[Any]:
    return roles.list_permissions_sync(conn, ctx.actor)


async def _form_context(ctx: ConsoleContext, role: Any) -> dict[str, Any]:
    catalog = await ctx.runtime.db.run_sync(lambda conn: _catalog(conn, ctx), write=False)
    return {"role": role, "catalog": catalog,
            "selected": set(role.permission_ids) if role else set()}


async def _role(ctx: ConsoleContext) -> Any:
    role_id = path_id(ctx, "role_id", "role")
    return await ctx.runtime.db.run_sync(
        lambda conn: roles.role_info_sync(conn, ctx.actor, role_id=role_id), write=False)


async def _save(ctx: ConsoleContext, role: Any) -> Response:
    """The form's role, created (`role` None) or updated; the form again on an error."""
    context = await _form_context(ctx, role)
    form = await ctx.form_lists()
    context["selected"] = {int(p) for p in form.get("permission_ids", [])
                           if p.isdigit() and len(p) < 10}
    try:
        changes = forms.decode(form, roles.RoleUpsertRequest, shown=("permission_ids",),
                               given={"role_id": role.role_id if role else 0})
        async with ctx.write() as conn:
            role_id = await roles.upsert_role(
                conn, ctx.actor, role_name=changes.role_name, role_id=changes.role_id,
                description=changes.description, permission_ids=changes.permission_ids)
    except errors.ApiError as exc:
        _not_allowed(ctx, exc)
        return ctx.form_failed("roles/form.html", in_words(ctx, forms.on_form(exc, form=form)),
                               **context)
    ctx.flash(say(ctx, "The role {name} is saved.", name=changes.role_name.strip()))
    return ctx.redirect(f"{ROLES}/{role_id}")


@pages.get(ROLES + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    return ctx.render("roles/form.html", **await _form_context(ctx, None))


@pages.post(ROLES + "/new")
async def create(ctx: ConsoleContext) -> Response:
    return await _save(ctx, None)


@pages.get(ROLES + "/{role_id}/edit")
async def edit_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    role = await _role(ctx)
    if not role.editable:
        raise errors.BadRequest("The built-in role cannot be changed")
    return ctx.render("roles/form.html", **await _form_context(ctx, role))


@pages.post(ROLES + "/{role_id}/edit")
async def edit(ctx: ConsoleContext) -> Response:
    return await _save(ctx, await _role(ctx))


# --- one role: what it does, who holds it -----------------------------------------------


def _role_reads(conn: Connection, ctx: ConsoleContext, role_id: int, number: int,
                query: str) -> dict[str, Any]:
    actor = ctx.actor
    role = roles.role_info_sync(conn, actor, role_id=role_id)
    kind = _kinds(conn, ctx).get(role.role_id, "")
    total, holders = members.list_members_sync(
        conn, actor, role_id=role.role_id, orderby="created_at", asc=True,
        offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    candidates: list[Any] = []
    if actor.has(ACCOUNT_MANAGE) and kind != "owner":
        _, found = members.list_members_sync(conn, actor, query=query, orderby="created_at",
                                             asc=True, offset=0, limit=_CANDIDATES * 2)
        candidates = [m for m in found if role.role_id not in m.account_role_ids
                      and m.status != "deleted"][:_CANDIDATES]
    return {"role": role, "kind": kind, "abilities": abilities(role.permission_ids, kind),
            "holders": holders, "paging": Paging(number, total, PAGE_SIZE),
            "candidates": candidates, "query": query,
            "can_manage": actor.has(ACCOUNT_MANAGE)}


async def _role_context(ctx: ConsoleContext) -> dict[str, Any]:
    role_id = path_id(ctx, "role_id", "role")
    number = page_number(ctx)
    typed = ctx.request.query_params.get("q", "").strip()
    query = forms.decode_known({"query": [typed]}, members.MemberSearch).query
    return await ctx.runtime.db.run_sync(
        lambda conn: _role_reads(conn, ctx, role_id, number, query), write=False)


@pages.get(ROLES + "/{role_id}")
async def role_page(ctx: ConsoleContext) -> Response:
    return ctx.render("roles/role.html", **await _role_context(ctx))


async def _change(ctx: ConsoleContext, done: str, change: Any,
                  record: type[Any] | None = None) -> Response:
    """One change of the role's page (`change(conn, form)`); the page again, with the
    service's refusal in words, when it is refused."""
    context = await _role_context(ctx)
    role = context["role"]
    form = await ctx.form_lists()
    try:
        decoded = (forms.decode(form, record, shown=("member_ids",),
                                given={"role_id": role.role_id}) if record else None)
        async with ctx.write() as conn:
            await change(conn, role, decoded)
    except errors.ApiError as exc:
        _not_allowed(ctx, exc)
        return ctx.form_failed("roles/role.html", in_words(ctx, forms.on_form(exc, form=form)),
                               **context)
    ctx.flash(say(ctx, done, name=role.role_name))
    return ctx.redirect(f"{ROLES}/{role.role_id}")


@pages.post(ROLES + "/{role_id}/grant")
async def grant(ctx: ConsoleContext) -> Response:
    async def change(conn: Any, role: Any, asked: roles.RoleGrantRequest) -> None:
        await grants.grant_role(conn, ctx.actor, role_id=role.role_id,
                                member_ids=asked.member_ids)
    return await _change(ctx, "The role {name} is granted.", change, roles.RoleGrantRequest)


@pages.post(ROLES + "/{role_id}/revoke")
async def revoke(ctx: ConsoleContext) -> Response:
    async def change(conn: Any, role: Any, asked: roles.RoleGrantRequest) -> None:
        await grants.revoke_role(conn, ctx.actor, role_id=role.role_id,
                                 member_ids=asked.member_ids)
    return await _change(ctx, "The role {name} is revoked.", change, roles.RoleGrantRequest)


@pages.post(ROLES + "/{role_id}/enable")
async def enable(ctx: ConsoleContext) -> Response:
    async def change(conn: Any, role: Any, _: None) -> None:
        await roles.enable_role(conn, ctx.actor, role_id=role.role_id)
    return await _change(ctx, "The role {name} is enabled: its holders have its "
                              "permissions again.", change)


@pages.post(ROLES + "/{role_id}/disable")
async def disable(ctx: ConsoleContext) -> Response:
    async def change(conn: Any, role: Any, _: None) -> None:
        await roles.disable_role(conn, ctx.actor, role_id=role.role_id)
    return await _change(ctx, "The role {name} is disabled: it stays with its holders but "
                              "grants nothing.", change)


# --- deleting ---------------------------------------------------------------------------


@pages.get(ROLES + "/{role_id}/delete")
async def delete_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    return ctx.render("roles/delete.html", role=await _role(ctx))


@pages.post(ROLES + "/{role_id}/delete")
async def delete(ctx: ConsoleContext) -> Response:
    role = await _role(ctx)
    try:
        async with ctx.write() as conn:
            await roles.delete_role(conn, ctx.actor, role_id=role.role_id)
    except errors.ApiError as exc:
        _not_allowed(ctx, exc)
        return ctx.form_failed("roles/delete.html", in_words(ctx, exc), role=role)
    ctx.flash(say(ctx, "The role {name} is deleted.", name=role.role_name))
    return ctx.redirect(ROLES)
