"""Reading alerts: filters checked here, rows turned into reference records. Alerts of a private
channel the caller cannot see are left out of every read (incident/visibility.py)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.operation import Context
from dutyline.api.types import MAX_PAGE_WINDOW
from dutyline.incident import visibility
from dutyline.incident.alert import repository as repo
from dutyline.incident.alert.schemas import (
    MAX_SPAN_S,
    AlertEventGlobalListResponse,
    AlertEventItem,
    AlertEventListRequest,
    AlertEventListResponse,
    AlertFeedItem,
    AlertFeedResponse,
    AlertItem,
    AlertListRequest,
    AlertListResponse,
    AlertLookup,
    IncidentShort,
    images_of,
    labels_of,
)
from dutyline.incident.ingest.channels import integrations_of_types, names

SEVERITIES = ("Critical", "Warning", "Info", "Ok")


def _severities(value: str, field: str = "alert_severity") -> list[str]:
    wanted = [s.strip() for s in value.split(",") if s.strip()]
    for s in wanted:
        if s not in SEVERITIES:
            raise errors.invalid(field, "must be Critical, Warning, Info or Ok")
    return wanted


def _page_from_cursor(cursor: str) -> int:
    """search_after_ctx is opaque to clients; ours names the next page."""
    try:
        p = int(base64.urlsafe_b64decode(cursor.encode()).decode().removeprefix("p:"))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise errors.invalid("search_after_ctx") from None
    if p < 1:
        raise errors.invalid("search_after_ctx")
    return p


def _cursor(p: int) -> str:
    return base64.urlsafe_b64encode(f"p:{p}".encode()).decode()


async def list_alerts(ctx: Context, req: AlertListRequest) -> AlertListResponse:
    if req.end_time < req.start_time:
        raise errors.invalid("end_time", "must be after start_time")
    if req.end_time - req.start_time > MAX_SPAN_S:
        raise errors.invalid("end_time", "must be at most 31 days after start_time")
    p = _page_from_cursor(req.search_after_ctx) if req.search_after_ctx else req.p
    if p * req.limit > MAX_PAGE_WINDOW:
        raise errors.invalid("p", f"p × limit must not exceed {MAX_PAGE_WINDOW}")
    filters: dict[str, Any] = {
        "start_time": req.start_time, "end_time": req.end_time,
        "by_updated_at": req.by_updated_at, "channel_ids": req.channel_ids,
        "integration_ids": req.integration_ids, "alert_ids": req.alert_ids,
        "alert_keys": req.alert_keys, "severities": _severities(req.alert_severity),
        "is_active": req.is_active, "ever_muted": req.ever_muted,
    }
    offset = (p - 1) * req.limit
    scope = await visibility.scope(ctx)
    total, rows = await repo.list_alerts(
        ctx.conn, scope, filters, offset=offset, limit=req.limit,
        orderby=req.orderby, asc=req.asc,
    )
    has_next = offset + len(rows) < total
    return AlertListResponse(
        total=total, has_next_page=has_next,
        search_after_ctx=_cursor(p + 1) if has_next else "",
        items=await _items(ctx.conn, scope, rows),
    )


async def alert_info(ctx: Context, req: AlertLookup) -> AlertItem:
    scope = await visibility.scope(ctx)
    row = await repo.get_alert(ctx.conn, scope, req.alert_id)
    if row is None:
        raise errors.not_found("alert", req.alert_id)
    return (await _items(ctx.conn, scope, [row]))[0]


async def list_events(ctx: Context, req: AlertEventListRequest) -> AlertEventListResponse:
    account_id = ctx.caller.account_id
    parent = await repo.get_alert(ctx.conn, await visibility.scope(ctx), req.alert_id)
    if parent is None:
        raise errors.not_found("alert", req.alert_id)
    total, rows = await repo.list_events(
        ctx.conn, account_id, req.alert_id, offset=req.offset, limit=req.limit
    )
    found = await names(ctx.conn, account_id, (), [parent.integration_id])
    integration_type = found.integrations.get(parent.integration_id, ("", ""))[1]
    items = [
        AlertEventItem(
            event_id=r.event_id, alert_id=r.alert_id, account_id=r.account_id,
            channel_id=r.channel_id, integration_id=r.integration_id,
            integration_type=integration_type, data_source_id=r.integration_id,
            title=r.title, title_rule=parent.title_rule, description=r.description,
            alert_key=parent.alert_key, event_severity=r.event_severity,
            event_status=r.event_status, event_time=r.event_time, labels=labels_of(r.labels),
            images=images_of(r.images), created_at=r.created_at, updated_at=r.created_at,
            deleted_at=0,
        )
        for r in rows
    ]
    return AlertEventListResponse(
        total=total, has_next_page=req.offset + len(rows) < total, items=items
    )


async def list_by_ids(conn: AsyncConnection, actor: Actor, *,
                      alert_ids: Sequence[str]) -> AlertListResponse:
    """Every id must be a visible alert of the account, or the whole call fails naming the
    missing ones (reference: "any invalid ID causes the entire request to fail")."""
    ids = list(dict.fromkeys(i.lower() for i in alert_ids))
    scope = await visibility.scope_of(actor)
    found = await repo.find_many(conn, scope, ids)
    if missing := [i for i in ids if i not in found]:
        raise errors.ResourceNotFound("{field}: alerts not found: {ids}", field="alert_ids",
                                      ids=", ".join(missing))
    items = await _items(conn, scope, [found[i] for i in ids])
    return AlertListResponse(total=len(items), has_next_page=False, search_after_ctx="",
                             items=items)


async def alert_feed(
    conn: AsyncConnection, actor: Actor, *, alert_id: str, asc: bool = False,
    types: Sequence[str] = (), offset: int = 0, limit: int = 20,
) -> AlertFeedResponse:
    """An alert's activity, read from the alert itself: `a_new` when it was triggered (with
    its first event's severity and status), `a_close` when it ended. Alerts take no comments
    here, so there is no `a_comm`. Times in milliseconds (reference FeedItem)."""
    row = await repo.get_alert(conn, await visibility.scope_of(actor), alert_id.lower())
    if row is None:
        raise errors.not_found("alert", alert_id)
    first = await repo.first_event(conn, row.alert_id)
    severity = first.event_severity if first else row.alert_severity
    status = first.event_status if first else row.alert_severity
    entries = [AlertFeedItem(
        ref_id=row.alert_id, type="a_new", detail={"severity": severity, "status": status},
        account_id=row.account_id, creator_id=0, created_at=row.start_time * 1000,
        updated_at=row.start_time * 1000)]
    if row.end_time:
        entries.append(AlertFeedItem(
            ref_id=row.alert_id, type="a_close", detail={}, account_id=row.account_id,
            creator_id=0, created_at=row.end_time * 1000, updated_at=row.end_time * 1000))
    if types:
        entries = [e for e in entries if e.type in types]
    if not asc:
        entries.reverse()
    page = entries[offset:offset + limit]
    return AlertFeedResponse(has_next_page=offset + len(page) < len(entries), items=page)


EVENT_WINDOW_S = 86_400  # /alert-event/list without start_time: the last 24 hours


async def list_account_events(
    conn: AsyncConnection, actor: Actor, *, start_time: int | None = None,
    end_time: int | None = None, p: int = 1, limit: int = 20, search_after_ctx: str = "",
    integration_ids: Sequence[int] = (), integration_types: Sequence[str] = (),
    channel_ids: Sequence[int] = (), severities: str = "", asc: bool = False,
) -> AlertEventGlobalListResponse:
    """Raw events across the visible alerts of the account, newest first by default."""
    end = actor.now_s if end_time is None else end_time
    start = max(0, end - EVENT_WINDOW_S) if start_time is None else start_time
    if end < start:
        raise errors.invalid("end_time", "must be after start_time")
    if end - start > MAX_SPAN_S:
        raise errors.invalid("end_time", "must be at most 31 days after start_time")
    if search_after_ctx:
        p = _page_from_cursor(search_after_ctx)
    if p * limit > MAX_PAGE_WINDOW:
        raise errors.invalid("p", f"p × limit must not exceed {MAX_PAGE_WINDOW}")
    account_id = actor.account_id
    integrations: list[int] | None = None
    if integration_types:
        of_types = set(await integrations_of_types(conn, account_id, integration_types))
        integrations = ([i for i in integration_ids if i in of_types] if integration_ids
                        else sorted(of_types))
    elif integration_ids:
        integrations = list(integration_ids)
    filters: dict[str, Any] = {
        "start_time": start, "end_time": end, "channel_ids": list(channel_ids),
        "integration_ids": integrations, "severities": _severities(severities, "severities"),
    }
    offset = (p - 1) * limit
    total, rows = await repo.list_account_events(
        conn, await visibility.scope_of(actor), filters, offset=offset, limit=limit, asc=asc)
    found = await names(conn, account_id, (), (r.integration_id for r in rows))
    items = [
        AlertEventItem(
            event_id=r.event_id, alert_id=r.alert_id, account_id=r.account_id,
            channel_id=r.channel_id, integration_id=r.integration_id,
            integration_type=found.integrations.get(r.integration_id, ("", ""))[1],
            data_source_id=r.integration_id, title=r.title, title_rule=r.title_rule,
            description=r.description, alert_key=r.alert_key,
            event_severity=r.event_severity, event_status=r.event_status,
            event_time=r.event_time, labels=labels_of(r.labels), images=images_of(r.images),
            created_at=r.created_at, updated_at=r.created_at, deleted_at=0,
        )
        for r in rows
    ]
    has_next = offset + len(rows) < total
    return AlertEventGlobalListResponse(
        total=total, has_next_page=has_next,
        search_after_ctx=_cursor(p + 1) if has_next else "", items=items)


async def _items(conn: AsyncConnection, scope: visibility.Scope,
                 rows: Any) -> list[AlertItem]:
    found = await names(
        conn, scope.account_id, (r.channel_id for r in rows),
        (r.integration_id for r in rows),
    )
    briefs = await repo.incidents_brief(
        conn, scope, sorted({r.incident_id for r in rows if r.incident_id})
    )
    items = []
    for r in rows:
        channel_name, channel_status = found.channels.get(r.channel_id, ("", ""))
        integration_name, integration_type = found.integrations.get(r.integration_id, ("", ""))
        brief = briefs.get(r.incident_id) if r.incident_id else None
        items.append(AlertItem(
            alert_id=r.alert_id, integration_id=r.integration_id,
            data_source_id=r.integration_id, channel_id=r.channel_id, account_id=r.account_id,
            title=r.title, title_rule=r.title_rule, description=r.description,
            alert_severity=r.alert_severity, alert_status=r.alert_status,
            alert_key=r.alert_key, start_time=r.start_time, last_time=r.last_time,
            end_time=r.end_time, labels=labels_of(r.labels), ever_muted=bool(r.ever_muted),
            deleted_at=r.deleted_at, created_at=r.created_at, updated_at=r.updated_at,
            integration_name=integration_name, integration_type=integration_type,
            integration_ref_id="", channel_name=channel_name, channel_status=channel_status,
            responder_name="", responder_email="", event_cnt=r.event_cnt,
            images=images_of(r.images), data_source_name=integration_name,
            data_source_type=integration_type, data_source_ref_id="",
            incident=(IncidentShort(incident_id=r.incident_id, title=brief[0],
                                    progress=brief[1]) if brief else None),
            inhibited=bool(r.inhibited), inhibit_rule_id=r.inhibit_rule_id,
            inhibited_by=r.inhibited_by, silence_rule_id=r.silence_rule_id,
        ))
    return items
