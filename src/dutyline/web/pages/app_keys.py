"""The App keys pages: a member's keys, by their last characters and last use (those who
manage the account see every member's, as /app-key/list lets them read any member's);
issuing a key, shown once on the page that answers the form, and revoking one. Through the
app-key service the API calls: anyone issues and revokes their own keys; another member's
needs account management and every right that member holds (role.service.require_over),
and its refusals name the permissions in words."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.platform.app_key import service as app_keys
from dutyline.platform.member import service as members
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import PAGE_SIZE, Paging, all_members, page_number, path_id
from dutyline.web.page import Pages
from dutyline.web.pages.roles import in_words, say

pages = Pages()

KEYS = "/console/app-keys"


def _list_reads(conn: Connection, ctx: ConsoleContext, number: int) -> dict[str, Any]:
    actor = ctx.actor
    if actor.has(ACCOUNT_MANAGE):
        total, items = app_keys.list_account_keys_sync(
            conn, actor, offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    else:
        everything = app_keys.list_keys_sync(conn, actor)
        total = len(everything)
        items = everything[(number - 1) * PAGE_SIZE:number * PAGE_SIZE]
    names = members.member_names_sync(conn, actor, [k.person_id for k in items])
    return {"keys": items, "paging": Paging(number, total, PAGE_SIZE),
            "names": {k: v[0] for k, v in names.items()},
            "everyone": actor.has(ACCOUNT_MANAGE)}


@pages.get(KEYS)
async def key_list(ctx: ConsoleContext) -> Response:
    number = page_number(ctx)
    context = await ctx.runtime.db.run_sync(lambda conn: _list_reads(conn, ctx, number),
                                            write=False)
    return ctx.render("app_keys/list.html", **context)


# --- issuing ----------------------------------------------------------------------------


async def _form_context(ctx: ConsoleContext) -> dict[str, Any]:
    """Those who manage the account may issue a key for another member."""
    people: list[Any] = []
    if ctx.actor.has(ACCOUNT_MANAGE):
        async with ctx.read() as conn:
            people = await all_members(conn, ctx)
    return {"people": people}


@pages.get(KEYS + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    return ctx.render("app_keys/form.html", **await _form_context(ctx))


@pages.post(KEYS + "/new")
async def create(ctx: ConsoleContext) -> Response:
    context = await _form_context(ctx)
    form = await ctx.form_lists()
    try:
        asked = forms.decode(form, app_keys.AppKeyCreateRequest)
        async with ctx.write() as conn:
            issued = await app_keys.create_key(conn, ctx.actor, key_name=asked.key_name,
                                               person_id=asked.person_id)
    except errors.ApiError as exc:
        failed = in_words(ctx, forms.on_form(exc, form=form))
        if isinstance(failed, errors.ResourceNotFound):  # a member not of this account
            failed = errors.invalid("person_id", "is not a member of this account")
        return ctx.form_failed("app_keys/form.html", failed, **context)
    owner = next((p.member_name for p in context["people"]
                  if p.member_id == issued.person_id), ctx.actor.person_name)
    # The key itself, this once: the answer of the form, never a page one can come back to.
    return ctx.render("app_keys/created.html", status=201, issued=issued, owner=owner)


# --- revoking ---------------------------------------------------------------------------


async def _key_and_owner(ctx: ConsoleContext) -> tuple[Any, str]:
    key_id = path_id(ctx, "key_id", "app key")

    def read(conn: Connection) -> tuple[Any, str]:
        key = app_keys.key_info_sync(conn, ctx.actor, key_id=key_id)
        names = members.member_names_sync(conn, ctx.actor, [key.person_id])
        return key, names.get(key.person_id, ("", ""))[0]

    return await ctx.runtime.db.run_sync(read, write=False)


@pages.get(KEYS + "/{key_id}/revoke")
async def revoke_form(ctx: ConsoleContext) -> Response:
    key, owner = await _key_and_owner(ctx)
    return ctx.render("app_keys/revoke.html", key=key, owner=owner)


@pages.post(KEYS + "/{key_id}/revoke")
async def revoke(ctx: ConsoleContext) -> Response:
    key, owner = await _key_and_owner(ctx)
    try:
        async with ctx.write() as conn:
            await app_keys.delete_key(conn, ctx.actor, key_id=key.key_id)
    except errors.ApiError as exc:
        return ctx.form_failed("app_keys/revoke.html", in_words(ctx, exc), key=key, owner=owner)
    ctx.flash(say(ctx, "The key {name} is revoked: it no longer works.", name=key.key_name))
    return ctx.redirect(KEYS)
