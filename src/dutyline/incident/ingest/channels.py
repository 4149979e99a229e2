"""The one place ingestion and the alert API learn about channels and integrations, through
the channel domain's services (never its tables)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.channel import service as channel_service
from dutyline.channel.integration.service import CHANGE as CHANGE_INTEGRATION
from dutyline.channel.integration.service import (
    ResolvedIntegration,
    alert_key_hash_sync,
    hash_key,
    integration_ids_of_types_sync,
    integration_names_sync,
    is_well_formed,
    lookup_key_sync,
)
from dutyline.channel.service import channel_names_sync

__all__ = ["CHANGE_INTEGRATION", "IngestSettings", "Lookup", "Names", "ResolvedIntegration",
           "alert_key_hash_sync", "hash_key", "is_well_formed", "load_settings", "lookup"]


@dataclass(frozen=True, slots=True)
class IngestSettings:
    """What grouping and auto-resolve need from a channel."""

    group_method: str  # i | p | n
    equals: tuple[tuple[str, ...], ...]
    all_equals_required: bool
    time_window: int  # seconds; 0: no window
    auto_resolve_timeout: int  # seconds; 0: never
    auto_resolve_mode: str  # trigger | update
    disable_auto_close: bool
    noise_version: int = 0  # the channel's rules version (channel/noise)


@dataclass(frozen=True, slots=True)
class Lookup:
    integration: ResolvedIntegration
    settings: IngestSettings


def lookup(conn: Connection, key_hash: str) -> Lookup | None:
    """The integration of a key's hash and its channel's grouping settings, in one query;
    None for an unknown or deleted key or a deleted channel."""
    found = lookup_key_sync(conn, key_hash)
    if found is None:
        return None
    return Lookup(found.integration, _ingest_settings(found.channel))


def routed_settings_sync(conn: Connection, account_id: int,
                         channel_id: int) -> IngestSettings | None:
    """The settings of a channel an alert is routed to; None unless it is live and enabled."""
    found = channel_service.load_settings_sync(conn, account_id, channel_id)
    if found is None or found.status != "enabled":
        return None
    return _ingest_settings(found)


async def load_settings(
    conn: AsyncConnection, actor: Actor, *, channel_id: int
) -> IngestSettings | None:
    found = await channel_service.load_settings(conn, actor, channel_id=channel_id)
    return None if found is None else _ingest_settings(found)


def _ingest_settings(found: channel_service.ChannelSettings) -> IngestSettings:
    group = found.group
    return IngestSettings(
        group_method=group.method,
        equals=group.equals,
        all_equals_required=group.all_equals_required,
        time_window=group.time_window,
        auto_resolve_timeout=found.auto_resolve_timeout,
        auto_resolve_mode=found.auto_resolve_mode,
        disable_auto_close=found.disable_auto_close,
        noise_version=found.noise_version,
    )


@dataclass(frozen=True, slots=True)
class Names:
    channels: dict[int, tuple[str, str]]  # channel_id -> (name, status)
    integrations: dict[int, tuple[str, str]]  # integration_id -> (name, type)


def names_sync(conn: Connection, actor: Actor, channel_ids: Iterable[int],
               integration_ids: Iterable[int]) -> Names:
    """Display names for alert records (deleted channels and integrations included)."""
    return Names(
        channel_names_sync(conn, actor, sorted(set(channel_ids))),
        integration_names_sync(conn, actor, sorted(set(integration_ids))),
    )


def integrations_of_types_sync(conn: Connection, actor: Actor,
                               types: Iterable[str]) -> list[int]:
    """The account's integrations of these types, read inside a sync unit of database
    work."""
    return integration_ids_of_types_sync(conn, actor, sorted(set(types)))
