"""Template data from a real incident, read through the incident domain's service.

incident.query.service still takes an operation Context rather than `(conn, actor)`; until
it does, this module hands it a small view of the actor with the attributes those functions
read (conn, caller, runtime.settings.base_url, caller_team_ids), so visibility (account,
private channels) is decided by the incident domain, exactly as for its own endpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.operation import Context
from dutyline.incident.query import service as incidents
from dutyline.incident.service import IncidentInfoRequest, ListIncidentAlertsRequest
from dutyline.notify.template.data import incident_data

MAX_ALERTS = 100  # alerts a template sees (the newest first pages of the incident's alerts)


@dataclass
class _CallerView:
    account_id: int
    person_id: int
    person_name: str
    permissions: frozenset[str]
    is_admin: bool


class _ActorContext:
    def __init__(self, conn: AsyncConnection, actor: Actor, base_url: str) -> None:
        self.conn = conn
        self._actor = actor
        self.caller = _CallerView(actor.account_id, actor.person_id, actor.person_name,
                                  actor.permissions, actor.is_admin)
        self.runtime = SimpleNamespace(settings=SimpleNamespace(base_url=base_url))
        self.locale = "en-US"

    async def caller_team_ids(self) -> frozenset[int]:
        return await self._actor.team_ids()

    @property
    def actor(self) -> Actor:
        return self._actor


async def incident_template_data(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                                 base_url: str) -> dict[str, Any]:
    """ResourceNotFound when the incident is not one the actor may see."""
    ctx = cast(Context, _ActorContext(conn, actor, base_url))
    info = await incidents.incident_info(ctx, IncidentInfoRequest(incident_id=incident_id))
    alerts = await incidents.incident_alerts(
        ctx, ListIncidentAlertsRequest(incident_id=incident_id, limit=MAX_ALERTS))
    return incident_data(info, alerts.items)
