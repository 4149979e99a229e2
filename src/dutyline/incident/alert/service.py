"""Reading alerts: filters checked here, rows turned into reference records. Alerts of a private
channel the caller cannot see are left out of every read (incident/visibility.py)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW
from dutyline.api.types import MAX_PAGE_WINDOW
from dutyline.incident import visibility
from dutyline.incident.alert import repository as repo
from dutyline.incident.alert.records import NO_NAMES, alert_fields, event_item
from dutyline.incident.alert.schemas import (
    MAX_SPAN_S,
    AlertEventGlobalListResponse,
    AlertEventListResponse,
    AlertFeedItem,
    AlertFeedResponse,
    AlertItem,
    AlertListResponse,
    IncidentShort,
)
from dutyline.incident.ingest.channels import integrations_of_types_sync, names_sync
from dutyline.kit.vocabulary import STATUSES

SEVERITIES = STATUSES  # an alert reads Ok once recovered

_json = msgspec.json.Decoder()


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


def _windowed_page(start: int, end: int, p: int, limit: int, search_after_ctx: str) -> int:
    """The page to read (a cursor names its own) of a window of at most 31 days; the window
    and the page must be in bounds."""
    if end < start:
        raise errors.invalid("end_time", "must be after start_time")
    if end - start > MAX_SPAN_S:
        raise errors.invalid("end_time", "must be at most 31 days after start_time")
    if search_after_ctx:
        p = _page_from_cursor(search_after_ctx)
    if p * limit > MAX_PAGE_WINDOW:
        raise errors.invalid("p", f"p × limit must not exceed {MAX_PAGE_WINDOW}")
    return p


@reads_sync(CHANNEL_VIEW)
def list_alerts_sync(
    conn: Connection, actor: Actor, *, start_time: int, end_time: int, p: int = 1,
    limit: int = 20, search_after_ctx: str = "", by_updated_at: bool = False,
    channel_ids: Sequence[int] = (), integration_ids: Sequence[int] = (),
    alert_ids: Sequence[str] = (), alert_keys: Sequence[str] = (), alert_severity: str = "",
    is_active: bool | None = None, ever_muted: bool | None = None,
    orderby: str = "created_at", asc: bool = False,
) -> AlertListResponse:
    """The visible alerts of a window (at most 31 days), filtered, by page or cursor."""
    p = _windowed_page(start_time, end_time, p, limit, search_after_ctx)
    filters: dict[str, Any] = {
        "start_time": start_time, "end_time": end_time,
        "by_updated_at": by_updated_at, "channel_ids": list(channel_ids),
        "integration_ids": list(integration_ids), "alert_ids": list(alert_ids),
        "alert_keys": list(alert_keys), "severities": _severities(alert_severity),
        "is_active": is_active, "ever_muted": ever_muted,
    }
    offset = (p - 1) * limit
    scope = visibility.scope_sync(conn, actor)
    total, rows = repo.list_alerts_sync(
        conn, scope, filters, offset=offset, limit=limit, orderby=orderby, asc=asc,
    )
    has_next = offset + len(rows) < total
    return AlertListResponse(
        total=total, has_next_page=has_next,
        search_after_ctx=_cursor(p + 1) if has_next else "",
        items=_items(conn, actor, scope, rows),
    )


@reads_sync(CHANNEL_VIEW)
def alert_info_sync(conn: Connection, actor: Actor, *, alert_id: str) -> AlertItem:
    """One alert the actor sees, with its incident and event count."""
    scope = visibility.scope_sync(conn, actor)
    row = repo.get_alert_sync(conn, scope, alert_id)
    if row is None:
        raise errors.not_found("alert", alert_id)
    return _items(conn, actor, scope, [row])[0]


@reads_sync(CHANNEL_VIEW)
def list_events_sync(conn: Connection, actor: Actor, *, alert_id: str, offset: int = 0,
                     limit: int = 100) -> AlertEventListResponse:
    """The raw events of an alert the actor sees, in arrival order."""
    account_id = actor.account_id
    parent = repo.get_alert_sync(conn, visibility.scope_sync(conn, actor), alert_id)
    if parent is None:
        raise errors.not_found("alert", alert_id)
    total, rows = repo.list_events_sync(conn, account_id, alert_id, offset=offset,
                                        limit=limit)
    found = names_sync(conn, actor, (), [parent.integration_id])
    integration_type = found.integrations.get(parent.integration_id, ("", ""))[1]
    items = [event_item(r, integration_type=integration_type, title_rule=parent.title_rule,
                        alert_key=parent.alert_key) for r in rows]
    return AlertEventListResponse(
        total=total, has_next_page=offset + len(rows) < total, items=items
    )


@reads_sync(CHANNEL_VIEW)
def list_by_ids_sync(conn: Connection, actor: Actor, *,
                     alert_ids: Sequence[str]) -> AlertListResponse:
    """Every id must be a visible alert of the account, or the whole call fails naming the
    missing ones (reference: "any invalid ID causes the entire request to fail")."""
    ids = list(dict.fromkeys(i.lower() for i in alert_ids))
    scope = visibility.scope_sync(conn, actor)
    found = repo.find_many_sync(conn, scope, ids)
    if missing := [i for i in ids if i not in found]:
        raise errors.ResourceNotFound("{field}: alerts not found: {ids}", field="alert_ids",
                                      ids=", ".join(missing))
    items = _items(conn, actor, scope, [found[i] for i in ids])
    return AlertListResponse(total=len(items), has_next_page=False, search_after_ctx="",
                             items=items)


@reads_sync(CHANNEL_VIEW)
def alert_feed_sync(
    conn: Connection, actor: Actor, *, alert_id: str, asc: bool = False,
    types: Sequence[str] = (), offset: int = 0, limit: int = 20,
) -> AlertFeedResponse:
    """An alert's activity: `a_new` when it was triggered (with its first event's severity
    and status), `a_comm` for the comment of each merge that moved it into its incident
    (`/alert/merge` with `comment`), `a_close` when it ended. Times in milliseconds
    (reference FeedItem)."""
    row = repo.get_alert_sync(conn, visibility.scope_sync(conn, actor), alert_id.lower())
    if row is None:
        raise errors.not_found("alert", alert_id)
    first = repo.first_event_sync(conn, row.alert_id)
    severity = first.event_severity if first else row.alert_severity
    status = first.event_status if first else row.alert_severity
    entries = [AlertFeedItem(
        ref_id=row.alert_id, type="a_new", detail={"severity": severity, "status": status},
        account_id=row.account_id, creator_id=0, created_at=row.start_time * 1000,
        updated_at=row.start_time * 1000)]
    for merge in repo.merge_entries_sync(conn, row.account_id, row.incident_id):
        detail = _json.decode(merge.detail)
        if detail.get("comment") and row.alert_id in detail.get("alert_ids", ()):
            entries.append(AlertFeedItem(
                ref_id=row.alert_id, type="a_comm", detail={"comment": detail["comment"]},
                account_id=row.account_id, creator_id=merge.creator_id,
                created_at=merge.created_at * 1000, updated_at=merge.created_at * 1000))
    if row.end_time:
        entries.append(AlertFeedItem(
            ref_id=row.alert_id, type="a_close", detail={}, account_id=row.account_id,
            creator_id=0, created_at=row.end_time * 1000, updated_at=row.end_time * 1000))
    entries.sort(key=lambda e: e.created_at)  # stable: a_new first within its second
    if types:
        entries = [e for e in entries if e.type in types]
    if not asc:
        entries.reverse()
    page = entries[offset:offset + limit]
    return AlertFeedResponse(has_next_page=offset + len(page) < len(entries), items=page)


EVENT_WINDOW_S = 86_400  # /alert-event/list without start_time: the last 24 hours


@reads_sync(CHANNEL_VIEW)
def list_account_events_sync(
    conn: Connection, actor: Actor, *, start_time: int | None = None,
    end_time: int | None = None, p: int = 1, limit: int = 20, search_after_ctx: str = "",
    integration_ids: Sequence[int] = (), integration_types: Sequence[str] = (),
    channel_ids: Sequence[int] = (), severities: str = "", asc: bool = False,
) -> AlertEventGlobalListResponse:
    """Raw events across the visible alerts of the account, newest first by default."""
    end = actor.now_s if end_time is None else end_time
    start = max(0, end - EVENT_WINDOW_S) if start_time is None else start_time
    p = _windowed_page(start, end, p, limit, search_after_ctx)
    integrations: list[int] | None = None
    if integration_types:
        of_types = set(integrations_of_types_sync(conn, actor, integration_types))
        integrations = ([i for i in integration_ids if i in of_types] if integration_ids
                        else sorted(of_types))
    elif integration_ids:
        integrations = list(integration_ids)
    filters: dict[str, Any] = {
        "start_time": start, "end_time": end, "channel_ids": list(channel_ids),
        "integration_ids": integrations, "severities": _severities(severities, "severities"),
    }
    offset = (p - 1) * limit
    total, rows = repo.list_account_events_sync(
        conn, visibility.scope_sync(conn, actor), filters, offset=offset, limit=limit,
        asc=asc)
    found = names_sync(conn, actor, (), (r.integration_id for r in rows))
    items = [
        event_item(r, integration_type=found.integrations.get(r.integration_id, NO_NAMES)[1],
                   title_rule=r.title_rule, alert_key=r.alert_key)
        for r in rows
    ]
    has_next = offset + len(rows) < total
    return AlertEventGlobalListResponse(
        total=total, has_next_page=has_next,
        search_after_ctx=_cursor(p + 1) if has_next else "", items=items)


def _items(conn: Connection, actor: Actor, scope: visibility.Scope,
           rows: Any) -> list[AlertItem]:
    found = names_sync(
        conn, actor, (r.channel_id for r in rows),
        (r.integration_id for r in rows),
    )
    briefs = repo.incidents_brief_sync(
        conn, scope, sorted({r.incident_id for r in rows if r.incident_id})
    )
    return [
        AlertItem(
            **alert_fields(r, integration=found.integrations.get(r.integration_id, NO_NAMES),
                           channel=found.channels.get(r.channel_id, NO_NAMES)),
            incident=_incident_short(r.incident_id, briefs),
            inhibited=bool(r.inhibited), inhibit_rule_id=r.inhibit_rule_id,
            inhibited_by=r.inhibited_by, silence_rule_id=r.silence_rule_id,
        )
        for r in rows
    ]


def _incident_short(incident_id: str,
                    briefs: dict[str, tuple[str, str]]) -> IncidentShort | None:
    brief = briefs.get(incident_id) if incident_id else None
    if brief is None:
        return None
    return IncidentShort(incident_id=incident_id, title=brief[0], progress=brief[1])
