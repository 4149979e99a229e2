"""Rules of channels: names unique per account (any case) among live channels, teams of the
account only, validated grouping; private channels seen only by admins and their teams;
delete is soft (status `deleted`, `deleted_at`), frees the name and stops the channel's
integration keys."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection, Select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.auth import hash_app_key
from dutyline.api.permissions import CHANNEL_MANAGE, CHANNEL_VIEW
from dutyline.channel import repository as repo
from dutyline.channel.repository import Viewer
from dutyline.channel.schemas import (
    DEFAULT_FLAPPING,
    DEFAULT_GROUP,
    ChannelChanges,
    ChannelItem,
    ChannelShort,
    Group,
)
from dutyline.channel.schemas import ChannelSearch as ChannelSearch  # for the console
from dutyline.channel.settings import (
    ChannelSettings,
    FlappingSettings,
    GroupSettings,
    decode_flapping,
    decode_group,
    load_settings,
    load_settings_sync,
)
from dutyline.kit.ids import numeric_id
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams

__all__ = [
    "ChannelChanges",
    "ChannelSettings",
    "FlappingSettings",
    "GroupSettings",
    "channel_names",
    "load_settings",
    "load_settings_sync",
    "require_visible",
    "require_visible_sync",
    "touch_last_incident_sync",
    "viewer",
    "visible_channel_ids",
]

_encode = msgspec.json.encode


async def viewer(actor: Actor) -> Viewer:
    if actor.is_admin:
        return Viewer(is_admin=True, team_ids=frozenset())
    return Viewer(is_admin=False, team_ids=await actor.team_ids())


def viewer_sync(conn: Connection, actor: Actor) -> Viewer:
    """`viewer` inside a sync unit of database work (its teams read on `conn`)."""
    if actor.is_admin:
        return Viewer(is_admin=True, team_ids=frozenset())
    return Viewer(is_admin=False, team_ids=actor.team_ids_sync(conn))


async def visible_channel_ids(actor: Actor) -> Select[tuple[int]] | None:
    """The ids of the channels the actor sees, as a subquery, for the records that belong to a
    channel (incidents, alerts) to be hidden with it; None when every channel is visible
    (owners, admins and the system), so their reads carry no extra condition."""
    if actor.is_admin:
        return None
    return repo.visible_ids(actor.account_id, await viewer(actor))


def visible_channel_ids_sync(conn: Connection, actor: Actor) -> Select[tuple[int]] | None:
    """`visible_channel_ids` inside a sync unit of database work."""
    if actor.is_admin:
        return None
    return repo.visible_ids(actor.account_id, viewer_sync(conn, actor))


def require_visible_sync(conn: Connection, actor: Actor, channel_id: int) -> Any:
    """A live channel the actor may see, or ResourceNotFound (also for other accounts')."""
    row = repo.get_visible_sync(conn, actor.account_id, channel_id, viewer_sync(conn, actor))
    if row is None:
        raise errors.not_found("channel", channel_id)
    return row


async def require_visible(conn: AsyncConnection, actor: Actor, channel_id: int) -> Any:
    return await conn.run_sync(require_visible_sync, actor, channel_id)


def channel_names_sync(conn: Connection, actor: Actor,
                       channel_ids: list[int]) -> dict[int, tuple[str, str]]:
    """{channel_id: (channel_name, status)}, deleted channels included, for records (alerts,
    incidents) that name their channel."""
    return repo.names_sync(conn, actor.account_id, list(dict.fromkeys(channel_ids)))


async def channel_names(conn: AsyncConnection, actor: Actor,
                        channel_ids: list[int]) -> dict[int, tuple[str, str]]:
    return await conn.run_sync(channel_names_sync, actor, channel_ids)


def touch_last_incident_sync(conn: Connection, *, account_id: int, channel_id: int,
                             now_s: int) -> None:
    """Record that the channel just opened an incident (ChannelItem.last_incident_at, and the
    `ranking` order of /channel/list). Incident creation calls it in its own transaction, on
    the ingestion hot path's sync connection."""
    repo.touch_last_incident_sync(conn, account_id, channel_id, now_s)


# The plain settings stored as given, and their values on create when not given.
_PLAIN_DEFAULTS: dict[str, Any] = {
    "description": "", "auto_resolve_timeout": 0, "auto_resolve_mode": "trigger",
    "is_private": False, "disable_outlier_detection": False, "disable_auto_close": False,
    "is_external_report_enabled": False,
}


@dataclass(frozen=True)
class CreatedChannel:
    channel_id: int
    channel_name: str
    external_report_token: str = ""  # set when external reports are enabled: shown once


def _report_token(enabled: bool, given: str | None, field: str) -> str:
    """The external report token an enabled channel takes (the one given, else a new one);
    "" for a channel without external reports, which takes none."""
    if not enabled:
        if given is not None:
            raise errors.invalid(field, "needs is_external_report_enabled")
        return ""
    return given if given is not None else "ert_" + secrets.token_urlsafe(24)


@writes("/channel/create", CHANNEL_MANAGE, inputs=ChannelChanges,
        targets=lambda created: [created.channel_id])
async def create_channel(conn: AsyncConnection, actor: Actor, *,
                         channel: ChannelChanges) -> CreatedChannel:
    account_id = actor.account_id
    name = _clean_name(channel.channel_name or "")
    team_id = channel.team_id or 0
    managing = channel.managing_team_ids or []
    await _check_teams(conn, actor, team_id, managing)
    group = _checked_group(channel.group) if channel.group is not None else DEFAULT_GROUP
    if await repo.name_taken(conn, account_id, name.lower()):
        raise errors.invalid("channel_name", "already exists")
    channel_id = numeric_id()
    now = actor.now_s
    plain = {f: v if (v := getattr(channel, f)) is not None else default
             for f, default in _PLAIN_DEFAULTS.items()}
    token = _report_token(bool(plain["is_external_report_enabled"]),
                          channel.external_report_token, "external_report_token")
    values = {
        "channel_id": channel_id, "account_id": account_id, "team_id": team_id,
        "managing_team_ids": _team_list(managing),
        "creator_id": actor.person_id, "channel_name": name, "name_key": name.lower(),
        "status": "enabled", **plain,
        "group_config": _encode(group).decode(),
        "flapping": _encode(channel.flapping or DEFAULT_FLAPPING).decode(),
        "last_incident_at": 0, "deleted_at": 0, "created_at": now, "updated_at": now,
        "external_report_token_hash": hash_app_key(token) if token else "",
    }
    try:
        await repo.insert_channel(conn, values)
    except IntegrityError:
        # Lost a race with a concurrent create of the same name.
        raise errors.invalid("channel_name", "already exists") from None
    return CreatedChannel(channel_id=channel_id, channel_name=name,
                          external_report_token=token)


@reads_sync(CHANNEL_VIEW)
def channel_info_sync(conn: Connection, actor: Actor, *, channel_id: int) -> ChannelItem:
    """Deleted channels stay readable by id (status `deleted`, `deleted_at`), so records
    that name them can still be explained."""
    row = repo.get_visible_sync(conn, actor.account_id, channel_id, viewer_sync(conn, actor),
                                include_deleted=True)
    if row is None:
        raise errors.not_found("channel", channel_id)
    return _item(row)


@reads_sync(CHANNEL_VIEW)
def channel_infos_sync(conn: Connection, actor: Actor, *,
                       channel_ids: Sequence[int]) -> list[ChannelShort]:
    """The live channels among these ids that the actor sees; unknown ids are left out."""
    ids = list(dict.fromkeys(channel_ids))
    rows = repo.find_many_visible_sync(conn, actor.account_id, ids, viewer_sync(conn, actor))
    return [ChannelShort(channel_id=r.channel_id, channel_name=r.channel_name, status=r.status,
                         team_id=r.team_id, creator_id=r.creator_id)
            for r in rows]


@dataclass(frozen=True)
class ChannelQuery:
    """Which live channels to list, in which order, and how much of each."""

    orderby: str = "ranking"
    asc: bool = False
    is_my_managed: bool = False
    is_my_starred: bool = False
    is_my_team: bool = False
    is_brief: bool = False
    team_ids: Sequence[int] = ()
    channel_ids: Sequence[int] = ()
    channel_name: str = ""
    query: str = ""


@reads_sync(CHANNEL_VIEW)
def list_channels_sync(conn: Connection, actor: Actor, *, q: ChannelQuery, offset: int,
                       limit: int) -> tuple[int, list[ChannelItem]]:
    """(total, one page of the live channels the actor sees)."""
    if q.is_my_starred and q.is_my_team:
        raise errors.invalid("is_my_starred", "cannot be combined with is_my_team")
    if q.is_my_starred:
        # Nobody can star a channel yet (no endpoint does it), so no channel is starred.
        return 0, []
    my_teams = actor.team_ids_sync(conn) if (q.is_my_team or q.is_my_managed) else None
    total, rows = repo.list_page_sync(
        conn, actor.account_id, viewer_sync(conn, actor),
        mine=my_teams if q.is_my_team else None,
        managed_by=my_teams if q.is_my_managed else None,
        team_ids=list(dict.fromkeys(q.team_ids)),
        channel_ids=list(dict.fromkeys(q.channel_ids)),
        channel_name=q.channel_name.strip(), query=q.query.strip(),
        orderby=q.orderby, asc=q.asc, offset=offset, limit=limit,
    )
    if q.is_brief:
        return total, [_brief(r) for r in rows]
    items = [_item(r) for r in rows]
    # Clients show a channel's team and creator by name (docs/compatibility.md).
    team_names = teams.team_names_sync(conn, actor, (r.team_id for r in rows))
    people = members.member_names_sync(conn, actor, (r.creator_id for r in rows))
    for item in items:
        item.team_name = team_names.get(item.team_id or 0, "")
        item.creator_name = people.get(item.creator_id or 0, ("", ""))[0]
    return total, items


@writes("/channel/update", CHANNEL_MANAGE, inputs=ChannelChanges)
async def update_channel(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                         changes: ChannelChanges) -> str:
    """Change the given settings of a live channel the actor sees. Returns the external
    report token this change set (turning external reports on, or the one given), else
    "": it is shown once, only its hash is kept."""
    account_id = actor.account_id
    row = await require_visible(conn, actor, channel_id)
    values: dict[str, Any] = {"updated_at": actor.now_s}
    if changes.channel_name is not None:
        name = _clean_name(changes.channel_name)
        if await repo.name_taken(conn, account_id, name.lower(), except_id=row.channel_id):
            raise errors.invalid("channel_name", "already exists")
        values.update(channel_name=name, name_key=name.lower())
    if changes.team_id is not None or changes.managing_team_ids is not None:
        await _check_teams(conn, actor, changes.team_id or 0, changes.managing_team_ids or [])
    if changes.team_id is not None:
        values["team_id"] = changes.team_id
    if changes.managing_team_ids is not None:
        values["managing_team_ids"] = _team_list(changes.managing_team_ids)
    if changes.group is not None:
        values["group_config"] = _encode(_checked_group(changes.group)).decode()
    if changes.flapping is not None:
        values["flapping"] = _encode(changes.flapping).decode()
    for field in _PLAIN_DEFAULTS:
        if (value := getattr(changes, field)) is not None:
            values[field] = value
    token = ""
    enabled = bool(values.get("is_external_report_enabled", row.is_external_report_enabled))
    turned_on = enabled and not row.is_external_report_enabled
    if turned_on or changes.external_report_token is not None or not enabled:
        token = _report_token(enabled, changes.external_report_token, "external_report_token")
        values["external_report_token_hash"] = hash_app_key(token) if token else ""
    try:
        await repo.update_channel(conn, account_id, row.channel_id, values)
    except IntegrityError:
        raise errors.invalid("channel_name", "already exists") from None
    return token


@writes("/channel/delete", CHANNEL_MANAGE, dangerous=True)
async def delete_channel(conn: AsyncConnection, actor: Actor, *, channel_id: int) -> int:
    """Soft delete: the name is free again and the channel's integration keys stop."""
    row = await require_visible(conn, actor, channel_id)
    now = actor.now_s
    await repo.update_channel(conn, actor.account_id, row.channel_id,
                              {"status": "deleted", "deleted_at": now, "updated_at": now})
    return int(row.channel_id)


@writes("/channel/enable", CHANNEL_MANAGE)
async def enable_channel(conn: AsyncConnection, actor: Actor, *, channel_id: int) -> int:
    """Enable a live channel the actor sees; returns its id."""
    return await _set_status(conn, actor, channel_id, "enabled")


@writes("/channel/disable", CHANNEL_MANAGE)
async def disable_channel(conn: AsyncConnection, actor: Actor, *, channel_id: int) -> int:
    """Disable a live channel the actor sees; returns its id."""
    return await _set_status(conn, actor, channel_id, "disabled")


async def _set_status(conn: AsyncConnection, actor: Actor, channel_id: int, status: str) -> int:
    row = await require_visible(conn, actor, channel_id)
    if row.status != status:
        await repo.update_channel(conn, actor.account_id, row.channel_id,
                                  {"status": status, "updated_at": actor.now_s})
    return int(row.channel_id)


def _clean_name(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise errors.invalid("channel_name", "is required")
    return name


async def _check_teams(conn: AsyncConnection, actor: Actor, team_id: int,
                       managing: Sequence[int]) -> None:
    wanted = list(dict.fromkeys([t for t in [team_id, *managing] if t]))
    found = await teams.existing_team_ids(conn, actor, wanted)
    for t in wanted:
        if t not in found:
            raise errors.not_found("team", t)


def _team_list(team_ids: Sequence[int]) -> str:
    return _encode(list(dict.fromkeys(team_ids))).decode()


def _checked_group(group: Group) -> Group:
    """Keys trimmed; every listed set of keys non-empty."""
    equals = [[k.strip() for k in keys] for keys in group.equals]
    for i, keys in enumerate(equals):
        if not keys or not all(keys):
            raise errors.invalid(f"group.equals[{i}]", "must list non-empty keys")
    # `p` without `equals` is accepted (the reference's own example): every alert of the
    # window then agrees, and they share one incident (incident/ingest/grouping.py).
    i_keys = [k.strip() for k in group.i_keys]
    if not all(i_keys):
        raise errors.invalid("group.i_keys", "must list non-empty keys")
    return msgspec.structs.replace(group, equals=equals, i_keys=i_keys)


def _brief(row: Any) -> ChannelItem:
    return ChannelItem(channel_id=row.channel_id, channel_name=row.channel_name,
                       description=row.description, status=row.status)


def _item(row: Any) -> ChannelItem:
    return ChannelItem(
        channel_id=row.channel_id, channel_name=row.channel_name,
        description=row.description, status=row.status, account_id=row.account_id,
        team_id=row.team_id, managing_team_ids=msgspec.json.decode(row.managing_team_ids),
        creator_id=row.creator_id, deleted_at=row.deleted_at, created_at=row.created_at,
        updated_at=row.updated_at, auto_resolve_timeout=row.auto_resolve_timeout,
        auto_resolve_mode=row.auto_resolve_mode, is_private=bool(row.is_private),
        disable_outlier_detection=bool(row.disable_outlier_detection),
        disable_auto_close=bool(row.disable_auto_close),
        is_external_report_enabled=bool(row.is_external_report_enabled),
        group=decode_group(row.group_config), flapping=decode_flapping(row.flapping),
        is_starred=False, last_incident_at=row.last_incident_at,
    )
