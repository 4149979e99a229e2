"""What a channel notification rule sends when an incident event it tells of happens: one
delivery (a row and its durable job, through delivery's outbox, in the event job's own
transaction) per recipient and channel, recorded like an escalation's pages (the rule's id
and name in the delivery's rule fields, layer 0) and reported in the incident feed by the
delivery job (`i_notify`).

Exactly once per rule and event: the rule claims the event (`channel_notify_sent`) in the
transaction that writes its deliveries, so an event job that runs again after it committed
sends nothing twice, and one that rolled back sends nothing at all.

What it says: the texts of escalation's pages (dispatch/compose.py, or the rule's template),
led, for any event but a new incident, by what happened ("Acknowledged by Alice: ..."); a
custom webhook gets the incident webhook body with the event's feed type (`i_ack`...) and
the member who acted."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.runtime import Runtime
from dutyline.api.unit import system_actor
from dutyline.dispatch import compose, engine, links, peers
from dutyline.dispatch.notify import (
    CHAT_SETTINGS,
    CHAT_TYPES,
    app_chat_ids,
    channels_for,
    personal_content,
    target_person_ids,
)
from dutyline.dispatch.notify_rule import repository as repo
from dutyline.incident.service import IncidentEvent, IncidentInfo, events
from dutyline.kit.channels import APP_TYPES
from dutyline.kit.ids import hex_id
from dutyline.kit.outbound import redact_url
from dutyline.notify.delivery import service as delivery
from dutyline.notify.preference import service as preferences
from dutyline.platform.member import service as members
from dutyline.work import queue

# The incident events a rule can tell of, by the feed type a rule names them with.
EVENT_TYPE_OF_KIND = {
    events.CREATED: "i_new", events.ACKED: "i_ack", events.UNACKED: "i_unack",
    events.RESOLVED: "i_rslv", events.REOPENED: "i_reopen", events.SNOOZED: "i_snooze",
    events.WOKEN: "i_wake",
}
# What leads a notice of each event (a new incident: nothing, it reads as a page).
HEADINGS = {"i_ack": "Acknowledged", "i_unack": "Acknowledgement removed",
            "i_rslv": "Resolved", "i_reopen": "Reopened", "i_snooze": "Snoozed",
            "i_wake": "Woken"}

_json = msgspec.json.Decoder()


def heading(event_type: str, person: dict[str, Any] | None) -> str:
    """'Acknowledged by Alice', 'Resolved' (by the system), '' for a new incident."""
    lead = HEADINGS.get(event_type, "")
    if lead and person and person.get("person_name"):
        lead += f" by {person['person_name']}"
    return lead


def _led(lead: str, channel: str, content: dict[str, Any]) -> dict[str, Any]:
    """The content of a page, led by what happened."""
    if not lead:
        return content
    if channel == "email":
        return {**content, "subject": f"{lead}: {content['subject']}"}
    if channel == "voice":
        return {**content, "text": f"{lead}. {content['text']}"}
    return {**content, "text": f"{lead}\n{content['text']}"}


async def _actor_person(conn: AsyncConnection, actor: Actor,
                        person_id: int) -> dict[str, Any] | None:
    """The member who acted (None: the system, as for alerts recovered)."""
    if not person_id:
        return None
    person = (await members.contacts(conn, actor, [person_id])).get(person_id)
    return {"person_id": person_id, "person_name": person.person_name if person else "",
            "email": person.email if person else ""}


async def notify(conn: AsyncConnection, runtime: Runtime, actor: Actor, *,
                 outbox: delivery.Outbox, info: IncidentInfo, rule: Any, event_type: str,
                 person: dict[str, Any] | None) -> int:
    """Write the rule's deliveries for this event into `outbox`; returns how many."""
    target: dict[str, Any] = _json.decode(rule.target)
    lead = heading(event_type, person)
    now = actor.now_s
    people = await members.contacts(conn, actor,
                                    await target_person_ids(conn, actor, target))
    common = {"incident_id": info.incident_id, "channel_id": info.channel_id,
              "rule_id": rule.rule_id, "rule_name": rule.rule_name, "layer_idx": 0,
              "fire_type": "fire"}
    rendered: dict[str, str | None] = {}

    async def render(channel: str) -> str | None:
        if channel not in rendered:
            rendered[channel] = await peers.render(
                conn, actor, template_id=rule.template_id, channel=channel,
                incident_id=info.incident_id, deps=runtime.deps)
        return rendered[channel]

    made = 0
    by: dict[str, Any] | None = target.get("by")
    follow = bool(by and by.get("follow_preference"))
    chosen = channels_for(by, info.incident_severity)
    prefs = await preferences.preferences(conn, actor, sorted(people))
    key = await links.server_key(runtime.settings) if people else ""
    for contact in people.values():
        person_links = links.links_for(runtime.settings, key, account_id=actor.account_id,
                                       person_id=contact.person_id,
                                       incident_id=info.incident_id, now_s=now)
        pref = prefs[contact.person_id]
        for channel in (pref.channels(info.incident_severity) if follow else chosen):
            content = personal_content(channel, info, person_links, await render(channel))
            outbox.add(actor, **common, channel=channel, person_id=contact.person_id,
                       address=preferences.address(contact, pref, channel),
                       content=_led(lead, channel, content))
            made += 1
    for address in target.get("emails") or []:
        content = compose.email(info, {"open": info.detail_url}, await render("email"))
        outbox.add(actor, **common, channel="email", person_id=0, address=address,
                   content=_led(lead, "email", content))
        made += 1
    for hook in target.get("webhooks") or []:
        made += await _hook(actor, outbox, info, hook, common, lead, event_type, person,
                            render)
    return made


async def _hook(actor: Actor, outbox: delivery.Outbox, info: IncidentInfo,
                hook: dict[str, Any], common: dict[str, Any], lead: str, event_type: str,
                person: dict[str, Any] | None, render: Any) -> int:
    kind = str(hook.get("type", ""))
    settings: dict[str, Any] = hook.get("settings") or {}
    if kind in APP_TYPES:
        # One delivery per group chat, posted by the server's app for the platform.
        text = _led(lead, kind, {"text": compose.chat_text(info, await render(kind))})["text"]
        chats = app_chat_ids(settings)
        for chat_id in chats:
            outbox.add(actor, **common, channel=kind, person_id=0, address=chat_id,
                       content={"text": text, "alias": settings.get("alias", ""),
                                "data_source_id": settings.get("data_source_id", 0)})
        return len(chats)
    channel = CHAT_TYPES.get(kind, kind)
    url = str(settings.get("url", ""))
    event_id = hex_id()
    content: dict[str, Any] = {
        "url": url, **{k: settings[k] for k in CHAT_SETTINGS if settings.get(k)}}
    if channel == "webhook":
        content["body"] = compose.webhook_payload(
            info, event_id=event_id, now_ms=actor.now_ms, assigned_to=info.assigned_to or {},
            event_type=event_type, person=person)
    else:
        content["text"] = _led(lead, channel,
                               {"text": compose.chat_text(info, await render(channel))})["text"]
    outbox.add(actor, **common, channel=channel, person_id=0, address=redact_url(url),
               content=content, delivery_id=event_id)
    return 1


async def on_event(conn: AsyncConnection, runtime: Runtime, event: IncidentEvent,
                   handoff: queue.Handoff | None = None) -> int:
    """Every enabled rule of the incident's channel that tells of this event and whose
    filters match the incident (time filters: at the event's moment) notifies its targets,
    once. Returns the number of deliveries made."""
    event_type = EVENT_TYPE_OF_KIND.get(event.kind)
    if event_type is None:
        return 0
    actor = system_actor(event.account_id, runtime.clock)
    info = await engine.incident_record(conn, runtime, event.account_id, event.incident_id)
    if info is None or not info.channel_id:
        return 0
    rules = [r for r in await repo.list_rules(conn, event.account_id, info.channel_id,
                                              enabled_only=True)
             if event_type in _json.decode(r.events)]
    subject = peers.filter_subject(info)
    outbox = delivery.Outbox()
    made = 0
    person: dict[str, Any] | None = None
    for rule in rules:
        if not await peers.rule_matches(conn, actor, rule.filters, rule.time_filters, subject,
                                        event.created_at, info.account_time_zone):
            continue
        if not await repo.claim_event(conn, rule.rule_id, event.id, event.incident_id,
                                      actor.now_s):
            continue  # told already, by a run of this job that committed
        if person is None:
            person = await _actor_person(conn, actor, event.person_id)
        made += await notify(conn, runtime, actor, outbox=outbox, info=info, rule=rule,
                             event_type=event_type, person=person)
    await outbox.flush(conn, handoff)
    return made
