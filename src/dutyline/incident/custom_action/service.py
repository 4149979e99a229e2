"""Running a custom action on an incident (/incident/custom-action/do).

Two phases, so that a slow receiver holds no write lock (api/transaction.py): `call_action`
finds the incident (as the caller sees it) and the channel's custom action, and POSTs
(webhook.py); `record_answer` then writes the feed entry `i_custom` with what came back. A
failed call is not an error of the operation: the answer says why in `message`, and the feed
keeps it, as the reference describes."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.access import reads, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.channel.integration import service as integrations
from dutyline.incident import feed
from dutyline.incident.custom_action import webhook
from dutyline.incident.query import service as incidents
from dutyline.kit.ids import hex_id

EVENT_TYPE = feed.CUSTOM_ACTION


@dataclass(frozen=True, slots=True)
class Called:
    """One call of a custom action, for its feed entry."""

    incident_id: str
    integration_id: int
    integration_name: str
    event_id: str
    answer: webhook.Answer


@reads(INCIDENT_MANAGE)
async def call_action(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                      integration_id: int, deps: Deps) -> Called:
    """POST the incident to the custom action `integration_id` of its channel. The body:
    `event_type` (`i_custom`), `event_time` (ms), `event_id`, `action` (integration_id,
    integration_name), `person` (who ran it) and `incident` (the incident record with its
    first alerts)."""
    info = await incidents.incident_info(conn, actor, incident_id=incident_id, deps=deps,
                                         include_alerts=True)
    target = await integrations.custom_action_target(
        conn, actor, channel_id=info.channel_id, integration_id=integration_id, deps=deps)
    event_id = hex_id()
    body = msgspec.json.encode({
        "event_type": EVENT_TYPE, "event_time": actor.now_ms, "event_id": event_id,
        "action": {"integration_id": target.integration_id,
                   "integration_name": target.integration_name},
        "person": {"person_id": actor.person_id, "person_name": actor.person_name},
        "incident": info,
    })
    answer = await webhook.post(deps.policy, target.url, body, secret=target.signing_secret,
                                event_id=event_id, timestamp=actor.now_s)
    return Called(incident_id=info.incident_id, integration_id=target.integration_id,
                  integration_name=target.integration_name, event_id=event_id, answer=answer)


# Targets: the incident and the action (noted below); the result is a message, not an id.
@writes("/incident/custom-action/do", INCIDENT_MANAGE, targets=lambda _message: [])
async def record_answer(conn: AsyncConnection, actor: Actor, *, called: Called) -> str:
    """The feed entry of a call (written whatever happened to the incident meanwhile: the
    call was made); returns the reference's `message` (empty on success)."""
    actor.note_audit_targets(called.incident_id, called.integration_id)
    answer = called.answer
    await feed.add(conn, actor, incident_id=called.incident_id, feed_type=EVENT_TYPE, detail={
        "integration_id": called.integration_id,
        "integration_name": called.integration_name,
        "event_id": called.event_id,
        "status_code": answer.status_code,
        "response_body": answer.body_excerpt,
        "message": answer.message,
        "duration_ms": answer.duration_ms,
    })
    return answer.message
