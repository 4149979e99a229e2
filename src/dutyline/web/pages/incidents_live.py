"""The incident list, live: `/console/incidents/stream` is a server-sent event stream the list
page opens (htmx's SSE extension) that sends the rows of incidents as they open and change.

Fed by the incident event stream (incident/live.py says how a process learns of a change made
by any process: NOTIFY on PostgreSQL, a cheap poll on SQLite). On each change it reads the
changed incidents again through the list's own service with the page's filters, so the
stream shows exactly what a reload would, and only what the person may see:

- `incident-new`: a row for a new incident that matches the list (first page only);
- `incident-update`: the rows of changed incidents still in the list, the ones that left it
  (to remove), and the counts by progress, all swapped out of band by id;
- `session-ended`: the session is over (signed out, expired, removed); the page closes the
  stream, and says so.

The streams of a process share the work of a change: the account's feed (incident/live.py)
reads each batch of changes once, and streams with the same reader and view read and render
it once (`_shared_render`). Each stream checks its session when it opens and then every
HEARTBEAT_S (not on each change: a signed-out session may get rows, of incidents the person
could see, for up to that long), when an `id:` line (the position, for a reconnection to go
on from) keeps proxies from closing an idle stream and finds a closed browser. After
STREAM_MAX_S the stream ends and the browser opens it again at once from where it was: so it
reads the person's roles and teams afresh."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import Connection
from starlette.responses import Response, StreamingResponse

from dutyline.incident.service import events, live
from dutyline.incident.service import query as incidents
from dutyline.web.context import ConsoleContext
from dutyline.web.page import HOME, Pages
from dutyline.web.pages.incidents import ListView, read_counts, read_list, row_context

pages = Pages()

HEARTBEAT_S = 15.0
STREAM_MAX_S = 300.0
# How far back a reconnecting page may ask to be caught up; further back it starts afresh.
MAX_CATCH_UP_EVENTS = 10_000
_IDS_PER_READ = 100
STREAM_HEADERS = {"X-Accel-Buffering": "no"}  # a proxy in front must not hold events back


def sse(event: str, data: str, event_id: int | None = None) -> str:
    lines = [f"event: {event}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines += [f"data: {line}" for line in data.splitlines() or [""]]
    return "\n".join(lines) + "\n\n"


def _ended() -> Response:
    async def body() -> AsyncIterator[str]:
        yield "retry: 60000\n\n" + sse("session-ended", _session_ended_notice())

    return StreamingResponse(body(), media_type="text/event-stream", headers=STREAM_HEADERS)


def _session_ended_notice() -> str:
    return ('<p class="flash flash-error" role="status">Your session has ended. '
            f'<a href="/console/sign-in?next={HOME.replace("/", "%2F")}">Sign in again</a> '
            'to see new incidents.</p>')


@pages.get(f"{HOME}/stream", public=True)
async def stream(ctx: ConsoleContext) -> Response:
    if ctx.session is None or ctx.session.second_factor_pending:
        return _ended()
    params = ctx.request.query_params
    view = ListView.from_query(params)
    first_page = params.get("paged") != "1"
    actor = ctx.actor
    cursor = await ctx.runtime.db.run_sync(lambda conn: incidents.live_cursor_sync(conn, actor),
                                           write=False)
    # Where the page (or, reconnecting, the last event it got) left off, if not too old.
    given = ctx.request.headers.get("last-event-id") or params.get("from", "")
    if given.isdigit() and len(given) <= 19 and (
            cursor.last_id - MAX_CATCH_UP_EVENTS <= int(given) <= cursor.last_id):
        cursor.last_id = int(given)
    # On PostgreSQL the cursor also reads back behind this position (incident/live.py): what
    # it finds there the page may already show, so it is sent as a change, never as new.
    first_page_from = cursor.last_id if first_page else None
    return StreamingResponse(_events(ctx, view, cursor, new_after=first_page_from),
                             media_type="text/event-stream", headers=STREAM_HEADERS)


async def _events(ctx: ConsoleContext, view: ListView, cursor: live.LiveCursor, *,
                  new_after: int | None) -> AsyncIterator[str]:
    """The stream's messages; incidents created by events past `new_after` come as new rows
    (None: never, an older page)."""
    loop = asyncio.get_running_loop()
    ends_at = loop.time() + STREAM_MAX_S
    yield "retry: 2000\n\n"
    async with ctx.read():  # the person's teams, read once for the stream's life
        reader = await _reader_key(ctx)
    feeds = live.feeds_for(ctx.runtime.db)
    async with feeds.follow(ctx.actor.account_id, recheck_s=HEARTBEAT_S) as feed:
        seq = feed.seq
        assert feed.cursor is not None
        joined_at = feed.cursor.last_id
        # Events this stream has sent: on PostgreSQL its own catch-up and the feed's read-back
        # can both hold one (ids commit out of order), and a change is sent once.
        sent = _SentEvents()
        # What happened between the page and this process's feed, this stream reads itself.
        if cursor.last_id < joined_at:
            async for message in _catch_up(ctx, view, cursor, upto=joined_at,
                                           new_after=new_after, sent=sent):
                yield message
        # A page newer than the feed has seen what the feed reads up to its position. Ids
        # commit in order on SQLite only: with a read-back, a view takes every change again.
        skip_upto = cursor.last_id if not feed.cursor.lookback else 0
        position = max(cursor.last_id, joined_at)
        yield f"id: {position}\n\n"
        check_at = loop.time() + HEARTBEAT_S
        while True:
            batches = feed.since(seq)
            if batches is None:
                return  # too far behind: the browser reconnects from `position`
            for batch in batches:
                seq = batch.seq
                position = max(position, batch.last_id)
                changes = sent.first_time(
                    [incidents.IncidentChange(r.id, r.incident_id, r.kind)
                     for r in batch.rows if r.id > skip_upto])
                if changes:
                    for event, html in await _shared_render(ctx, reader, view, batch,
                                                            changes, new_after=new_after):
                        yield sse(event, html, position)
            now = loop.time()
            if now >= ends_at:
                return
            if now >= check_at:
                if not await ctx.still_signed_in():
                    yield sse("session-ended", _session_ended_notice())
                    return
                # No event, only the position: what a reconnection sends back.
                yield f"id: {position}\n\n"
                check_at = now + HEARTBEAT_S
            await feed.wait(seq, min(check_at, ends_at) - now)


class _SentEvents:
    """The event ids a stream has sent, the newest few thousand."""

    KEEP = 4 * live.LOOKBACK_IDS

    def __init__(self) -> None:
        self._ids: set[int] = set()

    def first_time(self, changes: list[Any]) -> list[Any]:
        fresh = [c for c in changes if c.event_id not in self._ids]
        self._ids.update(c.event_id for c in fresh)
        if len(self._ids) > self.KEEP:
            floor = max(self._ids) - self.KEEP // 2
            self._ids = {i for i in self._ids if i > floor}
        return fresh


async def _catch_up(ctx: ConsoleContext, view: ListView, cursor: live.LiveCursor, *,
                    upto: int, new_after: int | None,
                    sent: _SentEvents) -> AsyncIterator[str]:
    """The messages for what changed past `cursor` up to event `upto`."""
    while cursor.last_id < upto:
        async with ctx.read():
            batch = await incidents.incident_changes(ctx.conn, ctx.actor, cursor=cursor)
        in_range = [c for c in batch if c.event_id <= upto]
        if not in_range:
            return
        changes = sent.first_time(in_range)
        messages = (await _render(ctx, view, changes, _created(changes, new_after))
                    if changes else [])
        for event, html in messages:
            yield sse(event, html, min(cursor.last_id, upto))
        if len(batch) < incidents.LIVE_BATCH:
            return


def _created(changes: list[Any], new_after: int | None) -> frozenset[str]:
    if new_after is None:
        return frozenset()
    return frozenset(c.incident_id for c in changes
                     if c.kind == events.CREATED and c.event_id > new_after)


async def _reader_key(ctx: ConsoleContext) -> tuple[Any, ...]:
    """Everything the list's read and rows depend on besides the view: who reads, with what
    rights, in which teams (which decide the channels they see)."""
    actor = ctx.actor
    return (actor.account_id, actor.person_id, actor.is_admin, actor.permissions,
            await actor.team_ids())


async def _shared_render(ctx: ConsoleContext, reader: tuple[Any, ...], view: ListView,
                         batch: live.Batch,
                         changes: list[Any], *, new_after: int | None
                         ) -> list[tuple[str, str]]:
    """The messages for `changes`, read and rendered once for every stream of this process
    with the same reader, view and changes."""
    created = _created(changes, new_after)
    key = (reader, view, created,
           tuple((c.event_id, c.incident_id, c.kind) for c in changes))
    found = batch.shared.get(key)
    if found is not None:
        with contextlib.suppress(Exception):
            result: list[tuple[str, str]] = await asyncio.shield(found)
            return result
        # The stream that read it failed or went away: read it here.
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    batch.shared[key] = done
    try:
        messages = await _render(ctx, view, changes, created)
    except BaseException as exc:
        if batch.shared.get(key) is done:
            del batch.shared[key]
        done.set_exception(exc if isinstance(exc, Exception) else RuntimeError("gone"))
        done.exception()  # retrieved: the waiters read it again themselves
        raise
    done.set_result(messages)
    return messages


async def _render(ctx: ConsoleContext, view: ListView, changes: list[Any],
                  created: frozenset[str]) -> list[tuple[str, str]]:
    """(event, HTML) of the messages telling the page about `changes`."""
    changed = list(dict.fromkeys(c.incident_id for c in reversed(changes)))

    def read(conn: Connection) -> tuple[dict[str, Any], list[str], dict[str, int]]:
        shown: dict[str, Any] = {}
        for i in range(0, len(changed), _IDS_PER_READ):
            chunk = changed[i:i + _IDS_PER_READ]
            page = read_list(conn, ctx, view, incident_ids=chunk, limit=len(chunk),
                             total=False)
            shown.update((item.incident_id, item) for item in page.items)
        # Changed incidents the person sees that no longer match leave the list; those they
        # do not see are never named, not even to be removed.
        unlisted = [i for i in changed if i not in shown][:100]
        gone = [] if not unlisted else [item.incident_id for item in incidents.list_by_ids_sync(
            conn, ctx.actor, incident_ids=unlisted, deps=ctx.runtime.deps,
            sources=False).items]
        return shown, gone, read_counts(conn, ctx, view)

    # The reads through the sync services, in one read transaction on the process's engine
    # (whose statement listeners see them, as they see the stream's other reads).
    async with ctx.read() as conn:
        shown, gone, counts = await conn.run_sync(read)
    env = dict(row_context(ctx, view), view=view)
    messages: list[tuple[str, str]] = []
    fresh = [shown[i] for i in changed if i in shown and i in created]
    # Oldest first, each put on top: the newest ends up first.
    for item in sorted(fresh, key=lambda x: (x.start_time, x.incident_id)):
        html = ctx.console.render("incidents/_row.html", ctx=ctx, i=item, oob=False, **env)
        messages.append(("incident-new", html))
    updated = [shown[i] for i in changed if i in shown and i not in created]
    parts = [ctx.console.render("incidents/_row.html", ctx=ctx, i=item, oob=True, **env)
             for item in updated]
    parts += [f'<li id="incident-{incident_id}" hx-swap-oob="delete"></li>'
              for incident_id in gone]
    parts.append(ctx.console.render("incidents/_counts.html", ctx=ctx, counts=counts,
                                    total=sum(counts.values()), view=view, oob=True))
    messages.append(("incident-update", "\n".join(parts)))
    return messages
