"""Which incidents and alerts an actor may see or touch: its account's, not removed, and not
in a private channel the caller cannot see. The channel domain decides which channels those
are (channels.viewer, channels.visible_channel_ids); every incident and alert read and write
filters through the conditions here, so a hidden record answers exactly like an unknown id.

Records without a channel (channel_id 0: incidents opened by hand) belong to the whole
account. Owners and admins see every channel: their scope adds no condition at all."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, Select, or_

from dutyline.api.actor import Actor
from dutyline.channel import service as channels
from dutyline.db.tables.incident import alert, incident


@dataclass(frozen=True, slots=True)
class Scope:
    account_id: int
    # A subquery of the channel ids the caller sees; None: every channel.
    channel_ids: Select[tuple[int]] | None


async def scope(actor: Actor) -> Scope:
    """The actor's scope: one query for their teams (once for the actor's life), none for
    admins and the system."""
    return Scope(actor.account_id, await channels.visible_channel_ids(actor))


def scope_sync(conn: Connection, actor: Actor) -> Scope:
    """`scope` inside a sync unit of database work (the teams read on `conn`)."""
    return Scope(actor.account_id, channels.visible_channel_ids_sync(conn, actor))


def channel_visible(column: ColumnElement[int], s: Scope) -> list[ColumnElement[bool]]:
    """The condition (none for admins) that a record's channel is one the scope sees."""
    if s.channel_ids is None:
        return []
    return [or_(column == 0, column.in_(s.channel_ids))]


def incidents(s: Scope) -> list[ColumnElement[bool]]:
    """The conditions on `incident` rows the scope may see."""
    return [incident.c.account_id == s.account_id, incident.c.deleted_at == 0,
            *channel_visible(incident.c.channel_id, s)]


def alerts(s: Scope) -> list[ColumnElement[bool]]:
    """The conditions on `alert` rows the scope may see (by the alert's own channel: an alert
    merged into another channel's incident stays as private as its channel)."""
    return [alert.c.account_id == s.account_id, alert.c.deleted_at == 0,
            *channel_visible(alert.c.channel_id, s)]
