"""What alert ingestion needs to know about a channel, read in one query.

Ingestion runs in its own transaction, without a Caller: it finds the channel through an
integration key (channel.integration.service.lookup_key_sync), so this read is scoped by
account and channel id only, never by a person's visibility."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.channel import repository as repo
from dutyline.channel.schemas import DEFAULT_FLAPPING, DEFAULT_GROUP, Flapping, Group

_group_decoder = msgspec.json.Decoder(Group)
_flapping_decoder = msgspec.json.Decoder(Flapping)


@dataclass(frozen=True, slots=True)
class GroupSettings:
    method: str  # "i" intelligent, "p" by the `equals` keys, "n" none
    # Each inner list is one bucket definition: alerts agreeing on all its keys group.
    equals: tuple[tuple[str, ...], ...]
    all_equals_required: bool
    time_window: int  # seconds (the wire's `time_window` is minutes); 0: no window
    time_window_mins: int
    window_type: str  # "tumbling" | "sliding"
    storm_threshold: int
    storm_thresholds: tuple[int, ...]
    i_keys: tuple[str, ...]
    i_score_threshold: float | None
    cases: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class FlappingSettings:
    is_disabled: bool
    max_changes: int
    in_mins: int
    mute_mins: int


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    channel_id: int
    account_id: int
    channel_name: str
    status: str  # enabled | disabled | deleted
    team_id: int
    group: GroupSettings
    flapping: FlappingSettings
    auto_resolve_timeout: int  # seconds; 0: never
    auto_resolve_mode: str  # "trigger": from the first alert | "update": from the last event
    disable_auto_close: bool
    disable_outlier_detection: bool
    # Moves on every write to the channel's inhibit/silence/drop rules (channel/noise).
    noise_version: int = 0


def decode_group(text: str) -> Group:
    try:
        return _group_decoder.decode(text)
    except msgspec.MsgspecError:
        # Rows written before a column had content hold "{}": the defaults apply.
        return DEFAULT_GROUP


def decode_flapping(text: str) -> Flapping:
    try:
        return _flapping_decoder.decode(text)
    except msgspec.MsgspecError:
        return DEFAULT_FLAPPING


def group_settings(group: Group) -> GroupSettings:
    return GroupSettings(
        method=group.method,
        equals=tuple(tuple(keys) for keys in group.equals),
        all_equals_required=group.all_equals_required,
        time_window=group.time_window * 60,
        time_window_mins=group.time_window,
        window_type=group.window_type,
        storm_threshold=group.storm_threshold,
        storm_thresholds=tuple(group.storm_thresholds),
        i_keys=tuple(group.i_keys),
        i_score_threshold=group.i_score_threshold,
        cases=tuple(group.cases),
    )


def settings_from_row(row: Any) -> ChannelSettings:
    flapping = decode_flapping(row.flapping)
    return ChannelSettings(
        channel_id=row.channel_id,
        account_id=row.account_id,
        channel_name=row.channel_name,
        status=row.status,
        team_id=row.team_id,
        group=group_settings(decode_group(row.group_config)),
        flapping=FlappingSettings(
            is_disabled=flapping.is_disabled, max_changes=flapping.max_changes,
            in_mins=flapping.in_mins, mute_mins=flapping.mute_mins,
        ),
        auto_resolve_timeout=row.auto_resolve_timeout,
        auto_resolve_mode=row.auto_resolve_mode,
        disable_auto_close=bool(row.disable_auto_close),
        disable_outlier_detection=bool(row.disable_outlier_detection),
        noise_version=int(row.noise_version),
    )


def load_settings_sync(conn: Connection, account_id: int,
                       channel_id: int) -> ChannelSettings | None:
    """`load_settings` on a sync connection (ingestion routing an alert)."""
    row = repo.get_sync(conn, account_id, channel_id)
    return None if row is None else settings_from_row(row)


async def load_settings(
    conn: AsyncConnection, actor: Actor, *, channel_id: int
) -> ChannelSettings | None:
    """The channel's settings, deleted channels included (status says so); None when the
    channel does not exist in this account."""
    row = await repo.get(conn, actor.account_id, channel_id)
    return None if row is None else settings_from_row(row)
