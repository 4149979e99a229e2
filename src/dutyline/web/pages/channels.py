"""The Channels pages: the channels the reader sees (what /channel/list shows) with their open
incidents and owning teams; a channel's page with its settings, integrations, escalation
rules and recent incidents; and, for those who manage channels, creating, editing, archiving
(/channel/disable), enabling again and deleting one, through the channel service the API
calls. Each service checks the permission itself; the pages offer a control only to those
who may use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.permissions import (
    CHANNEL_MANAGE,
    INTEGRATION_MANAGE,
    INTEGRATION_VIEW,
)
from dutyline.channel import service as channels
from dutyline.channel.integration import service as integrations
from dutyline.dispatch import service as escalation
from dutyline.incident.service import query as incidents
from dutyline.platform.team import service as teams
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import (
    MAX_GATHERED_PAGES,
    PAGE_SIZE,
    SERVICE_PAGE,
    Paging,
    page_number,
    path_id,
    search_text,
)
from dutyline.web.page import Pages

pages = Pages()

CHANNELS = "/console/channels"

# The orders the list offers: (label, /channel/list's orderby, ascending).
SORTS: dict[str, tuple[str, str, bool]] = {
    "name": ("Name", "channel_name", True),
    "recent": ("Latest incident", "last_incident_at", False),
    "newest": ("Newest", "created_at", False),
    "updated": ("Recently changed", "updated_at", False),
}
DEFAULT_SORT = "name"

# When the channel closes its incidents by itself (ChannelChanges.auto_resolve_timeout, in
# seconds): the choices of the form, in words.
AUTO_RESOLVE: tuple[tuple[int, str], ...] = (
    (0, "Never"),
    (30 * 60, "After 30 minutes"),
    (3600, "After 1 hour"),
    (4 * 3600, "After 4 hours"),
    (12 * 3600, "After 12 hours"),
    (86_400, "After 1 day"),
    (3 * 86_400, "After 3 days"),
    (7 * 86_400, "After 7 days"),
    (30 * 86_400, "After 30 days"),
)

RECENT_INCIDENTS = 10
# The recent incidents of a channel are read within /incident/list's widest window.
RECENT_WINDOW_S = incidents.MAX_WINDOW_S


@dataclass(frozen=True)
class Row:
    """A channel of the list, with what the page shows beside it."""

    channel: Any
    open_incidents: int
    team_names: list[str]


def _sort(ctx: ConsoleContext) -> str:
    asked = ctx.request.query_params.get("sort", DEFAULT_SORT)
    return asked if asked in SORTS else DEFAULT_SORT


def _can_manage(ctx: ConsoleContext) -> bool:
    return ctx.actor.has(CHANNEL_MANAGE)


def _require_manage(ctx: ConsoleContext) -> None:
    """The forms of changes only channel managers may make: a page saying so for others (the
    service refuses the change itself, whoever sends it)."""
    if not _can_manage(ctx):
        raise errors.AccessDenied()


@pages.get(CHANNELS)
async def channel_list(ctx: ConsoleContext) -> Response:
    query, number, sort = search_text(ctx, channels.ChannelSearch), page_number(ctx), _sort(ctx)
    _, orderby, asc = SORTS[sort]
    actor = ctx.actor

    def read(conn: Connection) -> tuple[int, list[Row]]:
        # The read /channel/list does, then the counts and names its rows show.
        total, items = channels.list_channels_sync(
            conn, actor, q=channels.ChannelQuery(orderby=orderby, asc=asc, query=query),
            offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE)
        counts = (incidents.open_counts_by_channel_sync(
            conn, actor, channel_ids=[c.channel_id for c in items])
            if items else {})
        managing = teams.team_names_sync(
            conn, actor, (t for c in items for t in c.managing_team_ids or ()))
        rows = [Row(c, counts.get(c.channel_id, 0),
                    [n for n in [c.team_name, *(managing.get(t, "") for t in
                                               c.managing_team_ids or ())] if n])
                for c in items]
        return total, rows

    total, rows = await ctx.runtime.db.run_sync(read, write=False)
    return ctx.render("channels/list.html", rows=rows, query=query, sort=sort, sorts=SORTS,
                      default_sort=DEFAULT_SORT, paging=Paging(number, total, PAGE_SIZE),
                      can_manage=_can_manage(ctx))


# --- creating and editing ---------------------------------------------------------------


def _all_teams(conn: Connection, ctx: ConsoleContext) -> list[Any]:
    """The account's teams by name, for the owning team's choices (bounded)."""
    found: list[Any] = []
    for page in range(MAX_GATHERED_PAGES):
        total, items = teams.list_teams_sync(conn, ctx.actor, orderby="team_name", asc=True,
                                             offset=page * SERVICE_PAGE, limit=SERVICE_PAGE)
        found += items
        if len(found) >= total or not items:
            break
    return found


async def _form_context(ctx: ConsoleContext, channel: Any) -> dict[str, Any]:
    async with ctx.read() as conn:
        all_teams = await conn.run_sync(lambda sync: _all_teams(sync, ctx))
    timeouts = list(AUTO_RESOLVE)
    current = channel.auto_resolve_timeout if channel else 0
    if current and current not in dict(timeouts):
        timeouts.append((current, ""))  # a value set through the API stays choosable
    return {"channel": channel, "teams": all_teams, "timeouts": timeouts,
            "managing": set(channel.managing_team_ids or ()) if channel else set()}


async def _save(ctx: ConsoleContext, channel: Any) -> Response:
    """The form's channel, created (`channel` None) or updated; the form again on an error."""
    context = await _form_context(ctx, channel)
    form = await ctx.form_lists()
    context["managing"] = {int(t) for t in form.get("managing_team_ids", []) if t.isdigit()}
    try:
        changes = forms.decode(form, channels.ChannelChanges,
                               shown=("managing_team_ids", "is_private"))
        async with ctx.write() as conn:
            if channel is None:
                created = await channels.create_channel(conn, ctx.actor, channel=changes)
                channel_id = created.channel_id
            else:
                channel_id = channel.channel_id
                await channels.update_channel(conn, ctx.actor, channel_id=channel_id,
                                              changes=changes)
    except errors.ApiError as exc:
        return ctx.form_failed("channels/form.html", forms.on_form(exc, form=form), **context)
    ctx.flash(f"The channel {(changes.channel_name or '').strip()} is saved.")
    return ctx.redirect(f"{CHANNELS}/{channel_id}")


@pages.get(CHANNELS + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    return ctx.render("channels/form.html", **await _form_context(ctx, None))


@pages.post(CHANNELS + "/new")
async def create(ctx: ConsoleContext) -> Response:
    return await _save(ctx, None)


async def _channel(ctx: ConsoleContext) -> Any:
    """The live channel of the path as /channel/info reads it (a deleted one is not found:
    only its page still explains it)."""
    channel_id = path_id(ctx, "channel_id", "channel")
    async with ctx.read() as conn:
        found = await conn.run_sync(lambda sync: channels.channel_info_sync(
            sync, ctx.actor, channel_id=channel_id))
    if found.status == "deleted":
        raise errors.not_found("channel", channel_id)
    return found


@pages.get(CHANNELS + "/{channel_id}")
async def channel_page(ctx: ConsoleContext) -> Response:
    channel_id = path_id(ctx, "channel_id", "channel")
    actor, deps = ctx.actor, ctx.runtime.deps
    now = actor.now_s

    def read(conn: Connection) -> dict[str, Any]:
        """Everything the page shows, in one read: the channel as /channel/info reads it
        (a deleted one too, which its page explains), then what belongs to it."""
        channel = channels.channel_info_sync(conn, actor, channel_id=channel_id)
        live = channel.status != "deleted"
        found: dict[str, Any] = {"channel": channel, "live": live, "integrations": None,
                                 "rules": None}
        ids = [channel.team_id or 0, *(channel.managing_team_ids or ())]
        names = teams.team_names_sync(conn, actor, ids)
        found["owner_team"] = names.get(channel.team_id or 0, "")
        found["managing_teams"] = [names[t] for t in channel.managing_team_ids or ()
                                   if t in names]
        if live and actor.has(INTEGRATION_VIEW):
            found["integrations"] = integrations.list_integrations_sync(
                conn, actor, channel_id=channel_id, offset=0, limit=SERVICE_PAGE)
        if live:
            found["rules"] = escalation.list_rules_sync(conn, actor, channel_id=channel_id)
        found["recent"] = incidents.list_incidents_sync(
            conn, actor, start_time=now + 60 - RECENT_WINDOW_S, end_time=now + 60, deps=deps,
            channel_ids=[channel_id], limit=RECENT_INCIDENTS, count=False).items
        found["open_incidents"] = incidents.open_counts_by_channel_sync(
            conn, actor, channel_ids=[channel_id]).get(channel_id, 0)
        return found

    async with ctx.read() as conn:
        found = await conn.run_sync(read)
    live, timeout = found["live"], found["channel"].auto_resolve_timeout or 0
    return ctx.render(
        "channels/channel.html", can_manage=live and _can_manage(ctx),
        can_add_integration=live and actor.has(INTEGRATION_MANAGE),
        timeout_words=dict(AUTO_RESOLVE).get(timeout, ""), **found)


@pages.get(CHANNELS + "/{channel_id}/edit")
async def edit_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    return ctx.render("channels/form.html", **await _form_context(ctx, await _channel(ctx)))


@pages.post(CHANNELS + "/{channel_id}/edit")
async def edit(ctx: ConsoleContext) -> Response:
    return await _save(ctx, await _channel(ctx))


# --- archiving, enabling, deleting ------------------------------------------------------


async def _set_status(ctx: ConsoleContext, enable: bool) -> Response:
    channel = await _channel(ctx)
    async with ctx.write() as conn:
        if enable:
            await channels.enable_channel(conn, ctx.actor, channel_id=channel.channel_id)
        else:
            await channels.disable_channel(conn, ctx.actor, channel_id=channel.channel_id)
    ctx.flash(f"The channel {channel.channel_name} is enabled." if enable else
              f"The channel {channel.channel_name} is archived: its integrations refuse alerts "
              "until it is enabled again.")
    return ctx.redirect(f"{CHANNELS}/{channel.channel_id}")


@pages.post(CHANNELS + "/{channel_id}/disable")
async def disable(ctx: ConsoleContext) -> Response:
    return await _set_status(ctx, enable=False)


@pages.post(CHANNELS + "/{channel_id}/enable")
async def enable(ctx: ConsoleContext) -> Response:
    return await _set_status(ctx, enable=True)


@pages.get(CHANNELS + "/{channel_id}/delete")
async def delete_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    return ctx.render("channels/delete.html", channel=await _channel(ctx))


@pages.post(CHANNELS + "/{channel_id}/delete")
async def delete(ctx: ConsoleContext) -> Response:
    channel = await _channel(ctx)
    try:
        async with ctx.write() as conn:
            await channels.delete_channel(conn, ctx.actor, channel_id=channel.channel_id)
    except errors.ApiError as exc:
        return ctx.form_failed("channels/delete.html", exc, channel=channel)
    ctx.flash(f"The channel {channel.channel_name} is deleted.")
    return ctx.redirect(CHANNELS)
