"""Channel notification rules' entry point: an incident-event subscriber (send.py), run in
each event's own job transaction."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.dispatch.notify_rule import repository as repo
from dutyline.dispatch.notify_rule import send
from dutyline.incident.service import IncidentEvent, events
from dutyline.work.registry import JobContext


def wants_event_sync(conn: Connection, event: IncidentEvent) -> bool:
    """Whether any enabled rule could tell of the event: asked in the transaction that
    emits it, so an account (or channel) without rules queues no job. Events that do not
    name their channel (an auto-resolve) ask about the whole account."""
    channel_id = int(event.payload.get("channel_id") or 0)
    return repo.any_enabled_sync(conn, event.account_id, channel_id)


@events.subscriber("notify_rule", kinds=tuple(send.EVENT_TYPE_OF_KIND),
                   wants=wants_event_sync)
async def on_incident_event(ctx: JobContext, event: IncidentEvent) -> None:
    await send.on_event(ctx.conn, ctx.runtime, event, ctx.handoff)
