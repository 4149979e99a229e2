"""Per-person iCalendar feeds of on-call shifts, at a secret URL.

The URL carries a random token; only its SHA-256 is stored, so the URL is shown once (at
creation or rotation). Rotating replaces it, revoking deletes it; either way the old URL
answers 404 from then on. A member removed from the account has no feed. Every member may
manage their own feed, and only their own; creating and revoking are audited (the member)."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.unit import system_actor
from dutyline.kit.clock import Clock
from dutyline.platform.member import service as member_service
from dutyline.schedule import definition, ical, oncall, repository, timeline
from dutyline.schedule.localtime import zone

TOKEN_PREFIX = "dlcal_"
FEED_PATH = "/ical/oncall/{token}.ics"
PAST_S = 7 * 86_400
AHEAD_S = 90 * 86_400


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def feed_url(base_url: str, token: str) -> str:
    return base_url.rstrip("/") + FEED_PATH.format(token=token)


# The URL carries the secret: the audit entry names the member, never the result.
@writes("/schedule/feed/create", targets=lambda _url_and_time: ())
async def create_feed(conn: AsyncConnection, actor: Actor, *, deps: Deps) -> tuple[str, int]:
    if not actor.person_id:
        raise errors.invalid("app_key", "the calendar feed belongs to a member")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    await repository.put_feed(conn, actor.account_id, actor.person_id, token_hash(token),
                              actor.now_s)
    actor.note_audit_targets(actor.person_id)
    return feed_url(deps.base_url, token), actor.now_s


def feed_created_at_sync(conn: Connection, actor: Actor) -> int | None:
    row = repository.feed_of_sync(conn, actor.account_id, actor.person_id)
    return None if row is None else int(row.created_at)


@writes("/schedule/feed/revoke")
async def revoke_feed(conn: AsyncConnection, actor: Actor) -> None:
    if not await repository.delete_feed(conn, actor.account_id, actor.person_id):
        raise errors.not_found("calendar feed of member", actor.person_id)
    actor.note_audit_targets(actor.person_id)


async def render_feed(conn: AsyncConnection, token: str, clock: Clock) -> bytes | None:
    """The calendar of the feed's person, or None when the token names no live feed."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        return None
    row = await repository.feed_by_hash(conn, token_hash(token))
    if row is None:
        return None
    account_id, person_id = int(row.account_id), int(row.person_id)
    # The token is the credential: the service acts as the system on its account's behalf.
    reader = system_actor(account_id, clock)
    if person_id not in await member_service.existing_member_ids(conn, reader,
                                                                 [person_id]):
        return None
    now = int(clock.now())
    ids = await repository.schedule_ids_of_person(conn, account_id, person_id)
    events: list[ical.Event] = []
    rows = await repository.get_many(conn, account_id, ids)
    decoded = [definition.decode_layers(row.layers) for row in rows]
    calendars = await oncall.calendars_of(conn, reader, decoded)
    for schedule, layers in zip(rows, decoded, strict=True):
        final = timeline.compute(definition.compile_layers(layers, calendars),
                                 zone(schedule.time_zone), now - PAST_S, now + AHEAD_S).final
        for shift in final:
            layer = layers[shift.layer]
            group = layer.groups[shift.group]
            if not any(person_id in slot.person_ids for slot in group.members):
                continue
            events.append(ical.Event(
                uid=f"{schedule.schedule_id}-{shift.layer}-{shift.start}-{person_id}@dutyline",
                start_s=shift.start, end_s=shift.end,
                summary=f"On call: {schedule.schedule_name}",
                description=f"{layer.layer_name}, group {group.group_name}"))
    events.sort(key=lambda e: (e.start_s, e.uid))
    return ical.calendar("On-call shifts", events, now_s=now)
