"""The Teams pages: the account's teams and each team's members (what /team/list and
/team/info show, to every member), and, for those who manage the account, creating,
editing and deleting a team through the team service the API calls."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import (
    PAGE_SIZE,
    Paging,
    all_members,
    page_number,
    path_id,
    require_manager,
    search_text,
)
from dutyline.web.page import Pages

pages = Pages()

TEAMS = "/console/teams"
# /person/infos answers at most this many ids at once.
_INFOS_BATCH = 100


@pages.get(TEAMS)
async def team_list(ctx: ConsoleContext) -> Response:
    query, number = search_text(ctx, teams.TeamSearch), page_number(ctx)
    actor = ctx.actor
    # The read /team/list does, as one unit on the database (api/operation.py).
    total, items = await ctx.runtime.db.run_sync(lambda conn: teams.list_teams_sync(
        conn, actor, query=query, orderby="team_name", asc=True,
        offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE), write=False)
    return ctx.render("teams/list.html", teams=items, query=query,
                      paging=Paging(number, total, PAGE_SIZE),
                      can_manage=ctx.actor.has(ACCOUNT_MANAGE))


# --- creating and editing ---------------------------------------------------------------


async def _form_context(ctx: ConsoleContext, team: Any) -> dict[str, Any]:
    async with ctx.read() as conn:
        people = await all_members(conn, ctx)
    return {"team": team, "people": people,
            "selected": set(team.person_ids) if team else set()}


async def _save(ctx: ConsoleContext, team: Any) -> Response:
    """The form's team, created (`team` None) or updated; the form again on an error."""
    context = await _form_context(ctx, team)
    form = await ctx.form_lists()
    # The boxes ticked, ticked again when the form comes back with an error.
    context["selected"] = {int(p) for p in form.get("person_ids", []) if p.isdigit()}
    try:
        changes = forms.decode(form, teams.TeamChanges, shown=("person_ids",),
                               given={"team_id": team.team_id if team else 0})
        async with ctx.write() as conn:
            team_id = await teams.upsert_team(conn, ctx.actor, team=changes)
    except errors.ApiError as exc:
        return ctx.form_failed("teams/form.html", forms.on_form(exc, form=form), **context)
    ctx.flash(f"The team {changes.team_name.strip()} is saved.")
    return ctx.redirect(f"{TEAMS}/{team_id}")


@pages.get(TEAMS + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    return ctx.render("teams/form.html", **await _form_context(ctx, None))


@pages.post(TEAMS + "/new")
async def create(ctx: ConsoleContext) -> Response:
    return await _save(ctx, None)


async def _team(conn: AsyncConnection, ctx: ConsoleContext) -> Any:
    return await teams.team_info(conn, ctx.actor, team_id=path_id(ctx, "team_id", "team"))


@pages.get(TEAMS + "/{team_id}")
async def team_page(ctx: ConsoleContext) -> Response:
    async with ctx.read() as conn:
        team = await _team(conn, ctx)
        people = []
        for start in range(0, len(team.person_ids), _INFOS_BATCH):
            people += await members.person_infos(
                conn, ctx.actor, person_ids=team.person_ids[start:start + _INFOS_BATCH])
    return ctx.render("teams/team.html", team=team, can_manage=ctx.actor.has(ACCOUNT_MANAGE),
                      people=sorted(people, key=lambda p: p.person_name.lower()))


@pages.get(TEAMS + "/{team_id}/edit")
async def edit_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    async with ctx.read() as conn:
        team = await _team(conn, ctx)
    return ctx.render("teams/form.html", **await _form_context(ctx, team))


@pages.post(TEAMS + "/{team_id}/edit")
async def edit(ctx: ConsoleContext) -> Response:
    async with ctx.read() as conn:
        team = await _team(conn, ctx)
    return await _save(ctx, team)


# --- deleting ---------------------------------------------------------------------------


@pages.get(TEAMS + "/{team_id}/delete")
async def delete_form(ctx: ConsoleContext) -> Response:
    require_manager(ctx)
    async with ctx.read() as conn:
        team = await _team(conn, ctx)
    return ctx.render("teams/delete.html", team=team)


@pages.post(TEAMS + "/{team_id}/delete")
async def delete(ctx: ConsoleContext) -> Response:
    async with ctx.read() as conn:
        team = await _team(conn, ctx)
    try:
        async with ctx.write() as conn:
            await teams.delete_team(conn, ctx.actor, team_id=team.team_id)
    except errors.ApiError as exc:
        return ctx.form_failed("teams/delete.html", exc, team=team)
    ctx.flash(f"The team {team.team_name} is deleted.")
    return ctx.redirect(TEAMS)
