"""Every incident write of the lifecycle. Rows are read for update scoped by
`visibility.Scope` (the account, removed incidents and private channels the caller cannot see
hidden), so a cross-account, removed or hidden id is simply not found."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, case, func, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.paging import keyed
from dutyline.db.tables.incident import alert, incident
from dutyline.incident import visibility
from dutyline.incident.visibility import Scope
from dutyline.kit.vocabulary import OK


async def lock(conn: AsyncConnection, scope: Scope, ids: list[str]) -> dict[str, Row[Any]]:
    """The visible incidents among `ids`, locked for the rest of the transaction (PostgreSQL;
    SQLite writers are serialized anyway). Locked in id order, so two batches over the same
    incidents cannot deadlock."""
    if not ids:
        return {}
    stmt = (
        select(incident)
        .where(incident.c.incident_id.in_(ids), *visibility.incidents(scope))
        .order_by(incident.c.incident_id)
        .with_for_update()
    )
    return await keyed(conn, stmt, "incident_id")


async def update_incident(conn: AsyncConnection, incident_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        update(incident).where(incident.c.incident_id == incident_id).values(**values))


# Without .values(): the columns SET are the keys of the parameters it runs with.
_UPDATE_INCIDENT = update(incident).where(
    incident.c.incident_id == bindparam("changed_incident_id"))


async def update_incidents(conn: AsyncConnection, changes: dict[str, dict[str, Any]]) -> None:
    """Several incidents' updates of the same columns ({incident_id: new values}), in one
    executemany."""
    if changes:
        await conn.execute(_UPDATE_INCIDENT, [{"changed_incident_id": incident_id, **values}
                                              for incident_id, values in changes.items()])


async def resolve_alerts(conn: AsyncConnection, incident_id: str, now_s: int) -> int:
    """Recover the incident's active alerts with it; returns how many were active."""
    result = await conn.execute(
        update(alert)
        .where(alert.c.incident_id == incident_id, alert.c.end_time == 0)
        .values(end_time=now_s, alert_status=OK, updated_at=now_s)
    )
    return int(result.rowcount or 0)


async def move_alerts(conn: AsyncConnection, source_ids: list[str], target_id: str,
                      now_s: int) -> None:
    await conn.execute(
        update(alert).where(alert.c.incident_id.in_(source_ids))
        .values(incident_id=target_id, updated_at=now_s)
    )


async def alert_counts(conn: AsyncConnection, incident_id: str) -> tuple[int, int, int]:
    """(alerts, active alerts, alert events) of an incident, counted from its alerts."""
    stmt = select(
        func.count(),
        func.coalesce(func.sum(case((alert.c.end_time == 0, 1), else_=0)), 0),
        func.coalesce(func.sum(alert.c.event_cnt), 0),
    ).where(alert.c.incident_id == incident_id, alert.c.deleted_at == 0)
    total, active, events = (await conn.execute(stmt)).one()
    return int(total), int(active), int(events)




async def lock_in_account(conn: AsyncConnection, account_id: int,
                          ids: list[str]) -> dict[str, Row[Any]]:
    """Incidents of the account by id, whatever their channel, locked in id order: the
    incidents alerts are merged away from, whose counters must follow even when the caller
    cannot see them (an alert of a visible channel merged earlier into a private one)."""
    if not ids:
        return {}
    stmt = (select(incident)
            .where(incident.c.incident_id.in_(ids), incident.c.account_id == account_id)
            .order_by(incident.c.incident_id).with_for_update())
    return await keyed(conn, stmt, "incident_id")


async def active_alert_severities(conn: AsyncConnection, incident_id: str) -> list[str]:
    """The severities of the incident's active (not removed) alerts."""
    rows = await conn.execute(select(alert.c.alert_severity).where(
        alert.c.incident_id == incident_id, alert.c.end_time == 0, alert.c.deleted_at == 0))
    return [r[0] for r in rows]


async def move_alerts_by_id(conn: AsyncConnection, alert_ids: list[str], target_id: str,
                            now_s: int) -> None:
    await conn.execute(update(alert).where(alert.c.alert_id.in_(alert_ids))
                       .values(incident_id=target_id, updated_at=now_s))
