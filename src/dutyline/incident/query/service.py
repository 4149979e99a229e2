"""Reading incidents: one record, a filtered page (offset or cursor), a feed page, its alerts.

Reads need `channel_view` (Member holds it): whoever may see the channels may see their
incidents, and only those: incidents and alerts of a private channel the caller cannot see
are left out of every read (incident/visibility.py). Writes need `incident_manage` (see
incident/lifecycle)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

import msgspec
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.operation import Context
from dutyline.incident import feed, visibility
from dutyline.incident.query import repository as repo
from dutyline.incident.query.schemas import (
    AlertEventItem,
    AlertInfo,
    Image,
    IncidentFeedItem,
    IncidentInfo,
    IncidentInfoRequest,
    IncidentListResponse,
    IncidentShort,
    ListIncidentAlertsRequest,
    ListIncidentAlertsResponse,
    ListIncidentFeedRequest,
    ListIncidentFeedResponse,
    ListIncidentsByIdsRequest,
    ListIncidentsRequest,
    PersonShort,
    Responder,
)

PROGRESSES = ("Triggered", "Processing", "Closed")
SEVERITIES = ("Critical", "Warning", "Info")
MAX_WINDOW_S = 31 * 86_400  # reference ListIncidentsRequest: "within 31 days"
MAX_EMBEDDED_ALERTS = 100  # alerts embedded per incident when asked for (include_alerts)

_json = msgspec.json.Decoder()
_responders = msgspec.json.Decoder(list[Responder])


def _images(text: str) -> list[Image]:
    """Images as stored by whoever wrote them (ingestion, create); unknown keys are dropped
    and an entry without a source is skipped rather than failing the whole record."""
    found = _json.decode(text)
    if not isinstance(found, list):
        return []
    return [
        Image(src=str(i["src"]), href=str(i.get("href", "")), alt=str(i.get("alt", "")))
        for i in found if isinstance(i, dict) and i.get("src")
    ]


async def incident_info(ctx: Context, req: IncidentInfoRequest) -> IncidentInfo:
    row = await repo.find(ctx.conn, await visibility.scope(ctx), req.incident_id.lower())
    if row is None:
        raise errors.not_found("incident", req.incident_id)
    return (await records(ctx, [row], with_alerts=req.include_alerts))[0]


async def list_by_ids(ctx: Context, req: ListIncidentsByIdsRequest) -> IncidentListResponse:
    ids = list(dict.fromkeys(i.lower() for i in req.incident_ids))
    rows = await repo.find_many(ctx.conn, await visibility.scope(ctx), ids)
    items = await records(ctx, rows, with_alerts=req.include_alerts)
    return IncidentListResponse(items=items, total=len(items), has_next_page=False)


def _csv(value: str, field: str, allowed: tuple[str, ...]) -> list[str]:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    for p in parts:
        if p not in allowed:
            raise errors.invalid(field, "must be a comma-separated list of " + "|".join(allowed))
    return list(dict.fromkeys(parts))


async def list_incidents(ctx: Context, req: ListIncidentsRequest) -> IncidentListResponse:
    if req.end_time <= req.start_time:
        raise errors.invalid("end_time", "must be after start_time")
    if req.end_time - req.start_time > MAX_WINDOW_S:
        raise errors.invalid("end_time", "must be at most 31 days after start_time")
    if req.acker_ids:
        raise errors.invalid("acker_ids", "is not supported")
    account_id = ctx.caller.account_id
    f = repo.ListFilter(
        start_time=req.start_time, end_time=req.end_time, now_s=ctx.now_s,
        progress=_csv(req.progress, "progress", PROGRESSES),
        severities=_csv(req.incident_severity, "incident_severity", SEVERITIES),
        channel_ids=list(dict.fromkeys(req.channel_ids)),
        creator_ids=list(dict.fromkeys(req.creator_ids)),
        closer_ids=list(dict.fromkeys(req.closer_ids)),
        responder_ids=list(dict.fromkeys(req.responder_ids)),
        incident_ids=list(dict.fromkeys(i.lower() for i in req.incident_ids)),
        nums=list(dict.fromkeys(n.strip().upper() for n in req.nums if n.strip())),
        query=req.query.strip(), is_snoozed=req.is_snoozed, ever_muted=req.ever_muted,
    )
    team_ids = set(req.team_ids)
    if req.is_my_team:
        team_ids |= await ctx.caller_team_ids()
        if not team_ids:
            return IncidentListResponse(items=[], total=0, has_next_page=False)
    if team_ids:
        f.channel_scope = repo.team_channel_scope(account_id, sorted(team_ids))
    if req.is_my_channel:
        f.channel_scope = repo.creator_channel_scope(account_id, ctx.caller.person_id,
                                                     within=f.channel_scope)

    after = None
    offset = req.offset
    if req.search_after_ctx:
        after = _read_cursor(ctx, req.search_after_ctx, req.asc)
        offset = 0  # a cursor replaces p: it already says where the page starts
    scope = await visibility.scope(ctx)
    total, rows = await repo.window(ctx.conn, scope, f, asc=req.asc, offset=offset,
                                    limit=req.limit + 1, after=after)
    has_next = len(rows) > req.limit
    rows = rows[: req.limit]
    cursor = ""
    if has_next and rows:
        cursor = _write_cursor(ctx, rows[-1].start_time, rows[-1].incident_id, req.asc)
    return IncidentListResponse(items=await records(ctx, rows), total=total,
                                has_next_page=has_next, search_after_ctx=cursor)


# The cursor is opaque to clients: base64 of (start_time, incident_id, direction) plus an
# HMAC, so a client cannot forge a position or reuse a cursor in the other direction.
def _cursor_mac(ctx: Context, payload: bytes) -> str:
    key = ctx.runtime.settings.resolved_secret_key().encode()
    digest = hmac.new(key, b"incident-list:" + payload, hashlib.sha256).digest()[:12]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _write_cursor(ctx: Context, start_time: int, incident_id: str, asc: bool) -> str:
    payload = msgspec.json.encode([start_time, incident_id, asc])
    body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    return f"{body}.{_cursor_mac(ctx, payload)}"


def _read_cursor(ctx: Context, cursor: str, asc: bool) -> tuple[int, str]:
    bad = errors.invalid("search_after_ctx", "is not a valid cursor")
    body, _, mac = cursor.partition(".")
    try:
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise bad from None
    if not hmac.compare_digest(mac.encode(), _cursor_mac(ctx, payload).encode()):
        raise bad
    try:
        start_time, incident_id, was_asc = msgspec.json.decode(
            payload, type=tuple[int, str, bool])
    except msgspec.DecodeError:
        raise bad from None
    if was_asc != asc:
        raise errors.invalid("search_after_ctx", "was made for the other order (asc)")
    return start_time, incident_id


async def records(
    ctx: Context, rows: list[Row[Any]], *, with_alerts: bool = False
) -> list[IncidentInfo]:
    """Whole IncidentInfo records for a page of rows, with a fixed number of extra reads
    (and one more per incident when its alerts are embedded)."""
    return await records_of(
        ctx.conn, ctx.caller.account_id, rows, base_url=ctx.runtime.settings.base_url,
        alerts_scope=await visibility.scope(ctx) if with_alerts else None)


async def records_of(conn: AsyncConnection, account_id: int, rows: list[Row[Any]], *,
                     base_url: str,
                     alerts_scope: visibility.Scope | None = None) -> list[IncidentInfo]:
    """records() for services that take a connection and an actor; with `alerts_scope`,
    each incident's alerts visible in that scope are embedded."""
    if not rows:
        return []
    acct = await repo.account_row(conn, account_id)
    chans = await repo.channels(conn, account_id, {r.channel_id for r in rows})
    responders = {r.incident_id: _responders.decode(r.responders) for r in rows}
    people = await repo.members(
        conn, account_id, {p.person_id for rs in responders.values() for p in rs}
        | {i for r in rows for i in (r.creator_id, r.closer_id, r.owner_id)})
    integrations = await repo.integrations_by_incident(conn, [r.incident_id for r in rows])
    items: list[IncidentInfo] = []
    for r in rows:
        chan = chans.get(r.channel_id)
        for p in responders[r.incident_id]:
            person = people.get(p.person_id)
            if person is not None:
                p.person_name, p.email = person.member_name, person.email
        sources = integrations.get(r.incident_id, [])
        items.append(IncidentInfo(
            incident_id=r.incident_id, account_id=r.account_id, channel_id=r.channel_id,
            integration_id=r.integration_id,
            integration_ids=[i for i, _ in sources],
            integration_types=list(dict.fromkeys(t for _, t in sources)),
            dedup_key=r.dedup_key, equals_md5=r.equals_md5, start_time=r.start_time,
            end_time=r.end_time, last_time=r.last_time, ack_time=r.ack_time,
            close_time=r.close_time, creator_id=r.creator_id, closer_id=r.closer_id,
            owner_id=r.owner_id, incident_status=r.incident_status,
            incident_severity=r.incident_severity, progress=r.progress, title=r.title,
            description=r.description, ai_summary="", impact=r.impact,
            root_cause=r.root_cause, resolution=r.resolution, num=r.num,
            deleted_at=r.deleted_at, created_at=r.created_at, updated_at=r.updated_at,
            snoozed_before=r.snoozed_before, group_method=r.group_method,
            ever_muted=bool(r.ever_muted), labels=_json.decode(r.labels),
            fields=_json.decode(r.fields), assigned_to=_json.decode(r.assigned_to),
            alert_cnt=r.alert_cnt, active_alert_cnt=r.active_alert_cnt,
            alert_event_cnt=r.alert_event_cnt, responders=responders[r.incident_id],
            account_name=acct.account_name if acct else "",
            account_locale=acct.locale if acct else "",
            account_time_zone=acct.time_zone if acct else "",
            channel_name=chan.channel_name if chan else "",
            channel_status=chan.status if chan else "",
            detail_url=f"{base_url}/incident/detail/{r.incident_id}",
            silence_url=f"{base_url}/incident/silence/{r.incident_id}",
            post_mortem_id="", images=_images(r.images), manual_overrides=[],
            merged_into=r.merged_into or "",
            creator=_person(people, r.creator_id), closer=_person(people, r.closer_id),
            owner=_person(people, r.owner_id),
            # A member-created incident was reported by its creator.
            reporter_email=(people[r.creator_id].email if r.creator_id in people else None),
            integration_type=sources[0][1] if sources else None,
            # Channel link integrations do not exist here yet: none to render.
            links=[],
        ))
    if alerts_scope is not None:
        for item in items:
            rows_of = await repo.alert_page(conn, alerts_scope, item.incident_id, None, offset=0,
                                            limit=MAX_EMBEDDED_ALERTS)
            short = IncidentShort(incident_id=item.incident_id, title=item.title,
                                  progress=item.progress)
            item.alerts = [_alert_info(a, short, None) for a in rows_of]
    return items


def _person(people: dict[int, Any], person_id: int) -> PersonShort | None:
    found = people.get(person_id) if person_id else None
    if found is None:
        return None
    return PersonShort(person_id=person_id, person_name=found.member_name, email=found.email)


async def incident_feed(ctx: Context, req: ListIncidentFeedRequest) -> ListIncidentFeedResponse:
    incident_id = req.incident_id.lower()
    if await repo.find(ctx.conn, await visibility.scope(ctx), incident_id) is None:
        raise errors.not_found("incident", req.incident_id)
    rows = await repo.feed_page(ctx.conn, ctx.caller.account_id, incident_id,
                                types=list(dict.fromkeys(req.types)), asc=req.asc,
                                offset=req.offset, limit=req.limit + 1)
    items = [
        IncidentFeedItem(
            ref_id=r.incident_id, type=r.type,
            detail=feed.reference_detail(r.type, _json.decode(r.detail)),
            account_id=r.account_id, creator_id=r.creator_id,
            # Stored in seconds; the reference's IncidentFeedItem speaks milliseconds.
            creator_name=r.member_name or "", deleted_at=0, created_at=r.created_at * 1000,
            updated_at=r.created_at * 1000,
        )
        for r in rows[: req.limit]
    ]
    return ListIncidentFeedResponse(has_next_page=len(rows) > req.limit, items=items)


async def incident_alerts(
    ctx: Context, req: ListIncidentAlertsRequest
) -> ListIncidentAlertsResponse:
    scope = await visibility.scope(ctx)
    inc = await repo.find(ctx.conn, scope, req.incident_id.lower())
    if inc is None:
        raise errors.not_found("incident", req.incident_id)
    total = await repo.alert_count(ctx.conn, scope, inc.incident_id, req.is_active)
    rows = await repo.alert_page(ctx.conn, scope, inc.incident_id, req.is_active,
                                 offset=(req.p - 1) * req.limit, limit=req.limit)
    history = (await repo.alert_events(ctx.conn, [r.alert_id for r in rows])
               if req.include_events else {})
    short = IncidentShort(incident_id=inc.incident_id, title=inc.title, progress=inc.progress)
    items = [
        _alert_info(r, short, [_event(e) for e in history.get(r.alert_id, [])]
                    if req.include_events else None)
        for r in rows
    ]
    return ListIncidentAlertsResponse(items=items, total=total)


def _alert_info(r: Row[Any], short: IncidentShort,
                events: list[AlertEventItem] | None) -> AlertInfo:
    return AlertInfo(
        alert_id=r.alert_id, integration_id=r.integration_id,
        data_source_id=r.integration_id, channel_id=r.channel_id, account_id=r.account_id,
        description=r.description, title=r.title, title_rule=r.title_rule,
        alert_key=r.alert_key, alert_severity=r.alert_severity,
        alert_status=r.alert_status, start_time=r.start_time, last_time=r.last_time,
        end_time=r.end_time, labels=_json.decode(r.labels), ever_muted=bool(r.ever_muted),
        deleted_at=r.deleted_at, created_at=r.created_at, updated_at=r.updated_at,
        integration_name=r.integration_name or "",
        integration_type=r.integration_type or "standard", integration_ref_id="",
        channel_name=r.channel_name or "", channel_status=r.channel_status or "",
        responder_name="", responder_email="", incident=short, event_cnt=r.event_cnt,
        images=_images(r.images), data_source_name=r.integration_name or "",
        data_source_ref_id="", events=events,
    )


def _event(e: Row[Any]) -> AlertEventItem:
    return AlertEventItem(
        event_id=e.event_id, alert_id=e.alert_id, account_id=e.account_id,
        channel_id=e.channel_id, integration_id=e.integration_id, title=e.title,
        description=e.description, event_severity=e.event_severity,
        event_status=e.event_status, event_time=e.event_time, labels=_json.decode(e.labels),
        images=_images(e.images), created_at=e.created_at,
    )
