"""Rules of channels: names unique per account (any case) among live channels, teams of the
account only, validated grouping; private channels seen only by admins and their teams;
delete is soft (status `deleted`, `deleted_at`), frees the name and stops the channel's
integration keys."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.operation import Context
from dutyline.channel import repository as repo
from dutyline.channel.repository import Viewer
from dutyline.channel.schemas import (
    DEFAULT_FLAPPING,
    DEFAULT_GROUP,
    ChannelCreateResponse,
    ChannelIDRequest,
    ChannelInfosRequest,
    ChannelInfosResponse,
    ChannelItem,
    ChannelShort,
    CreateChannelRequest,
    Group,
    ListChannelsRequest,
    ListChannelsResponse,
    UpdateChannelRequest,
    UpdateChannelResponse,
)
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
from dutyline.platform.team import service as teams

__all__ = [
    "ChannelSettings",
    "FlappingSettings",
    "GroupSettings",
    "channel_names",
    "load_settings",
    "load_settings_sync",
    "require_visible",
    "require_visible_to",
    "touch_last_incident",
    "viewer",
    "viewer_of",
    "visible_channel_ids",
]

_encode = msgspec.json.encode


async def viewer(ctx: Context) -> Viewer:
    if ctx.caller.is_admin:
        return Viewer(is_admin=True, team_ids=frozenset())
    return Viewer(is_admin=False, team_ids=await ctx.caller_team_ids())


async def viewer_of(actor: Actor) -> Viewer:
    """viewer() for services that take an actor (the shape of api/actor.py)."""
    if actor.is_admin:
        return Viewer(is_admin=True, team_ids=frozenset())
    return Viewer(is_admin=False, team_ids=await actor.team_ids())


def visible_channel_ids(account_id: int, viewer: Viewer) -> Select[tuple[int]] | None:
    """The ids of the channels `viewer` sees, as a subquery, for the records that belong to a
    channel (incidents, alerts) to be hidden with it; None when every channel is visible
    (owners and admins), so their reads carry no extra condition."""
    return None if viewer.is_admin else repo.visible_ids(account_id, viewer)


async def require_visible(ctx: Context, channel_id: int) -> Any:
    """A live channel the caller may see, or ResourceNotFound (also for other accounts')."""
    row = await repo.get_visible(ctx.conn, ctx.caller.account_id, channel_id, await viewer(ctx))
    if row is None:
        raise errors.not_found("channel", channel_id)
    return row


async def require_visible_to(conn: AsyncConnection, actor: Actor, channel_id: int) -> Any:
    """require_visible() for services that take an actor."""
    row = await repo.get_visible(conn, actor.account_id, channel_id, await viewer_of(actor))
    if row is None:
        raise errors.not_found("channel", channel_id)
    return row


async def channel_names(conn: AsyncConnection, account_id: int,
                        channel_ids: list[int]) -> dict[int, tuple[str, str]]:
    """{channel_id: (channel_name, status)}, deleted channels included, for records (alerts,
    incidents) that name their channel."""
    return await repo.names(conn, account_id, list(dict.fromkeys(channel_ids)))


async def touch_last_incident(conn: AsyncConnection, account_id: int, channel_id: int,
                              now_s: int) -> None:
    """Record that the channel just opened an incident (ChannelItem.last_incident_at, and the
    `ranking` order of /channel/list). For incident creation to call."""
    await repo.update_channel(conn, account_id, channel_id, {"last_incident_at": now_s})


async def create_channel(ctx: Context, req: CreateChannelRequest) -> ChannelCreateResponse:
    account_id = ctx.caller.account_id
    name = _clean_name(req.channel_name)
    await _check_teams(ctx, req.team_id, req.managing_team_ids)
    group = _checked_group(req.group) if req.group is not None else DEFAULT_GROUP
    if await repo.name_taken(ctx.conn, account_id, name.lower()):
        raise errors.invalid("channel_name", "already exists")
    channel_id = numeric_id()
    now = ctx.now_s
    values = {
        "channel_id": channel_id, "account_id": account_id, "team_id": req.team_id,
        "managing_team_ids": _team_list(req.managing_team_ids),
        "creator_id": ctx.caller.person_id, "channel_name": name, "name_key": name.lower(),
        "description": req.description, "status": "enabled",
        "auto_resolve_timeout": req.auto_resolve_timeout,
        "auto_resolve_mode": req.auto_resolve_mode, "is_private": req.is_private,
        "disable_outlier_detection": req.disable_outlier_detection,
        "disable_auto_close": req.disable_auto_close,
        "is_external_report_enabled": req.is_external_report_enabled,
        "group_config": _encode(group).decode(),
        "flapping": _encode(req.flapping or DEFAULT_FLAPPING).decode(),
        "last_incident_at": 0, "deleted_at": 0, "created_at": now, "updated_at": now,
    }
    try:
        await repo.insert_channel(ctx.conn, values)
    except IntegrityError:
        # Lost a race with a concurrent create of the same name.
        raise errors.invalid("channel_name", "already exists") from None
    ctx.audit_targets.append(channel_id)
    return ChannelCreateResponse(channel_id=channel_id, channel_name=name)


async def channel_info(ctx: Context, req: ChannelIDRequest) -> ChannelItem:
    """Deleted channels stay readable by id (status `deleted`, `deleted_at`), so records
    that name them can still be explained."""
    row = await repo.get_visible(ctx.conn, ctx.caller.account_id, req.channel_id,
                                 await viewer(ctx), include_deleted=True)
    if row is None:
        raise errors.not_found("channel", req.channel_id)
    return _item(row)


async def channel_infos(ctx: Context, req: ChannelInfosRequest) -> ChannelInfosResponse:
    ids = list(dict.fromkeys(req.channel_ids))
    rows = await repo.find_many_visible(ctx.conn, ctx.caller.account_id, ids, await viewer(ctx))
    return ChannelInfosResponse(items=[
        ChannelShort(channel_id=r.channel_id, channel_name=r.channel_name, status=r.status,
                     team_id=r.team_id, creator_id=r.creator_id)
        for r in rows
    ])


async def list_channels(ctx: Context, req: ListChannelsRequest) -> ListChannelsResponse:
    if req.is_my_starred and req.is_my_team:
        raise errors.invalid("is_my_starred", "cannot be combined with is_my_team")
    offset = (req.p - 1) * req.limit
    if req.is_my_starred:
        # Nobody can star a channel yet (no endpoint does it), so no channel is starred.
        return ListChannelsResponse(items=[], total=0, has_next_page=False)
    my_teams = await ctx.caller_team_ids() if (req.is_my_team or req.is_my_managed) else None
    total, rows = await repo.list_page(
        ctx.conn, ctx.caller.account_id, await viewer(ctx),
        mine=my_teams if req.is_my_team else None,
        managed_by=my_teams if req.is_my_managed else None,
        team_ids=list(dict.fromkeys(req.team_ids)),
        channel_ids=list(dict.fromkeys(req.channel_ids)),
        channel_name=req.channel_name.strip(), query=req.query.strip(),
        orderby=req.orderby, asc=req.asc, offset=offset, limit=req.limit,
    )
    items = [_brief(r) if req.is_brief else _item(r) for r in rows]
    return ListChannelsResponse(items=items, total=total,
                                has_next_page=offset + len(rows) < total)


async def update_channel(ctx: Context, req: UpdateChannelRequest) -> UpdateChannelResponse:
    account_id = ctx.caller.account_id
    row = await require_visible(ctx, req.channel_id)
    values: dict[str, Any] = {"updated_at": ctx.now_s}
    if req.channel_name is not None:
        name = _clean_name(req.channel_name)
        if await repo.name_taken(ctx.conn, account_id, name.lower(), except_id=row.channel_id):
            raise errors.invalid("channel_name", "already exists")
        values.update(channel_name=name, name_key=name.lower())
    if req.team_id is not None or req.managing_team_ids is not None:
        await _check_teams(ctx, req.team_id or 0, req.managing_team_ids or [])
    if req.team_id is not None:
        values["team_id"] = req.team_id
    if req.managing_team_ids is not None:
        values["managing_team_ids"] = _team_list(req.managing_team_ids)
    if req.group is not None:
        values["group_config"] = _encode(_checked_group(req.group)).decode()
    if req.flapping is not None:
        values["flapping"] = _encode(req.flapping).decode()
    for field in ("description", "auto_resolve_timeout", "auto_resolve_mode", "is_private",
                  "disable_outlier_detection", "disable_auto_close",
                  "is_external_report_enabled"):
        if (value := getattr(req, field)) is not None:
            values[field] = value
    try:
        await repo.update_channel(ctx.conn, account_id, row.channel_id, values)
    except IntegrityError:
        raise errors.invalid("channel_name", "already exists") from None
    ctx.audit_targets.append(row.channel_id)
    return UpdateChannelResponse()


async def delete_channel(ctx: Context, req: ChannelIDRequest) -> None:
    row = await require_visible(ctx, req.channel_id)
    now = ctx.now_s
    await repo.update_channel(ctx.conn, ctx.caller.account_id, row.channel_id,
                              {"status": "deleted", "deleted_at": now, "updated_at": now})
    ctx.audit_targets.append(row.channel_id)


async def set_status(ctx: Context, req: ChannelIDRequest, status: str) -> None:
    row = await require_visible(ctx, req.channel_id)
    if row.status != status:
        await repo.update_channel(ctx.conn, ctx.caller.account_id, row.channel_id,
                                  {"status": status, "updated_at": ctx.now_s})
    ctx.audit_targets.append(row.channel_id)


def _clean_name(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise errors.invalid("channel_name", "is required")
    return name


async def _check_teams(ctx: Context, team_id: int, managing: list[int]) -> None:
    wanted = list(dict.fromkeys([t for t in [team_id, *managing] if t]))
    found = await teams.existing_team_ids(ctx.conn, ctx.caller.account_id, wanted)
    for t in wanted:
        if t not in found:
            raise errors.not_found("team", t)


def _team_list(team_ids: list[int]) -> str:
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
