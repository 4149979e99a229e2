"""Rules of integrations: one secret key each, shown once and stored hashed; a key stops
working when its integration is deleted or its channel is deleted."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors, outbound_urls
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.auth import hash_app_key
from dutyline.api.deps import Deps
from dutyline.api.outbound_secrets import mask_url, url_to_store
from dutyline.api.permissions import INTEGRATION_MANAGE, INTEGRATION_VIEW
from dutyline.channel import service as channels
from dutyline.channel.integration import repository as repo
from dutyline.channel.integration.schemas import CreateIntegrationRequest, IntegrationItem
from dutyline.channel.settings import ChannelSettings, settings_from_row
from dutyline.kit.ids import numeric_id

# The limits of an integration's input, for callers that decode a form into it (the console).
IntegrationInput = CreateIntegrationRequest

KEY_PREFIX = "ik_"
SUFFIX_LENGTH = 6
STANDARD = "standard"  # alerts: /event/push/alert/*
CHANGE = "change"  # change events: /event/push/change/standard
CUSTOM_ACTION = "custom_action"  # /incident/custom-action/do calls its url
SIGNING_SECRET_PREFIX = "dlsig_"


@dataclass(frozen=True, slots=True)
class ResolvedIntegration:
    integration_id: int
    account_id: int
    channel_id: int
    integration_name: str
    integration_type: str
    channel_status: str  # enabled | disabled (a deleted channel's keys do not resolve)


def hash_key(integration_key: str) -> str:
    """Same SHA-256 as app keys: a key is 256 random bits, so no salt or slow hash is needed."""
    return hash_app_key(integration_key)


@dataclass(frozen=True, slots=True)
class KeyLookup:
    integration: ResolvedIntegration
    channel: ChannelSettings


def is_well_formed(integration_key: str) -> bool:
    return integration_key.startswith(KEY_PREFIX) and len(integration_key) <= 128


def lookup_key_sync(conn: Connection, key_hash: str) -> KeyLookup | None:
    """The integration of a key's hash and its channel's settings, in one query; None for an
    unknown or deleted key, or one whose channel is deleted. A disabled channel still
    resolves: the caller decides."""
    row = repo.resolve_sync(conn, key_hash)
    if row is None:
        return None
    return KeyLookup(
        ResolvedIntegration(
            integration_id=row.integration_id, account_id=row.account_id,
            channel_id=row.channel_id, integration_name=row.integration_name,
            integration_type=row.integration_type, channel_status=row.status,
        ),
        settings_from_row(row),
    )


def integration_names_sync(conn: Connection, actor: Actor,
                           integration_ids: list[int]) -> dict[int, tuple[str, str]]:
    """{integration_id: (integration_name, integration_type)}, deleted ones included, for
    records (alerts, incidents) that name the integration they came through."""
    return repo.names_sync(conn, actor.account_id, integration_ids)


def integration_ids_of_types_sync(conn: Connection, actor: Actor,
                                  types: list[str]) -> list[int]:
    """The account's integrations (deleted ones included) of these types, for filters of
    records by integration type (/alert-event/list)."""
    return repo.ids_of_types_sync(conn, actor.account_id, types) if types else []


async def system_integration(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                             integration_type: str, name: str) -> str | None:
    """The key hash of a channel's integration for events the service raises itself (alert
    rules of the monit domain), created on first use with a key nobody is ever shown (and
    that creation audited as the system's); None when the channel is not a live channel of
    the account. The hash is all ingestion needs."""
    found = await repo.first_of_type(conn, actor.account_id, channel_id, integration_type)
    if found is not None:
        return str(found.key_hash)
    if not await repo.live_channel_exists(conn, actor.account_id, channel_id):
        return None
    try:
        return (await _create_system_integration(
            conn, actor, channel_id=channel_id, integration_type=integration_type,
            name=name)).key_hash
    except IntegrityError:
        # A concurrent first use created it: take that one.
        found = await repo.first_of_type(conn, actor.account_id, channel_id, integration_type)
        return None if found is None else str(found.key_hash)


@dataclass(frozen=True, slots=True)
class _SystemIntegration:
    integration_id: int
    key_hash: str


@writes("/integration/create", targets=lambda made: [made.integration_id])
async def _create_system_integration(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                                     integration_type: str, name: str) -> _SystemIntegration:
    made = _SystemIntegration(numeric_id(), hash_key(KEY_PREFIX + secrets.token_urlsafe(32)))
    actor.note_audit_targets(channel_id)
    async with conn.begin_nested():
        await repo.insert_integration(conn, {
            "integration_id": made.integration_id, "account_id": actor.account_id,
            "channel_id": channel_id, "integration_name": name,
            "integration_type": integration_type, "key_hash": made.key_hash,
            "key_suffix": "", "status": "enabled", "creator_id": 0,
            "created_at": actor.now_s, "updated_at": actor.now_s,
        })
    return made


@dataclass(frozen=True, slots=True)
class CreatedIntegration:
    integration_id: int
    integration_name: str
    integration_key: str  # the plaintext key: shown in the create answer only, never again
    integration_type: str = STANDARD
    signing_secret: str = ""  # a custom action's: shown in the create answer only


@writes("/integration/create", INTEGRATION_MANAGE,
        targets=lambda created: [created.integration_id])
async def create_integration(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                             integration_name: str, integration_type: str = STANDARD,
                             url: str | None = None,
                             deps: Deps | None = None) -> CreatedIntegration:
    """An integration of a live channel the actor sees: a standard one (alerts) or a change
    one (change events) with a fresh key, or a custom action calling `url` with a fresh
    signing key (`deps` seals it)."""
    if integration_type not in (STANDARD, CHANGE, CUSTOM_ACTION):
        raise errors.invalid("integration_type", "must be standard, change or custom_action")
    row = await channels.require_visible(conn, actor, channel_id)
    name = integration_name.strip()
    if not name:
        raise errors.invalid("integration_name", "is required")
    action_url = _custom_action_url(integration_type, url, deps)
    if await repo.name_taken(conn, row.channel_id, name):
        raise errors.invalid("integration_name", "already exists")
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    integration_id = numeric_id()
    now = actor.now_s
    try:
        await repo.insert_integration(conn, {
            "integration_id": integration_id, "account_id": actor.account_id,
            "channel_id": row.channel_id, "integration_name": name,
            "integration_type": integration_type, "key_hash": hash_key(plaintext),
            "key_suffix": "" if action_url else plaintext[-SUFFIX_LENGTH:],
            "status": "enabled", "creator_id": actor.person_id, "created_at": now,
            "updated_at": now,
        })
    except IntegrityError:
        # Lost a race with a concurrent create of the same name in this channel.
        raise errors.invalid("integration_name", "already exists") from None
    if action_url is None:
        return CreatedIntegration(integration_id=integration_id, integration_name=name,
                                  integration_key=plaintext, integration_type=integration_type)
    assert deps is not None  # checked by _custom_action_url
    signing_secret = SIGNING_SECRET_PREFIX + secrets.token_urlsafe(32)
    await repo.insert_custom_action(conn, {
        "integration_id": integration_id, "account_id": actor.account_id, "url": action_url,
        "signing_secret_sealed": deps.box.seal(signing_secret)})
    # A custom action takes no alerts: its key (kept only because every integration has
    # one) is never shown, so nobody can push with it.
    return CreatedIntegration(integration_id=integration_id, integration_name=name,
                              integration_key="", integration_type=CUSTOM_ACTION,
                              signing_secret=signing_secret)


def _custom_action_url(integration_type: str, url: str | None, deps: Deps | None) -> str | None:
    """A custom action's address, checked by the outbound guard (what the URL alone gives
    away: the call checks again, at connect time); None for a standard integration."""
    if integration_type != CUSTOM_ACTION:
        if url is not None:
            raise errors.invalid("url", "is only for custom_action integrations")
        return None
    if deps is None:  # every caller that creates custom actions passes the process's deps
        raise errors.InternalError()
    action_url = (url or "").strip()
    if not action_url:
        raise errors.invalid("url", "is required")
    url_to_store(action_url, "", keep=False, field="url")  # a mask has nothing to keep
    outbound_urls.check_static(action_url, deps.policy, field="url")
    return action_url


@dataclass(frozen=True, slots=True)
class CustomActionTarget:
    """What calling a custom action needs: where, and the key that signs the request."""

    integration_id: int
    integration_name: str
    url: str
    signing_secret: str


async def custom_action_target(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                               integration_id: int, deps: Deps) -> CustomActionTarget:
    """The custom action `integration_id` of the channel (whose incident the caller has
    found already, which is the visibility check). Not found unless it is a live custom
    action of that channel; refused while it is not enabled."""
    row = await repo.custom_action_of_channel(conn, actor.account_id, channel_id,
                                              integration_id)
    if row is None or row.status == "deleted":
        raise errors.not_found("integration", integration_id)
    if row.status != "enabled":
        raise errors.invalid("integration_id", "is not enabled")
    return CustomActionTarget(
        integration_id=int(row.integration_id), integration_name=row.integration_name,
        url=row.url, signing_secret=deps.box.open(row.signing_secret_sealed))


@reads_sync(INTEGRATION_VIEW)
def integration_info_sync(conn: Connection, actor: Actor, *,
                          integration_id: int) -> IntegrationItem:
    return _item(_require_sync(conn, actor, integration_id))


@reads_sync(INTEGRATION_VIEW)
def list_integrations_sync(conn: Connection, actor: Actor, *, channel_id: int | None,
                           offset: int, limit: int) -> tuple[int, list[IntegrationItem]]:
    """(total, one page of the live integrations of one channel or of every channel the
    actor sees)."""
    if channel_id is not None:
        channels.require_visible_sync(conn, actor, channel_id)
    total, rows = repo.list_page_sync(
        conn, actor.account_id, channels.viewer_sync(conn, actor),
        channel_id=channel_id, offset=offset, limit=limit,
    )
    return total, [_item(r) for r in rows]


@writes("/integration/delete", INTEGRATION_MANAGE, dangerous=True)
async def delete_integration(conn: AsyncConnection, actor: Actor, *,
                             integration_id: int) -> int:
    """The key stops accepting alerts at once; returns the integration's id."""
    row = await _require(conn, actor, integration_id)
    await repo.mark_deleted(conn, actor.account_id, row.integration_id, actor.now_s)
    return int(row.integration_id)


@dataclass(frozen=True, slots=True)
class RotatedKey:
    integration_id: int
    integration_key: str  # the new plaintext key: shown in the rotate answer only


@writes("/integration/rotate-key", INTEGRATION_MANAGE, dangerous=True,
        targets=lambda rotated: [rotated.integration_id])
async def rotate_key(conn: AsyncConnection, actor: Actor, *,
                     integration_id: int) -> RotatedKey:
    """A new key for a standard or change integration: the old one stops working at once
    (its hash no longer resolves, in the very transaction that stores a push). A custom
    action has no key to rotate."""
    row = await _require(conn, actor, integration_id)
    if row.integration_type not in (STANDARD, CHANGE):
        raise errors.invalid("integration_id", "has no key to rotate")
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    await repo.set_key(conn, actor.account_id, int(row.integration_id),
                       key_hash=hash_key(plaintext), key_suffix=plaintext[-SUFFIX_LENGTH:],
                       now_s=actor.now_s)
    return RotatedKey(int(row.integration_id), plaintext)


def alert_key_hash_sync(conn: Connection, actor: Actor, *, integration_id: int) -> str:
    """The key hash of a live standard integration the actor sees, for an alert the server
    pushes in its name (the console's test alert); not found otherwise."""
    row = _require_sync(conn, actor, integration_id)
    if row.integration_type != STANDARD:
        raise errors.invalid("integration_id", "does not take alerts")
    return str(row.key_hash)


def require_live_sync(conn: Connection, actor: Actor, *, integration_id: int) -> int:
    """For other domains keyed by integration (enrichment, pipelines, routes): not found
    unless the actor sees this live integration."""
    return int(_require_sync(conn, actor, integration_id).integration_id)


async def require_live(conn: AsyncConnection, actor: Actor, *, integration_id: int) -> int:
    return await conn.run_sync(lambda sync: require_live_sync(
        sync, actor, integration_id=integration_id))


def _require_sync(conn: Connection, actor: Actor, integration_id: int) -> Any:
    row = repo.get_visible_sync(conn, actor.account_id, integration_id,
                                channels.viewer_sync(conn, actor))
    if row is None:
        raise errors.not_found("integration", integration_id)
    return row


async def _require(conn: AsyncConnection, actor: Actor, integration_id: int) -> Any:
    return await conn.run_sync(_require_sync, actor, integration_id)


def _item(row: Any) -> IntegrationItem:
    return IntegrationItem(
        integration_id=row.integration_id, integration_name=row.integration_name,
        integration_type=row.integration_type, channel_id=row.channel_id,
        channel_name=row.channel_name, account_id=row.account_id, status=row.status,
        key_suffix=row.key_suffix, creator_id=row.creator_id, created_at=row.created_at,
        updated_at=row.updated_at, url=None if row.url is None else mask_url(row.url),
    )
