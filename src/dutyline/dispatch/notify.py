"""Notifying one layer: who its targets are at this moment, how each is reached, and a
delivery (its own durable job, written with the others of the transaction through the
caller's outbox) per recipient and channel. Assignments and notifications go
into the incident feed: `i_assign` when a layer begins, `i_notify` per delivery outcome
(written by the delivery job), and an `i_notify` "no responder" when a layer reaches nobody."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.runtime import Runtime
from dutyline.dispatch import compose, links, peers
from dutyline.dispatch import repository as repo
from dutyline.incident.service import IncidentInfo, feed, lifecycle
from dutyline.kit.channels import APP_TYPES, GROUP_ALIASES
from dutyline.kit.ids import hex_id
from dutyline.kit.outbound import redact_url
from dutyline.notify.delivery import service as delivery
from dutyline.notify.preference import service as preferences
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams
from dutyline.work import queue

# A rule's `by` without a list for the severity: e-mail.
DEFAULT_PREFERENCE = ("email",)
# The delivery channel of a webhook target's type, where it has another name (`custom`).
CHAT_TYPES = {**GROUP_ALIASES, **{name: name for name in GROUP_ALIASES.values()}}
# Settings of a chat target that travel with its deliveries (secrets stay sealed).
CHAT_SETTINGS = ("secret", "sign_secret", "token", "chat_id")


class PageOutbox(delivery.Outbox):
    """What an escalation transaction (a step, a batch of steps or of incident events)
    writes at its end, with the deliveries and jobs of delivery.Outbox: the dispatch
    states its steps leave, the layers it paged (their incidents' responders and
    `assigned_to`) and its feed entries. A batch of steps then updates its states in one
    executemany, locks and updates its incidents once and inserts its entries once,
    instead of three statements and an insert per step."""

    def __init__(self) -> None:
        super().__init__()
        self.assignments: dict[int, tuple[Actor, list[lifecycle.Assignment]]] = {}
        self.entries: list[feed.Entry] = []
        self.now_s = 0
        self.states: dict[str, dict[str, Any]] = {}  # updates of locked rows
        self.new_states: dict[str, dict[str, Any]] = {}  # rows to insert

    def begin_state(self, incident_id: str, values: dict[str, Any], *, new: bool) -> None:
        """The state a dispatch begins with (a whole new row, or an update of the locked
        one); its first step's `set_state` then lands in the same write."""
        if new:
            self.new_states[incident_id] = dict(values)
        else:
            self.set_state(incident_id, values)

    def set_state(self, incident_id: str, values: dict[str, Any]) -> None:
        """The dispatch state a step leaves (the row is locked by this transaction). Until
        `flush_states`, the row still reads as before: whoever reads it again in this
        transaction flushes first (`has_state`)."""
        if incident_id in self.new_states:
            self.new_states[incident_id].update(values)
        else:
            self.states[incident_id] = {**self.states.get(incident_id, {}), **values}

    def has_state(self, incident_id: str) -> bool:
        return incident_id in self.states or incident_id in self.new_states

    async def flush_states(self, conn: AsyncConnection) -> None:
        new, self.new_states = self.new_states, {}
        states, self.states = self.states, {}
        await repo.insert_states(conn, list(new.values()))
        await repo.update_states(conn, states)

    def assign(self, actor: Actor, assignment: lifecycle.Assignment) -> None:
        self.assignments.setdefault(actor.account_id, (actor, []))[1].append(assignment)

    def note(self, actor: Actor, incident_id: str, feed_type: str,
             detail: dict[str, Any]) -> None:
        """A feed entry written by the system (person 0)."""
        self.entries.append(feed.Entry(actor.account_id, incident_id, feed_type, detail))
        self.now_s = max(self.now_s, actor.now_s)

    async def flush(self, conn: AsyncConnection, handoff: queue.Handoff | None = None) -> None:
        await self.flush_states(conn)
        assignments, self.assignments = self.assignments, {}
        for actor, of_account in assignments.values():
            await lifecycle.assign_responders(conn, actor, of_account)
        entries, self.entries = self.entries, []
        if entries:
            await feed.add_many(conn, entries, creator_id=0, now_s=self.now_s)
        await super().flush(conn, handoff)


@dataclass(frozen=True)
class Reach:
    """Whom a target reaches at one moment, target by target: each team's members, and who
    each schedule has on call for its roles (a schedule that no longer exists is absent)."""

    person_ids: list[int]
    by_team: dict[int, list[int]]
    by_schedule: dict[int, list[int]]

    @property
    def everyone(self) -> list[int]:
        """Its persons, its teams' members, its schedules' on-call (each once, in order)."""
        ids = list(self.person_ids)
        for persons in [*self.by_team.values(), *self.by_schedule.values()]:
            ids += persons
        return list(dict.fromkeys(ids))


async def target_reach(conn: AsyncConnection, actor: Actor, target: dict[str, Any],
                       at_s: int) -> Reach:
    """Whom a layer's target reaches at `at_s`, part by part (what paging reads)."""
    team_ids = [int(t) for t in target.get("team_ids") or []]
    by_team = await teams.person_ids_of_teams(conn, actor, team_ids)
    schedules = {int(k): list(v) for k, v in (target.get("schedule_to_role_ids") or {}).items()}
    oncall = await peers.oncall(conn, actor, schedules, at_s) if schedules else {}
    return Reach([int(p) for p in target.get("person_ids") or []],
                 {tid: list(by_team.get(tid, [])) for tid in team_ids},
                 {sid: list(oncall[sid]) for sid in schedules if sid in oncall})


async def target_person_ids(conn: AsyncConnection, actor: Actor,
                            target: dict[str, Any]) -> list[int]:
    """Who a target reaches now: its persons, its teams' members, whoever its schedules
    have on call (each once, in that order)."""
    return (await target_reach(conn, actor, target, actor.now_s)).everyone


def app_chat_ids(settings: dict[str, Any]) -> list[str]:
    """The group chats of an app target: `chat_ids` (the reference), or one `chat_id`."""
    ids = settings.get("chat_ids") or ([settings["chat_id"]] if settings.get("chat_id") else [])
    return list(dict.fromkeys(str(i).strip() for i in ids if str(i).strip()))


def channels_for(by: dict[str, Any] | None, severity: str) -> list[str]:
    """The rule's own channels for the severity (when it does not follow preferences)."""
    if by is None:
        return []
    return list(by.get(severity.lower()) or DEFAULT_PREFERENCE)


def personal_content(channel: str, info: IncidentInfo, person_links: dict[str, str],
                      rendered: str | None) -> dict[str, Any]:
    if channel == "email":
        return compose.email(info, person_links, rendered)
    if channel == "sms":
        return {"text": compose.sms_text(info, person_links, rendered)}
    if channel == "voice":
        # The call gathers a keypress; "1" acknowledges, through this signed callback URL.
        return {"text": compose.voice_text(info, rendered),
                "gather_url": person_links["voice"]}
    return {"text": compose.personal_chat_text(info, person_links, rendered)}


async def notify_layer(conn: AsyncConnection, runtime: Runtime, actor: Actor, *,
                       outbox: PageOutbox, info: IncidentInfo, rule: dict[str, Any],
                       layer_idx: int, fire_type: str, run_id: str, assign_type: str,
                       announce: bool) -> None:
    target: dict[str, Any] = rule["layers"][layer_idx].get("target") or {}
    now = actor.now_s
    people = await members.contacts(conn, actor,
                                    await target_person_ids(conn, actor, target))
    assigned_to = {"escalate_rule_id": rule["rule_id"], "escalate_rule_name": rule["rule_name"],
                   "layer_idx": layer_idx, "type": assign_type, "id": run_id,
                   "assigned_at": now}
    if announce:  # the engine acts as the system (person 0): the entries name no creator
        outbox.assign(actor, lifecycle.Assignment(info.incident_id, sorted(people),
                                                  assigned_to))
        outbox.note(actor, info.incident_id, "i_assign", {**assigned_to, "to": sorted(people)})
    common = {"incident_id": info.incident_id, "channel_id": info.channel_id,
              "rule_id": rule["rule_id"], "rule_name": rule["rule_name"],
              "layer_idx": layer_idx, "fire_type": fire_type}
    made = 0
    key = await links.server_key(runtime.settings)
    by: dict[str, Any] | None = target.get("by")
    follow = bool(by and by.get("follow_preference"))
    channels = channels_for(by, info.incident_severity)
    prefs = await preferences.preferences(conn, actor, sorted(people))
    rendered: dict[str, str | None] = {}

    async def render(channel: str) -> str | None:
        if channel not in rendered:
            rendered[channel] = await peers.render(
                conn, actor, template_id=rule.get("template_id", ""), channel=channel,
                incident_id=info.incident_id, deps=runtime.deps)
        return rendered[channel]

    for person in people.values():
        person_links = links.links_for(runtime.settings, key, account_id=actor.account_id,
                                       person_id=person.person_id,
                                       incident_id=info.incident_id, now_s=now)
        pref = prefs[person.person_id]
        wanted = pref.channels(info.incident_severity) if follow else channels
        for channel in wanted:
            content = personal_content(channel, info, person_links,
                                              await render(channel))
            outbox.add(actor, **common, channel=channel, person_id=person.person_id,
                       address=preferences.address(person, pref, channel), content=content)
            made += 1
    open_only = {"open": info.detail_url}
    for address in target.get("emails") or []:
        outbox.add(actor, **common, channel="email", person_id=0, address=address,
                   content=compose.email(info, open_only, await render("email")))
        made += 1
    for hook in target.get("webhooks") or []:
        kind = str(hook.get("type", ""))
        settings: dict[str, Any] = hook.get("settings") or {}
        if kind in APP_TYPES:
            # One delivery per group chat, posted by the server's app for the platform.
            text = compose.chat_text(info, await render(kind))
            for chat_id in app_chat_ids(settings):
                outbox.add(actor, **common, channel=kind, person_id=0, address=chat_id,
                           content={"text": text, "alias": settings.get("alias", ""),
                                    "data_source_id": settings.get("data_source_id", 0)})
                made += 1
            continue
        channel = CHAT_TYPES.get(kind, kind)
        url = str(settings.get("url", ""))
        event_id = hex_id()
        content = {"url": url, **{k: settings[k] for k in CHAT_SETTINGS if settings.get(k)}}
        if channel == "webhook":
            content["body"] = compose.webhook_payload(info, event_id=event_id,
                                                      now_ms=actor.now_ms,
                                                      assigned_to=assigned_to)
        else:
            content["text"] = compose.chat_text(info, await render(channel))
        outbox.add(actor, **common, channel=channel, person_id=0, address=redact_url(url),
                   content=content, delivery_id=event_id)
        made += 1
    if made == 0:
        outbox.note(actor, info.incident_id, "i_notify", {
            "fire_type": fire_type, "escalate_rule_id": rule["rule_id"],
            "escalate_rule_name": rule["rule_name"], "layer_idx": layer_idx,
            "by": "", "persons": [], "failed_reason": "no responder"})
