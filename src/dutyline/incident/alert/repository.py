"""Every alert query, scoped by `visibility.Scope`: an alert of another account, or of a private
channel the caller cannot see, is not found."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, Select, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.paging import ordered
from dutyline.db.tables.incident import alert, alert_event, incident, incident_feed
from dutyline.incident import visibility
from dutyline.incident.visibility import Scope


def _counted_page(conn: Connection, count: Select[Any], page: Select[Any], *, offset: int,
                  limit: int) -> tuple[int, Sequence[Row[Any]]]:
    """(total, one page): the total first, and no page read past the end."""
    total = int(conn.execute(count).scalar_one())
    if total == 0 or offset >= total:
        return total, []
    return total, conn.execute(page.offset(offset).limit(limit)).all()


def _filters(scope: Scope, f: dict[str, Any]) -> list[Any]:
    time_col = alert.c.updated_at if f["by_updated_at"] else alert.c.start_time
    where = [
        *visibility.alerts(scope),
        time_col >= f["start_time"],
        time_col <= f["end_time"],
    ]
    if f["channel_ids"]:
        where.append(alert.c.channel_id.in_(f["channel_ids"]))
    if f["integration_ids"]:
        where.append(alert.c.integration_id.in_(f["integration_ids"]))
    if f["alert_ids"]:
        where.append(alert.c.alert_id.in_(f["alert_ids"]))
    if f["alert_keys"]:
        where.append(alert.c.alert_key.in_(f["alert_keys"]))
    if f["severities"]:
        where.append(alert.c.alert_severity.in_(f["severities"]))
    if f["is_active"] is not None:
        where.append(alert.c.end_time == 0 if f["is_active"] else alert.c.end_time != 0)
    if f["ever_muted"] is not None:
        where.append(alert.c.ever_muted.is_(bool(f["ever_muted"])))
    return where


def list_alerts_sync(
    conn: Connection, scope: Scope, f: dict[str, Any], *, offset: int, limit: int,
    orderby: str, asc: bool,
) -> tuple[int, Sequence[Row[Any]]]:
    where = _filters(scope, f)
    column = alert.c.updated_at if orderby == "updated_at" else alert.c.created_at
    return _counted_page(
        conn, select(func.count()).select_from(alert).where(*where),
        select(alert).where(*where).order_by(*ordered(column, alert.c.alert_id, asc=asc)),
        offset=offset, limit=limit)


def get_alert_sync(conn: Connection, scope: Scope, alert_id: str) -> Row[Any] | None:
    stmt = select(alert).where(alert.c.alert_id == alert_id, *visibility.alerts(scope))
    return conn.execute(stmt).first()


def incidents_brief_sync(
    conn: Connection, scope: Scope, incident_ids: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """incident_id -> (title, progress), removed incidents included; an incident of a channel
    the caller cannot see (its alert was merged from a visible one) is left out."""
    if not incident_ids:
        return {}
    rows = conn.execute(
        select(incident.c.incident_id, incident.c.title, incident.c.progress).where(
            incident.c.account_id == scope.account_id,
            incident.c.incident_id.in_(incident_ids),
            *visibility.channel_visible(incident.c.channel_id, scope),
        )
    )
    return {r[0]: (r[1], r[2]) for r in rows}


def list_events_sync(
    conn: Connection, account_id: int, alert_id: str, *, offset: int, limit: int
) -> tuple[int, Sequence[Row[Any]]]:
    where = (alert_event.c.alert_id == alert_id, alert_event.c.account_id == account_id)
    return _counted_page(
        conn, select(func.count()).select_from(alert_event).where(*where),
        select(alert_event).where(*where).order_by(
            *ordered(alert_event.c.event_time, alert_event.c.event_id, asc=True)),
        offset=offset, limit=limit)


def find_many_sync(conn: Connection, scope: Scope, alert_ids: Sequence[str],
                   *, lock: bool = False) -> dict[str, Row[Any]]:
    """The visible alerts among `alert_ids` (locked, in id order, for a write)."""
    if not alert_ids:
        return {}
    stmt = select(alert).where(alert.c.alert_id.in_(alert_ids), *visibility.alerts(scope))
    if lock:
        stmt = stmt.order_by(alert.c.alert_id).with_for_update()
    return {r.alert_id: r for r in conn.execute(stmt).all()}


async def find_many(conn: AsyncConnection, scope: Scope, alert_ids: Sequence[str],
                    *, lock: bool = False) -> dict[str, Row[Any]]:
    """`find_many_sync` on an async connection."""
    return await conn.run_sync(lambda sync: find_many_sync(sync, scope, alert_ids, lock=lock))


def first_event_sync(conn: Connection, alert_id: str) -> Any:
    stmt = (select(alert_event.c.event_severity, alert_event.c.event_status)
            .where(alert_event.c.alert_id == alert_id)
            .order_by(alert_event.c.event_time, alert_event.c.event_id).limit(1))
    return conn.execute(stmt).first()


EVENT_TOTAL_CAP = 10_000


def list_account_events_sync(
    conn: Connection, scope: Scope, f: dict[str, Any], *, offset: int, limit: int,
    asc: bool,
) -> tuple[int, Sequence[Row[Any]]]:
    """Events across the visible alerts of the account in a window (ix_alert_event_account_
    time), each with its alert's title rule and key."""
    where = [
        alert_event.c.account_id == scope.account_id,
        alert_event.c.event_time >= f["start_time"],
        alert_event.c.event_time <= f["end_time"],
        *visibility.alerts(scope),
    ]
    if f["channel_ids"]:
        where.append(alert_event.c.channel_id.in_(f["channel_ids"]))
    if f["integration_ids"] is not None:
        where.append(alert_event.c.integration_id.in_(f["integration_ids"]))
    if f["severities"]:
        where.append(alert_event.c.event_severity.in_(f["severities"]))
    joined = alert_event.join(alert, alert.c.alert_id == alert_event.c.alert_id)
    # The total counts at most EVENT_TOTAL_CAP events, as the reference's search-engine
    # backed list does: no page lies beyond it (p × limit ≤ 10,000), and counting a month of
    # a busy account's events in full cost 370 ms on SQLite (bench/alert_events.py).
    capped = select(alert_event.c.event_id).select_from(joined).where(*where).limit(
        EVENT_TOTAL_CAP).subquery()
    return _counted_page(
        conn, select(func.count()).select_from(capped),
        select(alert_event, alert.c.title_rule, alert.c.alert_key).select_from(joined)
        .where(*where)
        .order_by(*ordered(alert_event.c.event_time, alert_event.c.event_id, asc=asc)),
        offset=offset, limit=limit)


def merge_entries_sync(conn: Connection, account_id: int,
                       incident_id: str) -> Sequence[Row[Any]]:
    """The incident's feed entries of alerts merged into it (type `a_merge`), oldest first."""
    rows: Sequence[Row[Any]] = (conn.execute(
        select(incident_feed.c.creator_id, incident_feed.c.detail, incident_feed.c.created_at)
        .where(incident_feed.c.incident_id == incident_id,
               incident_feed.c.account_id == account_id,
               incident_feed.c.type == "a_merge")
        .order_by(incident_feed.c.id))).all()  # type: ignore[assignment,unused-ignore]
    return rows
