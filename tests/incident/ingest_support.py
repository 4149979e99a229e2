"""Readers of what ingestion left in the database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from dutyline.db.tables.incident import alert, alert_event, incident, incident_event
from dutyline.db.tables.work import job
from tests.fixtures.api import Api


async def all_rows(api: Api, table: Any, *where: Any) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        stmt = select(table).where(*where)
        return list((await conn.execute(stmt)).all())


async def count(api: Api, table: Any, *where: Any) -> int:
    async with api.runtime.db.connect() as conn:
        stmt = select(func.count()).select_from(table).where(*where)
        return int((await conn.execute(stmt)).scalar_one())


async def alerts_of(api: Api, integration_id: int) -> list[Any]:
    return sorted(await all_rows(api, alert, alert.c.integration_id == integration_id),
                  key=lambda r: (r.start_time, r.created_at, r.alert_id))


async def incidents_of(api: Api, channel_id: int) -> list[Any]:
    return sorted(await all_rows(api, incident, incident.c.channel_id == channel_id),
                  key=lambda r: (r.start_time, r.num))


async def incident_row(api: Api, incident_id: str) -> Any:
    (row,) = await all_rows(api, incident, incident.c.incident_id == incident_id)
    return row


async def events_of(api: Api, integration_id: int) -> list[Any]:
    return await all_rows(api, alert_event, alert_event.c.integration_id == integration_id)


async def stream_kinds(api: Api, incident_id: str) -> list[str]:
    rows = await all_rows(api, incident_event, incident_event.c.incident_id == incident_id)
    return [r.kind for r in sorted(rows, key=lambda r: r.id)]


async def jobs(api: Api, kind: str) -> list[Any]:
    return await all_rows(api, job, job.c.kind == kind)


__all__ = ["alert", "alert_event", "incident", "incident_event", "job"]
