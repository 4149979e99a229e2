"""Shared setup of the incident and alert neighbour tests: members with chosen permissions,
a private channel of one team, what the audit log and the event stream recorded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import select

from dutyline.db.tables.incident import alert
from dutyline.db.tables.platform import audit_log
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.conftest import Wired, event, push, wire
from tests.incident.ingest_support import all_rows


async def responder(api: Api, owner: Person, name: str) -> Person:
    """A member who may read and manage incidents, but is no admin."""
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    ids = [p["id"] for p in perms if p["permission_name"] in ("incident_manage", "channel_view")]
    role = await api.call("/role/upsert", {"role_name": f"Responders {name}",
                                           "permission_ids": ids}, key=owner.key)
    assert role.status == 200, role.body
    return await new_member(api, owner, name=name, builtin=None,
                            role_ids=[role.data["role_id"]])


@dataclass
class Private:
    wired: Wired
    insider: Person  # in the owning team
    outsider: Person  # same permissions, in no team


async def private_channel(api: Api, owner: Person) -> Private:
    insider = await responder(api, owner, "Ines")
    outsider = await responder(api, owner, "Otto")
    team = await api.call("/team/upsert", {"team_name": "Owning",
                                           "person_ids": [insider.person_id]}, key=owner.key)
    wired = await wire(api, owner, name="Secret", team_id=team.data["team_id"],
                       is_private=True)
    return Private(wired, insider, outsider)


async def incident_of_push(api: Api, wired: Wired, title: str = "disk full", *,
                           key: str = "k1", status: str = "Critical",
                           labels: dict[str, str] | None = None) -> tuple[str, str]:
    """(incident_id, alert_id) of a pushed alert."""
    reply = await push(api, wired.key, event(title, status, key=key, labels=labels or {}))
    assert reply.status == 200, reply.body
    (row,) = await all_rows(api, alert, alert.c.integration_id == wired.integration_id,
                            alert.c.alert_key == key, alert.c.end_time == 0)
    return str(row.incident_id), str(row.alert_id)


async def audited(api: Api, operation: str) -> list[dict[str, Any]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log).where(audit_log.c.operation == operation)
                                  .order_by(audit_log.c.id))
        return [{"outcome": r.outcome, "targets": msgspec.json.decode(r.target_ids),
                 "member_id": r.member_id} for r in rows]
