"""The lifecycle's reads for update and its writes of what is not a transition (the
transitions' own are incident/state/repository.py). Rows are read for update scoped by
`visibility.Scope` (the account, removed incidents and private channels the caller cannot see
hidden), so a cross-account, removed or hidden id is simply not found."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.paging import keyed
from dutyline.db.tables.incident import incident
from dutyline.incident import visibility
from dutyline.incident.visibility import Scope


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
