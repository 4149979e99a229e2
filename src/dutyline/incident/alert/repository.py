"""Every alert query, scoped by `visibility.Scope`: an alert of another account, or of a private
channel the caller cannot see, is not found."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.incident import alert, alert_event, incident
from dutyline.incident import visibility
from dutyline.incident.visibility import Scope


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


async def list_alerts(
    conn: AsyncConnection, scope: Scope, f: dict[str, Any], *, offset: int, limit: int,
    orderby: str, asc: bool,
) -> tuple[int, Sequence[Row[Any]]]:
    where = _filters(scope, f)
    total = int((await conn.execute(select(func.count()).select_from(alert).where(*where)))
                .scalar_one())
    if total == 0 or offset >= total:
        return total, []
    column = alert.c.updated_at if orderby == "updated_at" else alert.c.created_at
    order = (column.asc(), alert.c.alert_id.asc()) if asc else (
        column.desc(), alert.c.alert_id.desc())
    rows = (await conn.execute(
        select(alert).where(*where).order_by(*order).offset(offset).limit(limit)
    )).all()
    return total, rows


async def get_alert(conn: AsyncConnection, scope: Scope, alert_id: str) -> Row[Any] | None:
    stmt = select(alert).where(alert.c.alert_id == alert_id, *visibility.alerts(scope))
    return (await conn.execute(stmt)).first()


async def incidents_brief(
    conn: AsyncConnection, scope: Scope, incident_ids: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """incident_id -> (title, progress), removed incidents included; an incident of a channel
    the caller cannot see (its alert was merged from a visible one) is left out."""
    if not incident_ids:
        return {}
    rows = await conn.execute(
        select(incident.c.incident_id, incident.c.title, incident.c.progress).where(
            incident.c.account_id == scope.account_id,
            incident.c.incident_id.in_(incident_ids),
            *visibility.channel_visible(incident.c.channel_id, scope),
        )
    )
    return {r[0]: (r[1], r[2]) for r in rows}


async def list_events(
    conn: AsyncConnection, account_id: int, alert_id: str, *, offset: int, limit: int
) -> tuple[int, Sequence[Row[Any]]]:
    where = (alert_event.c.alert_id == alert_id, alert_event.c.account_id == account_id)
    total = int((await conn.execute(
        select(func.count()).select_from(alert_event).where(*where))).scalar_one())
    rows = (await conn.execute(
        select(alert_event).where(*where)
        .order_by(alert_event.c.event_time, alert_event.c.event_id)
        .offset(offset).limit(limit)
    )).all()
    return total, rows
