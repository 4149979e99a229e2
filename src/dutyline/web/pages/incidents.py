"""The incident list (`/console/incidents`): the incidents the signed-in person may see,
filtered by a GET form, counted by progress, a page at a time by keyset, each row able to be
acknowledged by its own form. Everything it shows comes from the services `/incident/list`
uses; the live updates are incidents_live.py's."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.channel import service as channels
from dutyline.channel.service import ChannelQuery
from dutyline.incident.service import IncidentInfo, IncidentListResponse, lifecycle
from dutyline.incident.service import query as incidents
from dutyline.kit.vocabulary import PROGRESSES, SEVERITIES
from dutyline.platform.team import service as teams
from dutyline.web import forms, times
from dutyline.web.context import ConsoleContext
from dutyline.web.page import HOME, Pages

pages = Pages()

PAGE_SIZE = 25
# The time windows the form offers, in seconds; the list reads at most 31 days at once.
WINDOWS: dict[str, tuple[str, int]] = {
    "1h": ("Last hour", 3_600), "24h": ("Last 24 hours", 86_400),
    "7d": ("Last 7 days", 7 * 86_400), "31d": ("Last 31 days", 31 * 86_400),
}
DEFAULT_WINDOW = "7d"
# Options of the channel and team filters: enough for a select; a bigger account types.
MAX_OPTIONS = 200


@dataclass(frozen=True)
class ListView:
    """What one list shows, as its GET form says it (values it does not know are ignored,
    so a hand-edited or stale address still opens a list)."""

    progress: str = ""
    severity: str = ""
    channel_id: int | None = None
    team_id: int | None = None
    window: str = DEFAULT_WINDOW
    query: str = ""
    cursor: str = ""

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> ListView:
        def number(name: str) -> int | None:
            raw = params.get(name, "").strip()
            return int(raw) if raw.isdigit() and len(raw) <= 19 else None

        progress = params.get("progress", "")
        severity = params.get("severity", "")
        window = params.get("window", DEFAULT_WINDOW)
        text = forms.decode_known({"query": [params.get("q", "").strip()],
                                   "search_after_ctx": [params.get("after", "")]},
                                  incidents.ListText)
        return cls(
            progress=progress if progress in PROGRESSES else "",
            severity=severity if severity in SEVERITIES else "",
            channel_id=number("channel"), team_id=number("team"),
            window=window if window in WINDOWS else DEFAULT_WINDOW,
            query=text.query, cursor=text.search_after_ctx,
        )

    def params(self, **changes: Any) -> dict[str, str]:
        """The form's values (as a link's query) with `changes`; defaults left out."""
        view = replace(self, **changes)
        out = {"progress": view.progress, "severity": view.severity,
               "channel": "" if view.channel_id is None else str(view.channel_id),
               "team": "" if view.team_id is None else str(view.team_id),
               "window": "" if view.window == DEFAULT_WINDOW else view.window,
               "q": view.query, "after": view.cursor}
        return {k: v for k, v in out.items() if v}

    def url(self, **changes: Any) -> str:
        query = urlencode(self.params(**changes))
        return f"{HOME}?{query}" if query else HOME

    def filters(self, now_s: int) -> dict[str, Any]:
        """The list service's filters (progress aside: the counts are by progress)."""
        return {
            # The end is exclusive: an incident that started this second is in.
            "start_time": now_s + 1 - WINDOWS[self.window][1], "end_time": now_s + 1,
            "incident_severity": self.severity,
            "channel_ids": [] if self.channel_id is None else [self.channel_id],
            "team_ids": [] if self.team_id is None else [self.team_id],
            "query": self.query,
        }


def read_list(conn: Connection, ctx: ConsoleContext, view: ListView, *,
              incident_ids: list[str] | None = None, limit: int = PAGE_SIZE, cursor: str = "",
              total: bool = True) -> IncidentListResponse:
    """A page of the view's incidents (or those of `incident_ids` it holds), inside a read
    unit (`runtime.db.run_sync`)."""
    return incidents.list_incidents_sync(
        conn, ctx.actor, **view.filters(ctx.actor.now_s), progress=view.progress,
        incident_ids=incident_ids or (), limit=limit, search_after_ctx=cursor,
        deps=ctx.runtime.deps, count=total)


def read_counts(conn: Connection, ctx: ConsoleContext, view: ListView) -> dict[str, int]:
    return incidents.progress_counts_sync(conn, ctx.actor, **view.filters(ctx.actor.now_s))


def age(start_time: int, now_s: int) -> str:
    seconds = max(0, now_s - start_time)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


def stamp(unix_s: int) -> str:
    return times.iso(unix_s)


def row_context(ctx: ConsoleContext, view: ListView) -> dict[str, Any]:
    """What the row template needs besides the incident."""
    return {"now_s": ctx.actor.now_s, "can_ack": ctx.actor.has(INCIDENT_MANAGE),
            "back": view.url(), "age": age, "stamp": stamp, "labels": shown_labels}


def shown_labels(item: IncidentInfo, limit: int = 3) -> list[tuple[str, str]]:
    """A few of the incident's labels for its row, as text."""
    out = []
    for key, value in list(item.labels.items())[:limit]:
        out.append((str(key)[:64], str(value)[:128]))
    return out


def _channel_options(conn: Connection, ctx: ConsoleContext) -> list[Any]:
    """Channels for the filter: those the person may see; none if they may not list them."""
    found: list[Any] = []
    with contextlib.suppress(errors.AccessDenied):
        _, found = channels.list_channels_sync(
            conn, ctx.actor, q=ChannelQuery(is_brief=True, orderby="channel_name", asc=True),
            offset=0, limit=MAX_OPTIONS)
    return found


def _team_options(conn: Connection, ctx: ConsoleContext) -> list[Any]:
    """Teams for the filter; none if the person may not list them."""
    found: list[Any] = []
    with contextlib.suppress(errors.AccessDenied):
        _, found = teams.list_teams_sync(conn, ctx.actor, orderby="team_name", asc=True,
                                         offset=0, limit=MAX_OPTIONS)
    return found


@dataclass
class _ListPage:
    view: ListView
    page: IncidentListResponse
    counts: dict[str, int]
    live_from: int
    team_options: list[Any]
    channel_options: list[Any]


@pages.get(HOME)
async def incident_list(ctx: ConsoleContext) -> Response:
    asked = ListView.from_query(ctx.request.query_params)

    def read(conn: Connection) -> _ListPage:
        # The page shows the sum of the counts by progress, not the list's own total.
        view = asked
        try:
            page = read_list(conn, ctx, view, cursor=view.cursor, total=False)
        except errors.InvalidParameter:
            # A cursor of another list (or an old one): start from the newest instead.
            view = replace(view, cursor="")
            page = read_list(conn, ctx, view, total=False)
        return _ListPage(view, page, read_counts(conn, ctx, view),
                         incidents.live_cursor_sync(conn, ctx.actor).last_id,
                         _team_options(conn, ctx), _channel_options(conn, ctx))

    # The reads /incident/list does, as one unit on the database (api/operation.py).
    found = await ctx.runtime.db.run_sync(read, write=False)
    view, page, counts, live_from = found.view, found.page, found.counts, found.live_from
    team_options, channel_options = found.team_options, found.channel_options
    return ctx.render(
        "incidents/list.html", title="Incidents", view=view, page=page, counts=counts,
        total=sum(counts.values()), progresses=PROGRESSES, severities=SEVERITIES,
        windows=WINDOWS, channel_options=channel_options, team_options=team_options,
        live_url=live_url(view, live_from), oob=False, **row_context(ctx, view))


def live_url(view: ListView, after_event: int) -> str:
    params = view.params(cursor="")
    params["from"] = str(after_event)
    if view.cursor:
        params["paged"] = "1"  # an older page takes updates, never new incidents
    return f"{HOME}/stream?{urlencode(params)}"


@pages.post(f"{HOME}/ack")
async def acknowledge(ctx: ConsoleContext) -> Response:
    """Acknowledge the incident a row's form names (its button, or `a` on the list), then
    back to the list as it was."""
    form = await ctx.form()
    incident_id = form.get("incident_id", "").strip()
    back = form.get("back", HOME)
    if not (back == HOME or back.startswith(f"{HOME}?")):
        back = HOME
    if not incident_id:
        raise errors.invalid("incident_id", "is required")
    try:
        async with ctx.write() as conn:
            await lifecycle.ack(conn, ctx.actor, incident_ids=[incident_id])
    except (errors.InvalidParameter, errors.ResourceNotFound) as exc:
        # Acknowledged or closed meanwhile, or gone: the list shows it as it is now.
        ctx.flash(ctx.message(exc), "error")
        return ctx.redirect(back)
    ctx.flash("Acknowledged.")
    return ctx.redirect(back)
