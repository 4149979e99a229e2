"""Rules of on-call schedules, and the lookups other domains call.

For the escalation engine:
    await oncall_for_schedules(conn, actor, schedule_role_ids={sid: [role_id, …]}, at_s=…)

Writes need schedule management and note their audit entry (the schedules' ids); the reads
of the schedule API admit either schedule permission. The engine's lookup above checks
nothing: it answers the escalation engine, not a member."""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.outbound_secrets import secret_to_store
from dutyline.api.permissions import SCHEDULE_MANAGE, SCHEDULE_VIEW
from dutyline.api.types import SaveWarning
from dutyline.config import Settings
from dutyline.kit.channels import personal_refusal
from dutyline.kit.ids import numeric_id
from dutyline.kit.secretbox import SecretBox
from dutyline.notify.delivery import service as delivery
from dutyline.platform.account import service as account_service
from dutyline.platform.calendar import service as calendar_service
from dutyline.platform.member import service as member_service
from dutyline.platform.team import service as team_service
from dutyline.schedule import definition, oncall, render, repository
from dutyline.schedule.feed import create_feed, feed_created_at_sync, revoke_feed
from dutyline.schedule.localtime import local_datetime, to_instant, wall_at, zone
from dutyline.schedule.schemas import (
    LayerIn,
    NotifyIn,
    ScheduleCalculatedSchedule,
    ScheduleFixedTimeNotifyInfo,
    ScheduleGroup,
    ScheduleImNotify,
    ScheduleItem,
    ScheduleLayer,
    ScheduleListRequest,
    ScheduleMember,
    ScheduleNotify,
    ScheduleNotifyBy,
    ScheduleOncallGroup,
)
from dutyline.schedule.schemas import ScheduleSpec as ScheduleSpec  # the record its writes take

# Published for the domains that reach this one through its service (the console): the
# member's calendar feed, the records of a schedule and its timeline, the wall-clock time
# of a zone as rotations read it (localtime.py), and how far ahead who is on call is looked
# for (a turn ending there has no end within it).
__all__ = ["ONCALL_HORIZON_S", "LayerIn", "ScheduleCalculatedSchedule", "ScheduleGroup",
           "ScheduleItem", "ScheduleLayer", "ScheduleListRequest", "ScheduleMember",
           "ScheduleOncallGroup", "create_feed", "feed_created_at_sync", "local_datetime",
           "revoke_feed", "to_instant", "wall_at", "zone"]
ONCALL_HORIZON_S = render.ONCALL_HORIZON_S

WINDOW_MAX_S = 45 * 86_400
SELF_WINDOW_MAX_S = 30 * 86_400
SELF_DEFAULT_WINDOW_S = 7 * 86_400
_TIME_ZONES = frozenset(zoneinfo.available_timezones())
_encode = msgspec.json.encode
_layers = definition.decode_layers
_notify = msgspec.json.Decoder(ScheduleNotify).decode


# -- who is on call -------------------------------------------------------------------------


async def oncall_for_schedules(
    conn: AsyncConnection, actor: Actor, *, schedule_role_ids: Mapping[int, Sequence[int]],
    at_s: int,
) -> dict[int, list[int]]:
    """The batch form: schedule_id -> persons on call. Schedules that do not exist in the
    actor's account are left out of the answer (absent, not []), so one deleted schedule
    in a rule does not hide the others."""
    if not schedule_role_ids:
        return {}
    return await oncall.oncall_for_schedules(
        conn, actor, schedule_role_ids=schedule_role_ids, at_s=at_s)


def oncall_for_schedules_sync(
    conn: Connection, actor: Actor, *, schedule_role_ids: Mapping[int, Sequence[int]],
    at_s: int,
) -> dict[int, list[int]]:
    """`oncall_for_schedules` inside a sync unit of database work."""
    if not schedule_role_ids:
        return {}
    return oncall.oncall_for_schedules_sync(
        conn, actor, schedule_role_ids=schedule_role_ids, at_s=at_s)


# -- writes ---------------------------------------------------------------------------------


async def _validated_layers(conn: AsyncConnection, actor: Actor, layers: list[LayerIn],
                            schedule_id: int) -> list[ScheduleLayer]:
    return await conn.run_sync(_validated_layers_sync, actor, layers, schedule_id)


def _validated_layers_sync(conn: Connection, actor: Actor, layers: list[LayerIn],
                           schedule_id: int) -> list[ScheduleLayer]:
    stored = definition.normalize_layers(
        layers, account_id=actor.account_id, schedule_id=schedule_id,
        person_id=actor.person_id, now_s=actor.now_s)
    named = list(definition.person_fields(stored))
    live = member_service.existing_member_ids_sync(conn, actor, [p for _, p in named])
    for field, person_id in named:
        if person_id not in live:
            raise errors.invalid(field, f"{person_id} is not a member of the account")
    followed = list(definition.calendar_fields(stored))
    if followed:
        known = calendar_service.calendar_days_of_sync(
            conn, actor, cal_ids={c for _, c in followed})
        for field, cal_id in followed:
            if cal_id not in known:
                raise errors.invalid(field, f"calendar {cal_id!r} does not exist")
    return stored


async def schedules_following_calendar(conn: AsyncConnection, account_id: int,
                                       cal_id: str) -> list[str]:
    """Schedules with a layer following the calendar (its delete is refused while any do)."""
    return [f"schedule {r.schedule_name} ({r.schedule_id})"
            for r in await repository.schedules_naming_calendar(conn, account_id, cal_id)]


async def calendar_changed(conn: AsyncConnection, account_id: int, cal_id: str) -> None:
    """What a calendar says may have changed: the schedules following it are rebuilt."""
    await repository.bump_revisions_naming_calendar(conn, account_id, cal_id)


def _check_name(name: str | None, *, required: bool) -> str | None:
    if name is None:
        if required:
            raise errors.invalid("schedule_name", "is required")
        return None
    name = name.strip()
    if not name:
        raise errors.invalid("schedule_name", "is required")
    if len(name) > definition.NAME_MAX:
        raise errors.invalid("schedule_name", "is longer than 40 characters")
    return name


async def _common_values(
    conn: AsyncConnection, actor: Actor, *, description: str | None, team_id: int | None,
    time_zone: str | None, notify: NotifyIn | None, box: SecretBox,
    stored_notify: ScheduleNotify | None,
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if description is not None:
        if len(description) > 500:
            raise errors.invalid("description", "is longer than 500 characters")
        values["description"] = description
    if team_id is not None:
        if team_id < 0:
            raise errors.invalid("team_id", "must not be negative")
        if team_id and not await team_service.existing_team_ids(conn, actor,
                                                                [team_id]):
            raise errors.invalid("team_id", f"team {team_id} does not exist")
        values["team_id"] = team_id
    if time_zone is not None:
        if time_zone not in _TIME_ZONES:
            raise errors.invalid("time_zone", "is not an IANA time zone name")
        values["time_zone"] = time_zone
    if notify is not None:
        values["notify"] = _encode(_seal_notify(notify, box, stored_notify)).decode()
    return values


def _seal_notify(notify: NotifyIn, box: SecretBox,
                 stored: ScheduleNotify | None) -> ScheduleNotify:
    """Webhook secrets (token, verify_token, sign_secret) are sealed at rest and write-only:
    `******` keeps the stored value of the webhook at the same position when it is of the
    same type (the schedule's IM webhooks name no URL: their type is their origin; see
    api/outbound_secrets.py)."""
    if notify.advance_in_time < 0:
        raise errors.invalid("notify.advance_in_time", "must not be negative")
    for i, channel in enumerate((notify.by.personal_channels or []) if notify.by else []):
        if refused := personal_refusal(channel):
            raise errors.invalid(f"notify.by.personal_channels[{i}]", refused)
    hooks: list[ScheduleImNotify] = []
    for i, hook in enumerate(notify.webhooks or []):
        old = stored.webhooks[i] if stored and i < len(stored.webhooks) else None
        keep = old is not None and old.type == hook.type
        settings = msgspec.structs.replace(hook.settings)
        for name in ("token", "verify_token", "sign_secret"):
            setattr(settings, name, secret_to_store(
                getattr(settings, name), getattr(old.settings, name) if old else "",
                keep=keep, seal=box.seal, field=f"notify.webhooks[{i}].settings.{name}"))
        hooks.append(ScheduleImNotify(type=hook.type, settings=settings))
    return ScheduleNotify(
        advance_in_time=notify.advance_in_time,
        fixed_time=notify.fixed_time or ScheduleFixedTimeNotifyInfo(),
        by=ScheduleNotifyBy(follow_preference=notify.by.follow_preference,
                            personal_channels=notify.by.personal_channels or [])
        if notify.by else ScheduleNotifyBy(), webhooks=hooks)


def delivery_warnings(settings: Settings, notify: NotifyIn | None) -> list[SaveWarning]:
    """What the schedule's notifications ask for that these settings cannot send (the
    schedule is saved anyway): a personal channel without its means, an app's group chat
    without the app."""
    if notify is None:
        return []
    out: list[SaveWarning] = []
    channels = (notify.by.personal_channels or []) if notify.by else []
    for i, channel in enumerate(channels):
        if reason := delivery.personal_gap(settings, channel):
            out.append(SaveWarning(field=f"notify.by.personal_channels[{i}]",
                                   message=f"{channel}: {reason}"))
    for i, hook in enumerate(notify.webhooks or []):
        if hook.type.endswith("_app") and (reason := delivery.group_gap(settings, hook.type)):
            out.append(SaveWarning(field=f"notify.webhooks[{i}].type", message=reason))
    return out


@writes("/schedule/create", SCHEDULE_MANAGE, inputs=ScheduleSpec)
async def create_schedule(
    conn: AsyncConnection, actor: Actor, *, schedule_name: str | None, description: str | None,
    team_id: int | None, time_zone: str | None, layers: list[LayerIn] | None,
    notify: NotifyIn | None, deps: Deps,
) -> int:
    name = _check_name(schedule_name, required=True)
    schedule_id = numeric_id()
    values = await _common_values(conn, actor, description=description, team_id=team_id,
                                  time_zone=time_zone, notify=notify, box=deps.box,
                                  stored_notify=None)
    values.setdefault("time_zone", await account_service.account_time_zone(conn, actor))
    stored = await _validated_layers(conn, actor, layers or [], schedule_id)
    now = actor.now_s
    await repository.insert_schedule(conn, {
        **values, "schedule_id": schedule_id, "account_id": actor.account_id,
        "schedule_name": name, "layers": _encode(stored).decode(),
        "created_by": actor.person_id, "updated_by": actor.person_id,
        "created_at": now, "updated_at": now,
    })
    await repository.replace_persons(conn, actor.account_id, schedule_id,
                                     [p for _, p in definition.person_fields(stored)])
    return schedule_id


@writes("/schedule/update", SCHEDULE_MANAGE, inputs=ScheduleSpec)
async def update_schedule(
    conn: AsyncConnection, actor: Actor, *, schedule_id: int, schedule_name: str | None,
    description: str | None, team_id: int | None, time_zone: str | None,
    layers: list[LayerIn] | None, notify: NotifyIn | None, deps: Deps,
) -> None:
    """Fields left out (null) keep their stored value; `layers` replaces the whole stack."""
    if not schedule_id:
        raise errors.invalid("schedule_id", "is required")
    row = await repository.get(conn, actor.account_id, schedule_id)
    if row is None:
        raise errors.not_found("schedule", schedule_id)
    values = await _common_values(conn, actor, description=description, team_id=team_id,
                                  time_zone=time_zone, notify=notify, box=deps.box,
                                  stored_notify=_notify(row.notify) if row.notify != "{}"
                                  else None)
    name = _check_name(schedule_name, required=False)
    if name is not None:
        values["schedule_name"] = name
    if layers is not None:
        stored = await _validated_layers(conn, actor, layers, schedule_id)
        _keep_layer_creation(stored, _layers(row.layers))
        values["layers"] = _encode(stored).decode()
        await repository.replace_persons(conn, actor.account_id, schedule_id,
                                         [p for _, p in definition.person_fields(stored)])
    values.update(updated_by=actor.person_id, updated_at=actor.now_s)
    await repository.update_schedule(conn, actor.account_id, schedule_id, values)
    actor.note_audit_targets(schedule_id)


def _keep_layer_creation(new: list[ScheduleLayer], old: list[ScheduleLayer]) -> None:
    """A layer at the same position keeps when and by whom it was first created."""
    for layer, before in zip(new, old, strict=False):
        layer.create_at, layer.create_by = before.create_at, before.create_by


@writes("/schedule/delete", SCHEDULE_MANAGE)
async def delete_schedules(conn: AsyncConnection, actor: Actor, *,
                           schedule_ids: Sequence[int]) -> list[int]:
    """All or nothing: every id must be a schedule of the account."""
    ids = list(dict.fromkeys(schedule_ids))
    if not ids:
        raise errors.invalid("schedule_ids", "is required")
    if len(ids) > 100:
        raise errors.invalid("schedule_ids", "has more than 100 ids")
    found = await repository.existing_ids(conn, actor.account_id, ids)
    if missing := [i for i in ids if i not in found]:
        raise errors.not_found("schedule", ", ".join(map(str, missing)))
    await repository.delete_schedules(conn, actor.account_id, ids)
    return ids


# -- reads ----------------------------------------------------------------------------------


def _window(start: int, end: int, limit_s: int) -> tuple[int, int] | None:
    if not start and not end:
        return None
    for name, value in (("start", start), ("end", end)):
        if not 0 < value < definition.TIME_MAX:
            raise errors.invalid(name, "must be Unix seconds between 1970 and 2100")
    if end <= start:
        raise errors.invalid("end", "must be after start")
    if end - start > limit_s:
        raise errors.invalid("end", f"must be at most {limit_s // 86_400} days after start")
    return start, end


def _live(conn: Connection, actor: Actor,
          layer_lists: Sequence[list[ScheduleLayer]]) -> set[int]:
    """Who of the persons these layers name may be on call: the engine's rule (its
    `oncall_for_schedules`), asked once for a whole page of schedules."""
    named = {p for layers in layer_lists for _, p in definition.person_fields(layers)}
    return member_service.existing_member_ids_sync(conn, actor, sorted(named))


def _items(conn: Connection, actor: Actor, rows: Sequence[Row[Any]],
           window: tuple[int, int] | None, only_person: int | None = None) -> list[ScheduleItem]:
    decoded = [_layers(row.layers) for row in rows]
    live = _live(conn, actor, decoded)
    calendars = oncall.calendars_of_sync(conn, actor, decoded)
    return [render.schedule_item(
        layers=layers, calendars=calendars, time_zone=row.time_zone, window=window,
        now_s=actor.now_s,
        account_id=row.account_id, stored=row, notify=_notify(row.notify)
        if row.notify != "{}" else ScheduleNotify(), live=live, only_person=only_person)
        for row, layers in zip(rows, decoded, strict=True)]


# The reads are sync, so a read operation runs them as one unit of database work
# (api/operation.py); the async forms run the same functions on an async connection.


@reads_sync(SCHEDULE_VIEW, SCHEDULE_MANAGE)
def schedule_info_sync(conn: Connection, actor: Actor, *, schedule_id: int, start: int,
                       end: int) -> ScheduleItem:
    window = _window(start, end, WINDOW_MAX_S)
    row = repository.get_sync(conn, actor.account_id, schedule_id)
    if row is None:
        raise errors.not_found("schedule", schedule_id)
    return _items(conn, actor, [row], window)[0]


@reads_sync(SCHEDULE_VIEW, SCHEDULE_MANAGE)
def schedule_infos_sync(conn: Connection, actor: Actor, *,
                        schedule_ids: Sequence[int]) -> list[ScheduleItem]:
    """Unknown ids (or another account's) are left out."""
    ids = list(dict.fromkeys(schedule_ids))
    if len(ids) > 100:
        raise errors.invalid("schedule_ids", "has more than 100 ids")
    return _items(conn, actor, repository.get_many_sync(conn, actor.account_id, ids), None)


def list_schedules_sync(
    conn: Connection, actor: Actor, *, query: str, p: int, limit: int, is_my_team: bool,
    is_my_manage: bool, team_ids: Sequence[int] | None, start: int, end: int,
) -> tuple[int, list[ScheduleItem]]:
    if p < 1:
        raise errors.invalid("p", "must be 1 or more")
    if not 1 <= limit <= 100:
        raise errors.invalid("limit", "must be 1 to 100")
    if p * limit > 10_000:
        raise errors.invalid("p", "p × limit must not exceed 10000")
    if is_my_team and is_my_manage:
        raise errors.invalid("is_my_manage", "cannot be combined with is_my_team")
    window = _window(start, end, WINDOW_MAX_S)
    teams: list[int] | None = list(team_ids) if team_ids else None
    if is_my_team:
        mine = actor.team_ids_sync(conn)
        teams = [t for t in (teams if teams is not None else mine) if t in mine]
    total, rows = repository.list_page_sync(
        conn, actor.account_id, query=query.strip(), team_ids=teams,
        created_by=actor.person_id if is_my_manage else None, offset=(p - 1) * limit,
        limit=limit)
    return total, _items(conn, actor, rows, window)


def list_schedule_choices_sync(conn: Connection, actor: Actor, *, p: int,
                               limit: int) -> tuple[int, list[tuple[int, str, tuple[int, ...]]]]:
    """A page of the account's schedules as /schedule/list orders them, for pickers: (id,
    name, the role ids their layers give) from the stored definitions, with no timeline
    computed (a schedule's on-call costs milliseconds; a picker lists hundreds)."""
    if p < 1:
        raise errors.invalid("p", "must be 1 or more")
    if not 1 <= limit <= 100:
        raise errors.invalid("limit", "must be 1 to 100")
    total, rows = repository.list_page_sync(conn, actor.account_id, query="", team_ids=None,
                                            created_by=None, offset=(p - 1) * limit,
                                            limit=limit)
    return total, [(int(row.schedule_id), str(row.schedule_name or ""), tuple(sorted(
        {m.role_id for layer in _layers(row.layers) for g in layer.groups for m in g.members
         if m.role_id}))) for row in rows]


@reads_sync(SCHEDULE_VIEW, SCHEDULE_MANAGE)
def my_schedules_sync(conn: Connection, actor: Actor, *, start: int,
                      end: int) -> list[ScheduleItem]:
    """The schedules naming the caller, each with only the caller's own shifts in the window
    (default: the next 7 days)."""
    window = _window(start, end, SELF_WINDOW_MAX_S) or (
        actor.now_s, actor.now_s + SELF_DEFAULT_WINDOW_S)
    ids = repository.schedule_ids_of_person_sync(conn, actor.account_id, actor.person_id)
    rows = repository.get_many_sync(conn, actor.account_id, ids)
    return _items(conn, actor, rows, window, only_person=actor.person_id)


@reads_sync(SCHEDULE_VIEW, SCHEDULE_MANAGE)
def preview_sync(
    conn: Connection, actor: Actor, *, time_zone: str | None, layers: list[LayerIn] | None,
    start: int, end: int,
) -> ScheduleItem:
    """The timeline of a definition that is not stored (nothing is written)."""
    window = _window(start, end, WINDOW_MAX_S)
    if window is None:
        raise errors.invalid("start", "start and end are required")
    if time_zone is not None and time_zone not in _TIME_ZONES:
        raise errors.invalid("time_zone", "is not an IANA time zone name")
    zone_name = time_zone or account_service.account_time_zone_sync(conn, actor)
    stored = _validated_layers_sync(conn, actor, layers or [], 0)
    return render.schedule_item(
        layers=stored, calendars=oncall.calendars_of_sync(conn, actor, [stored]),
        time_zone=zone_name, window=window, now_s=actor.now_s,
        account_id=actor.account_id, stored=None, notify=ScheduleNotify(),
        # Validation refused any person who is not a live member.
        live={p for _, p in definition.person_fields(stored)})
