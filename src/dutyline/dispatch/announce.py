"""What the custom webhooks of an escalation hear after the page: the acknowledgement
(`i_ack`) and the resolution (`i_rslv`) of its incident, in the incident webhook shape of
the page itself (`i_assign`), with `person`, the member who acted.

Only the webhooks of the layers this escalation has paged hear them (a receiver that never
heard of the incident is told nothing), each URL once. A delivery of its own per webhook,
signed and retried like the page, goes into the event's outbox."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.runtime import Runtime
from dutyline.dispatch import compose, engine
from dutyline.dispatch.notify import CHAT_SETTINGS, CHAT_TYPES, PageOutbox
from dutyline.incident.service import IncidentEvent
from dutyline.kit.ids import hex_id
from dutyline.kit.outbound import redact_url
from dutyline.platform.member import service as members

_json = msgspec.json.Decoder()


def paged_webhooks(state: Any) -> list[tuple[int, dict[str, Any]]]:
    """(layer index, settings) of the custom webhooks the escalation in `state` has paged:
    those of its layers up to the current one, once a notification went out in this run."""
    if state is None or state.status == engine.STOPPED or not int(state.last_notified_at):
        return []
    layers: list[dict[str, Any]] = _json.decode(state.rule)["layers"]
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    for idx, layer in enumerate(layers[: int(state.layer_idx) + 1]):
        for hook in (layer.get("target") or {}).get("webhooks") or []:
            settings: dict[str, Any] = hook.get("settings") or {}
            url = str(settings.get("url", ""))
            if CHAT_TYPES.get(str(hook.get("type", ""))) == "webhook" and url:
                found.setdefault(url, (idx, settings))
    return list(found.values())


async def _person(conn: AsyncConnection, actor: Actor, person_id: int) -> dict[str, Any] | None:
    if not person_id:
        return None  # the system (alerts recovered, auto-resolve): nobody to name
    people = await members.contacts(conn, actor, [person_id])
    person = people.get(person_id)
    return {"person_id": person_id, "person_name": person.person_name if person else "",
            "email": person.email if person else ""}


async def state_change(conn: AsyncConnection, runtime: Runtime, actor: Actor, *,
                       outbox: PageOutbox, state: Any, event: IncidentEvent,
                       event_type: str) -> None:
    """Tell the paged webhooks of `state` (the escalation as it was before the event)
    about `event` (acknowledged or resolved) as `event_type`."""
    hooks = paged_webhooks(state)
    if not hooks:
        return
    info = await engine.incident_record(conn, runtime, actor.account_id, event.incident_id)
    if info is None:
        return  # removed since: nothing to describe
    rule = _json.decode(state.rule)
    person = await _person(conn, actor, event.person_id)
    for layer_idx, settings in hooks:
        url = str(settings["url"])
        event_id = hex_id()
        content = {"url": url, **{k: settings[k] for k in CHAT_SETTINGS if settings.get(k)}}
        content["body"] = compose.webhook_payload(
            info, event_id=event_id, now_ms=actor.now_ms, assigned_to=info.assigned_to or {},
            event_type=event_type, person=person)
        outbox.add(actor, incident_id=info.incident_id, channel_id=info.channel_id,
                   rule_id=rule["rule_id"], rule_name=rule["rule_name"], layer_idx=layer_idx,
                   fire_type="fire", channel="webhook", person_id=0, address=redact_url(url),
                   content=content, delivery_id=event_id)
