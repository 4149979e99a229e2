"""Reading incidents: one record, a filtered page (offset or cursor), a feed page, its alerts.

Reads need `channel_view` (Member holds it) or `incident_manage`: whoever may see the
channels may see their incidents, and only those: incidents and alerts of a private channel
the caller cannot see are left out of every read (incident/visibility.py). Writes need
`incident_manage` (see incident/lifecycle)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import CHANNEL_VIEW, INCIDENT_MANAGE
from dutyline.channel import service as channels
from dutyline.incident import feed, live, visibility
from dutyline.incident import repository as core_repo
from dutyline.incident.alert.records import alert_fields, event_item, images_of
from dutyline.incident.alert.schemas import AlertEventItem, AlertInfo, IncidentShort
from dutyline.incident.change import service as changes
from dutyline.incident.query import repository as repo
from dutyline.incident.query.schemas import (
    IncidentFeedItem,
    IncidentInfo,
    IncidentListResponse,
    ListIncidentAlertsResponse,
    ListIncidentFeedResponse,
    PersonShort,
    Responder,
)
from dutyline.incident.query.schemas import ListText as ListText  # for the console's list
from dutyline.kit.vocabulary import PROGRESSES, SEVERITIES
from dutyline.platform.member import service as members

MAX_WINDOW_S = 31 * 86_400  # reference ListIncidentsRequest: "within 31 days"
MAX_EMBEDDED_ALERTS = 100  # alerts embedded per incident when asked for (include_alerts)

# Viewing incidents: anyone who may manage incidents may also read them, whatever else their
# role holds. Each read is one guarded function, whoever calls it (an operation, the console,
# another domain's service): no unguarded twin lets a caller skip the check. The system path
# is explicit: an engine or a job reads as `Actor.system(...)`, which holds every permission.
VIEW_PERMISSIONS = (CHANNEL_VIEW, INCIDENT_MANAGE)

_json = msgspec.json.Decoder()
_responders = msgspec.json.Decoder(list[Responder])


def require_visible_sync(conn: Connection, actor: Actor, *, incident_id: str) -> None:
    """ResourceNotFound unless the incident is one the actor sees."""
    if repo.find_sync(conn, visibility.scope_sync(conn, actor), incident_id.lower()) is None:
        raise errors.not_found("incident", incident_id)


async def require_visible(conn: AsyncConnection, actor: Actor, *, incident_id: str) -> None:
    """`require_visible_sync` on an async connection."""
    await conn.run_sync(lambda sync: require_visible_sync(sync, actor, incident_id=incident_id))


def title_sync(conn: Connection, actor: Actor, *, incident_id: str) -> str:
    """The title of an incident the actor sees, for records that name one; "" for any
    other (unknown, removed, or in a channel hidden from the actor)."""
    row = repo.find_sync(conn, visibility.scope_sync(conn, actor), incident_id.lower())
    return str(row.title) if row is not None else ""


@reads_sync(*VIEW_PERMISSIONS)
def incident_info_sync(conn: Connection, actor: Actor, *, incident_id: str, deps: Deps,
                       include_alerts: bool = False, sources: bool = True,
                       with_changes: bool = False) -> IncidentInfo:
    """One incident the actor sees (the server's base URL for its links), with its first
    alerts when `include_alerts` and the changes just before it when `with_changes`;
    ResourceNotFound otherwise. `sources`: as in `records_sync`."""
    scope = visibility.scope_sync(conn, actor)
    row = repo.find_sync(conn, scope, incident_id.lower())
    if row is None:
        raise errors.not_found("incident", incident_id)
    info = records_sync(conn, actor, [row], deps=deps,
                        alerts_scope=scope if include_alerts else None, sources=sources)[0]
    if with_changes:
        info.recent_changes = changes.recent_change_items_sync(
            conn, actor, channel_id=info.channel_id, at=info.start_time)
    return info


@reads(*VIEW_PERMISSIONS)
async def incident_info(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                        deps: Deps, include_alerts: bool = False,
                        sources: bool = True, with_changes: bool = False) -> IncidentInfo:
    """`incident_info_sync` on an async connection."""
    return await conn.run_sync(lambda sync: incident_info_sync(
        sync, actor, incident_id=incident_id, deps=deps, include_alerts=include_alerts,
        sources=sources, with_changes=with_changes))


@reads_sync(*VIEW_PERMISSIONS)
def list_by_ids_sync(conn: Connection, actor: Actor, *, incident_ids: Sequence[str],
                     deps: Deps, include_alerts: bool = False,
                     sources: bool = True) -> IncidentListResponse:
    """The visible incidents among `incident_ids`, newest first; unknown ids left out.
    `sources`: as in `records_sync`."""
    ids = list(dict.fromkeys(i.lower() for i in incident_ids))
    scope = visibility.scope_sync(conn, actor)
    rows = repo.find_many_sync(conn, scope, ids)
    items = records_sync(conn, actor, rows, deps=deps,
                         alerts_scope=scope if include_alerts else None, sources=sources)
    return IncidentListResponse(items=items, total=len(items), has_next_page=False)


@reads(*VIEW_PERMISSIONS)
async def list_by_ids(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                      deps: Deps, include_alerts: bool = False,
                      sources: bool = True) -> IncidentListResponse:
    """`list_by_ids_sync` on an async connection."""
    return await conn.run_sync(lambda sync: list_by_ids_sync(
        sync, actor, incident_ids=incident_ids, deps=deps, include_alerts=include_alerts,
        sources=sources))


def _csv(value: str, field: str, allowed: tuple[str, ...]) -> list[str]:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    for p in parts:
        if p not in allowed:
            raise errors.invalid(field, "must be a comma-separated list of " + "|".join(allowed))
    return list(dict.fromkeys(parts))


@reads_sync(*VIEW_PERMISSIONS)
def list_incidents_sync(
    conn: Connection, actor: Actor, *, start_time: int, end_time: int, deps: Deps,
    asc: bool = False, offset: int = 0, limit: int = 20,
    search_after_ctx: str = "", progress: str = "", incident_severity: str = "",
    channel_ids: Sequence[int] = (), team_ids: Sequence[int] = (), is_my_team: bool = False,
    is_my_channel: bool = False, responder_ids: Sequence[int] = (),
    acker_ids: Sequence[int] = (), creator_ids: Sequence[int] = (),
    closer_ids: Sequence[int] = (), incident_ids: Sequence[str] = (),
    nums: Sequence[str] = (), query: str = "", is_snoozed: bool = False,
    ever_muted: bool = False, count: bool = True,
) -> IncidentListResponse:
    """Incidents started in [start_time, end_time] (at most 31 days), filtered, a page at a
    time by offset or by the opaque `search_after_ctx` cursor (signed with the server's
    secret key). `count=False` skips the total (then 0) for callers that do not show it."""
    f = _list_filter(
        conn, actor, start_time=start_time, end_time=end_time, progress=progress,
        incident_severity=incident_severity, channel_ids=channel_ids, team_ids=team_ids,
        is_my_team=is_my_team, is_my_channel=is_my_channel, responder_ids=responder_ids,
        acker_ids=acker_ids, creator_ids=creator_ids, closer_ids=closer_ids,
        incident_ids=incident_ids, nums=nums, query=query, is_snoozed=is_snoozed,
        ever_muted=ever_muted)
    if f is None:
        return IncidentListResponse(items=[], total=0, has_next_page=False)
    after = None
    if search_after_ctx:
        after = _read_cursor(_cursor_key(deps), search_after_ctx, asc)
        offset = 0  # a cursor replaces p: it already says where the page starts
    scope = visibility.scope_sync(conn, actor)
    total, rows = repo.window_sync(conn, scope, f, asc=asc, offset=offset,
                                   limit=limit + 1, after=after, count=count)
    has_next = len(rows) > limit
    rows = rows[:limit]
    cursor = ""
    if has_next and rows:
        cursor = _write_cursor(_cursor_key(deps), rows[-1][_START], rows[-1][_ID], asc)
    return IncidentListResponse(items=records_sync(conn, actor, rows, deps=deps, named=True),
                                total=total, has_next_page=has_next, search_after_ctx=cursor)


@reads(*VIEW_PERMISSIONS)
async def list_incidents(
    conn: AsyncConnection, actor: Actor, *, start_time: int, end_time: int, deps: Deps,
    asc: bool = False, offset: int = 0, limit: int = 20,
    search_after_ctx: str = "", progress: str = "", incident_severity: str = "",
    channel_ids: Sequence[int] = (), team_ids: Sequence[int] = (), is_my_team: bool = False,
    is_my_channel: bool = False, responder_ids: Sequence[int] = (),
    acker_ids: Sequence[int] = (), creator_ids: Sequence[int] = (),
    closer_ids: Sequence[int] = (), incident_ids: Sequence[str] = (),
    nums: Sequence[str] = (), query: str = "", is_snoozed: bool = False,
    ever_muted: bool = False, count: bool = True,
) -> IncidentListResponse:
    """`list_incidents_sync` on an async connection."""
    return await conn.run_sync(lambda sync: list_incidents_sync(
        sync, actor, start_time=start_time, end_time=end_time, deps=deps, asc=asc,
        offset=offset, limit=limit, search_after_ctx=search_after_ctx, progress=progress,
        incident_severity=incident_severity, channel_ids=channel_ids, team_ids=team_ids,
        is_my_team=is_my_team, is_my_channel=is_my_channel, responder_ids=responder_ids,
        acker_ids=acker_ids, creator_ids=creator_ids, closer_ids=closer_ids,
        incident_ids=incident_ids, nums=nums, query=query, is_snoozed=is_snoozed,
        ever_muted=ever_muted, count=count))


@reads_sync(CHANNEL_VIEW, INCIDENT_MANAGE)
def progress_counts_sync(
    conn: Connection, actor: Actor, *, start_time: int, end_time: int,
    incident_severity: str = "", channel_ids: Sequence[int] = (),
    team_ids: Sequence[int] = (), is_my_team: bool = False, is_my_channel: bool = False,
    query: str = "",
) -> dict[str, int]:
    """How many of the incidents `list_incidents` would find with these filters are in each
    progress (every progress named, 0 for none): the tabs of a list filtered by progress."""
    f = _list_filter(
        conn, actor, start_time=start_time, end_time=end_time,
        incident_severity=incident_severity,
        channel_ids=channel_ids, team_ids=team_ids, is_my_team=is_my_team,
        is_my_channel=is_my_channel, query=query)
    counts: dict[str, int] = dict.fromkeys(PROGRESSES, 0)
    if f is not None:
        counts.update(repo.progress_counts_sync(conn, visibility.scope_sync(conn, actor), f))
    return counts


@reads_sync(*VIEW_PERMISSIONS)
def open_counts_by_channel_sync(conn: Connection, actor: Actor, *,
                                channel_ids: Sequence[int]) -> dict[int, int]:
    """How many open incidents (triggered or processing, whenever they started) each of these
    channels holds among those the actor sees, for a page of channels (0 left out)."""
    ids = list(dict.fromkeys(channel_ids))
    if len(ids) > 100:
        raise errors.invalid("channel_ids", "has more than 100 ids")
    return repo.open_counts_by_channel_sync(conn, visibility.scope_sync(conn, actor), ids)


def _list_filter(
    conn: Connection, actor: Actor, *, start_time: int, end_time: int, progress: str = "",
    incident_severity: str = "", channel_ids: Sequence[int] = (),
    team_ids: Sequence[int] = (), is_my_team: bool = False, is_my_channel: bool = False,
    responder_ids: Sequence[int] = (), acker_ids: Sequence[int] = (),
    creator_ids: Sequence[int] = (), closer_ids: Sequence[int] = (),
    incident_ids: Sequence[str] = (), nums: Sequence[str] = (), query: str = "",
    is_snoozed: bool = False, ever_muted: bool = False,
) -> repo.ListFilter | None:
    """The validated conditions of a list; None when they can match nothing (my teams, and
    the actor is in none)."""
    if end_time <= start_time:
        raise errors.invalid("end_time", "must be after start_time")
    if end_time - start_time > MAX_WINDOW_S:
        raise errors.invalid("end_time", "must be at most 31 days after start_time")
    if acker_ids:
        raise errors.invalid("acker_ids", "is not supported")
    account_id = actor.account_id
    f = repo.ListFilter(
        start_time=start_time, end_time=end_time, now_s=actor.now_s,
        progress=_csv(progress, "progress", PROGRESSES),
        severities=_csv(incident_severity, "incident_severity", SEVERITIES),
        channel_ids=list(dict.fromkeys(channel_ids)),
        creator_ids=list(dict.fromkeys(creator_ids)),
        closer_ids=list(dict.fromkeys(closer_ids)),
        responder_ids=list(dict.fromkeys(responder_ids)),
        incident_ids=list(dict.fromkeys(i.lower() for i in incident_ids)),
        nums=list(dict.fromkeys(n.strip().upper() for n in nums if n.strip())),
        query=query.strip(), is_snoozed=is_snoozed, ever_muted=ever_muted,
    )
    teams = set(team_ids)
    if is_my_team:
        teams |= actor.team_ids_sync(conn)
        if not teams:
            return None
    if teams:
        f.channel_scope = repo.team_channel_scope(account_id, sorted(teams))
    if is_my_channel:
        f.channel_scope = repo.creator_channel_scope(account_id, actor.person_id,
                                                     within=f.channel_scope)
    return f


@dataclass(frozen=True, slots=True)
class IncidentChange:
    event_id: int
    incident_id: str
    kind: str  # incident/events.py's kinds: created, acked, resolved, ...


LIVE_BATCH = 500


@reads_sync(CHANNEL_VIEW, INCIDENT_MANAGE)
def live_cursor_sync(conn: Connection, actor: Actor) -> live.LiveCursor:
    """A live view's start: past every change made so far."""
    lookback = live.LOOKBACK_IDS if conn.dialect.name == "postgresql" else 0
    return live.LiveCursor(core_repo.last_event_id_sync(conn), lookback=lookback)


@reads(CHANNEL_VIEW, INCIDENT_MANAGE)
async def incident_changes(conn: AsyncConnection, actor: Actor, *,
                           cursor: live.LiveCursor) -> list[IncidentChange]:
    """The changes to the account's incidents past `cursor`, oldest first, moving the cursor
    past them: at most LIVE_BATCH at a time (call again while that many come). Which of the
    incidents the actor sees is for the read that follows (list_incidents' `incident_ids`)."""
    # At most `lookback` of the rows read are at or before the cursor: the rest are new.
    rows = await core_repo.events_after(conn, cursor.since(), account_id=actor.account_id,
                                        limit=cursor.lookback + LIVE_BATCH)
    return [IncidentChange(r.id, r.incident_id, r.kind) for r in cursor.take(rows)]


# The cursor is opaque to clients: base64 of (start_time, incident_id, direction) plus an
# HMAC, so a client cannot forge a position or reuse a cursor in the other direction.
def _cursor_key(deps: Deps) -> str:
    return deps.secret_key


def _cursor_mac(key: str, payload: bytes) -> str:
    digest = hmac.new(key.encode(), b"incident-list:" + payload, hashlib.sha256).digest()[:12]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _write_cursor(key: str, start_time: int, incident_id: str, asc: bool) -> str:
    payload = msgspec.json.encode([start_time, incident_id, asc])
    body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    return f"{body}.{_cursor_mac(key, payload)}"


def _read_cursor(key: str, cursor: str, asc: bool) -> tuple[int, str]:
    bad = errors.invalid("search_after_ctx", "is not a valid cursor")
    body, _, mac = cursor.partition(".")
    try:
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise bad from None
    if not hmac.compare_digest(mac.encode(), _cursor_mac(key, payload).encode()):
        raise bad
    try:
        start_time, incident_id, was_asc = msgspec.json.decode(
            payload, type=tuple[int, str, bool])
    except msgspec.DecodeError:
        raise bad from None
    if was_asc != asc:
        raise errors.invalid("search_after_ctx", "was made for the other order (asc)")
    return start_time, incident_id


# Positions in a row of the incident table (repository.COLUMN_AT), read by position so that
# a page's driver tuples (db/prepared.py) and SQLAlchemy rows read alike.
_C = repo.COLUMN_AT
_ID, _START = _C["incident_id"], _C["start_time"]


def records_sync(conn: Connection, actor: Actor, rows: Sequence[Any], *, deps: Deps,
                 named: bool = False, alerts_scope: visibility.Scope | None = None,
                 sources: bool = True) -> list[IncidentInfo]:
    """Whole IncidentInfo records for a page of rows (the incident's columns in table order),
    with a fixed number of extra reads (none for the names when `named`: the rows are a
    list's page, repository.NAMED_AT; one for the sources; one for members' names when the
    page names any); with `alerts_scope`, each incident's alerts visible in that scope are
    embedded (one more read per incident). Without `sources` the sources' read is left out,
    and with it the integrations the alerts came from (`integration_ids`,
    `integration_types` empty, `integration_type` None) and the recurrence bucket
    (`frequency` None): for callers that read none of these (the escalation engine, many
    times a second)."""
    if not rows:
        return []
    c = _C
    i_id, i_chan, i_creator, i_closer, i_owner, i_resp = (
        c["incident_id"], c["channel_id"], c["creator_id"], c["closer_id"], c["owner_id"],
        c["responders"])
    if named:  # a list's page: the names came with the rows
        n = repo.NAMED_AT
        first = rows[0]
        acct: Any = (None if first[n + 2] is None
                     else _Account(first[n + 2], first[n + 3], first[n + 4]))
        chans = {r[i_chan]: (r[n], r[n + 1]) for r in rows if r[n] is not None}
    else:
        acct = repo.account_row_sync(conn, actor.account_id)
        chans = channels.channel_names_sync(conn, actor, [r[i_chan] for r in rows])
    responders = {r[i_id]: _responders.decode(r[i_resp]) for r in rows}
    people = members.member_names_sync(
        conn, actor, {p.person_id for rs in responders.values() for p in rs}
        | {i for r in rows for i in (r[i_creator], r[i_closer], r[i_owner])})
    ids = [r[i_id] for r in rows]
    integrations, frequent = repo.sources_sync(conn, ids) if sources else ({}, set())
    account_name = acct.account_name if acct else ""
    account_locale = acct.locale if acct else ""
    account_time_zone = acct.time_zone if acct else ""
    base = deps.base_url
    items: list[IncidentInfo] = []
    for r in rows:
        (incident_id, account_id, channel_id, integration_id, num, dedup_key, equals_md5,
         group_method, title, description, impact, root_cause, resolution, incident_severity,
         incident_status, progress, start_time, last_time, end_time, ack_time, close_time,
         snoozed_before, creator_id, closer_id, owner_id, labels, fields, assigned_to, _,
         images, alert_cnt, active_alert_cnt, alert_event_cnt, ever_muted, merged_into, _,
         deleted_at, created_at, updated_at) = r[:_WIDTH]
        chan = chans.get(channel_id)
        own = responders[incident_id]
        for p in own:
            person = people.get(p.person_id)
            if person is not None:
                p.person_name, p.email = person
        origins = integrations.get(incident_id, [])
        items.append(IncidentInfo(
            incident_id=incident_id, account_id=account_id, channel_id=channel_id,
            integration_id=integration_id,
            integration_ids=[i for i, _ in origins],
            integration_types=list(dict.fromkeys(t for _, t in origins)),
            dedup_key=dedup_key, equals_md5=equals_md5, start_time=start_time,
            end_time=end_time, last_time=last_time, ack_time=ack_time,
            close_time=close_time, creator_id=creator_id, closer_id=closer_id,
            owner_id=owner_id, incident_status=incident_status,
            incident_severity=incident_severity, progress=progress, title=title,
            description=description, ai_summary="", impact=impact,
            root_cause=root_cause, resolution=resolution, num=num,
            deleted_at=deleted_at, created_at=created_at, updated_at=updated_at,
            snoozed_before=snoozed_before, group_method=group_method,
            ever_muted=bool(ever_muted), labels=_json.decode(labels),
            fields=_json.decode(fields), assigned_to=_json.decode(assigned_to),
            alert_cnt=alert_cnt, active_alert_cnt=active_alert_cnt,
            alert_event_cnt=alert_event_cnt, responders=own,
            account_name=account_name, account_locale=account_locale,
            account_time_zone=account_time_zone,
            channel_name=chan[0] if chan else "",
            channel_status=chan[1] if chan else "",
            detail_url=f"{base}/console/incidents/{incident_id}",
            silence_url=f"{base}/incident/silence/{incident_id}",
            post_mortem_id="", images=[] if images == "[]" else images_of(images),
            manual_overrides=[],
            merged_into=merged_into or "",
            creator=_person(people, creator_id), closer=_person(people, closer_id),
            owner=_person(people, owner_id),
            # A member-created incident was reported by its creator.
            reporter_email=(people[creator_id][1] if creator_id in people else None),
            integration_type=origins[0][1] if origins else None,
            # Channel link integrations do not exist here yet: none to render.
            links=[],
            frequency=(("frequent" if incident_id in frequent else "rare") if sources
                       else None),
        ))
    if alerts_scope is not None:
        for item in items:
            rows_of = repo.alert_page_sync(conn, alerts_scope, item.incident_id, None,
                                           offset=0, limit=MAX_EMBEDDED_ALERTS)
            short = IncidentShort(incident_id=item.incident_id, title=item.title,
                                  progress=item.progress)
            item.alerts = [_alert_info(a, short, None) for a in rows_of]
    return items


# The incident table's columns as records_sync unpacks them; an added column fails here, at
# import, rather than shifting the fields of every record.
_WIDTH = len(_C)
assert tuple(_C) == (
    "incident_id", "account_id", "channel_id", "integration_id", "num", "dedup_key",
    "equals_md5", "group_method", "title", "description", "impact", "root_cause",
    "resolution", "incident_severity", "incident_status", "progress", "start_time",
    "last_time", "end_time", "ack_time", "close_time", "snoozed_before", "creator_id",
    "closer_id", "owner_id", "labels", "fields", "assigned_to", "responders", "images",
    "alert_cnt", "active_alert_cnt", "alert_event_cnt", "ever_muted", "merged_into",
    "merge_disabled", "deleted_at", "created_at", "updated_at"), tuple(_C)


@dataclass(frozen=True, slots=True)
class _Account:
    account_name: str
    locale: str
    time_zone: str


def _person(people: dict[int, tuple[str, str]], person_id: int) -> PersonShort | None:
    found = people.get(person_id) if person_id else None
    if found is None:
        return None
    return PersonShort(person_id=person_id, person_name=found[0], email=found[1])


@reads_sync(*VIEW_PERMISSIONS)
def incident_feed_sync(
    conn: Connection, actor: Actor, *, incident_id: str, types: Sequence[str] = (),
    asc: bool = False, offset: int = 0, limit: int = 20,
) -> ListIncidentFeedResponse:
    """A page of the timeline of an incident the actor sees."""
    wanted = incident_id.lower()
    if repo.find_sync(conn, visibility.scope_sync(conn, actor), wanted) is None:
        raise errors.not_found("incident", incident_id)
    rows = repo.feed_page_sync(conn, actor.account_id, wanted,
                               types=list(dict.fromkeys(types)), asc=asc,
                               offset=offset, limit=limit + 1)
    items = [
        IncidentFeedItem(
            ref_id=r.incident_id, type=r.type,
            detail=feed.reference_detail(r.type, _json.decode(r.detail)),
            account_id=r.account_id, creator_id=r.creator_id,
            # Stored in seconds; the reference's IncidentFeedItem speaks milliseconds.
            creator_name=r.member_name or "", deleted_at=0, created_at=r.created_at * 1000,
            updated_at=r.created_at * 1000,
        )
        for r in rows[:limit]
    ]
    return ListIncidentFeedResponse(has_next_page=len(rows) > limit, items=items)


@reads(*VIEW_PERMISSIONS)
async def incident_feed(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                        types: Sequence[str] = (), asc: bool = False, offset: int = 0,
                        limit: int = 20) -> ListIncidentFeedResponse:
    """`incident_feed_sync` on an async connection."""
    return await conn.run_sync(lambda sync: incident_feed_sync(
        sync, actor, incident_id=incident_id, types=types, asc=asc, offset=offset,
        limit=limit))


@reads_sync(*VIEW_PERMISSIONS)
def incident_alerts_sync(
    conn: Connection, actor: Actor, *, incident_id: str, is_active: bool | None = None,
    include_events: bool = False, offset: int = 0, limit: int = 1000,
) -> ListIncidentAlertsResponse:
    """A page of the alerts of an incident the actor sees (those it sees), newest first."""
    scope = visibility.scope_sync(conn, actor)
    inc = repo.find_sync(conn, scope, incident_id.lower())
    if inc is None:
        raise errors.not_found("incident", incident_id)
    total = repo.alert_count_sync(conn, scope, inc.incident_id, is_active)
    rows = repo.alert_page_sync(conn, scope, inc.incident_id, is_active,
                                offset=offset, limit=limit)
    history = (repo.alert_events_sync(conn, [r.alert_id for r in rows])
               if include_events else {})
    short = IncidentShort(incident_id=inc.incident_id, title=inc.title, progress=inc.progress)
    items = [
        _alert_info(r, short, [
            event_item(e, integration_type=r.integration_type or "", title_rule=r.title_rule,
                       alert_key=r.alert_key) for e in history.get(r.alert_id, [])
        ] if include_events else None)
        for r in rows
    ]
    return ListIncidentAlertsResponse(items=items, total=total)


@reads(*VIEW_PERMISSIONS)
async def incident_alerts(
    conn: AsyncConnection, actor: Actor, *, incident_id: str, is_active: bool | None = None,
    include_events: bool = False, offset: int = 0, limit: int = 1000,
) -> ListIncidentAlertsResponse:
    """`incident_alerts_sync` on an async connection."""
    return await conn.run_sync(lambda sync: incident_alerts_sync(
        sync, actor, incident_id=incident_id, is_active=is_active,
        include_events=include_events, offset=offset, limit=limit))


def _alert_info(r: Row[Any], short: IncidentShort,
                events: list[AlertEventItem] | None) -> AlertInfo:
    """An alert row of repository.alert_page (with its integration's and channel's names)."""
    return AlertInfo(
        **alert_fields(r, integration=(r.integration_name or "", r.integration_type or ""),
                       channel=(r.channel_name or "", r.channel_status or "")),
        incident=short, events=events,
    )
