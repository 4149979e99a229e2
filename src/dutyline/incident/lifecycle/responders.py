"""Adding responders to an incident, and taking an incident out of alert grouping.

/incident/responder/add: the people join the incident's responders (not yet acknowledged),
the feed says so as the reference's FeedDetailIncidentAddRspd (`to`: the ids added), and a
`responders_added` event carries them, with the caller's notification override, to the
subscribers (the escalation engine notifies them). People already responding are skipped;
adding nobody new changes nothing and records nothing.

/incident/disable-merge: the incidents stop taking new alerts through grouping at ingest
(incident/ingest/grouping.py honours `merge_disabled`); later alerts of the group open or
join another incident. Manual merges are unaffected."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident import events, feed, references
from dutyline.incident.lifecycle import repository as repo
from dutyline.incident.lifecycle.common import (
    OPEN,
    dumps,
    load_all,
    loads,
    record,
    require_progress,
    responders_adding,
    unique_ids,
)
from dutyline.incident.lifecycle.schemas import RespondersInput as RespondersInput
from dutyline.platform.member import service as member_service


@writes("/incident/responder/add", INCIDENT_MANAGE, inputs=RespondersInput,
        targets=lambda _added: ())
async def add_responders(
    conn: AsyncConnection, actor: Actor, *, incident_id: str, person_ids: Sequence[int],
    notify: dict[str, Any] | None = None,
) -> list[int]:
    """Returns the person ids that were added (those not responding already)."""
    (row,) = await load_all(conn, actor, [incident_id.lower()], field="incident_id")
    actor.note_audit_targets(row.incident_id)
    require_progress([row], OPEN, "Closed incidents take no new responders",
                     field="incident_id")
    wanted = list(dict.fromkeys(person_ids))
    known = await member_service.existing_member_ids(conn, actor, wanted)
    if unknown := [p for p in wanted if p not in known]:
        raise errors.invalid("person_ids", "unknown members: " + ", ".join(map(str, unknown)))
    template_id = (notify or {}).get("template_id")
    if template_id and not await references.template_exists(conn, actor, template_id.lower()):
        raise errors.not_found("template", template_id)
    present = {r.get("person_id") for r in loads(row.responders)}
    added = [p for p in wanted if p not in present]
    if not added:
        return []
    now = actor.now_s
    await repo.update_incident(conn, row.incident_id, {
        "responders": dumps(responders_adding(row.responders, added, now)),
        "updated_at": now,
    })
    payload: dict[str, Any] = {"person_ids": added}
    if notify is not None:
        payload["notify"] = notify
    await record(conn, actor, row, feed_type=feed.ADD_RESPONDER, detail={"to": added},
                        kind=events.RESPONDERS_ADDED, payload=payload)
    return added


@writes("/incident/disable-merge", INCIDENT_MANAGE)
async def disable_merge(conn: AsyncConnection, actor: Actor, *,
                        incident_ids: Sequence[str]) -> list[str]:
    """All or nothing over visible incidents; already disabled ones stay so (no new event).
    Returns the incident ids (every one named, for the audit log)."""
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    for row in rows:
        if row.merge_disabled:
            continue
        await repo.update_incident(conn, row.incident_id,
                                   {"merge_disabled": True, "updated_at": actor.now_s})
        # The reference's feed has no entry type for it; the event and the audit log record it.
        await record(conn, actor, row, feed_type=None, detail={}, kind=events.UPDATED,
                            payload={"fields": ["merge_disabled"]})
    return [r.incident_id for r in rows]
