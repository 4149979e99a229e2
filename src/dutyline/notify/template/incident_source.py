"""Template data from a real incident, read through the incident domain's service, so
visibility (account, private channels) is decided by the incident domain, exactly as for its
own endpoints."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.incident.service import query as incidents
from dutyline.notify.template.data import incident_data

MAX_ALERTS = 100  # alerts a template sees (the newest first pages of the incident's alerts)


async def incident_template_data(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                                 deps: Deps) -> dict[str, Any]:
    """ResourceNotFound when the incident is not one the actor may see."""
    info = await incidents.incident_info(conn, actor, incident_id=incident_id,
                                         deps=deps)
    alerts = await incidents.incident_alerts(conn, actor, incident_id=incident_id,
                                             limit=MAX_ALERTS)
    return incident_data(info, alerts.items)
