"""Rules of A2A agents: scope and permission, card resolution, write-only credentials.

Scope: an account-level agent (team_id 0) is seen by everyone in the account and managed by
owners/admins; a team agent is seen and managed by that team's members (and owners/admins).
Managing also needs agent_manage: each write (its apply phase) requires it and notes its
audit entry (`@writes`), and the prepare phases check it with the team scope before fetching
anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import structlog
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.a2a import repository as repo
from dutyline.aisre.a2a.auth import NO_AUTH, AgentAuth, build_auth, open_auth
from dutyline.aisre.a2a.card import ResolvedCard, resolve_card
from dutyline.aisre.a2a.schemas import A2aAgentRecord, A2aSkill, AuthConfig
from dutyline.aisre.scope import TeamScope, in_team_scope, in_team_scope_sync
from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.outbound_secrets import mask_url, url_to_store
from dutyline.api.permissions import AGENT_MANAGE
from dutyline.kit.ids import prefixed_id
from dutyline.kit.origin import same_origin
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox, SecretBoxError
from dutyline.platform.team import service as team_service

log = structlog.get_logger("dutyline.a2a")


async def _can_manage(actor: Actor, team_id: int) -> bool:
    return actor.has(AGENT_MANAGE) and await in_team_scope(actor, team_id)


def _can_manage_sync(conn: Connection, actor: Actor, team_id: int) -> bool:
    return actor.has(AGENT_MANAGE) and in_team_scope_sync(conn, actor, team_id)


async def _require_manage(actor: Actor, team_id: int) -> None:
    if not await _can_manage(actor, team_id):
        raise errors.AccessDenied()


async def _require_for_write(conn: AsyncConnection, actor: Actor, agent_id: str) -> Any:
    """The agent, for a write. Another account's id is simply not found; an agent of the
    actor's account outside the actor's scope is refused."""
    row = await repo.get(conn, actor.account_id, agent_id)
    if row is None:
        raise errors.not_found("A2A agent", agent_id)
    await _require_manage(actor, row.team_id)
    return row


async def _check_team(conn: AsyncConnection, actor: Actor, team_id: int) -> None:
    if team_id and not await team_service.existing_team_ids(conn, actor, [team_id]):
        raise errors.invalid("team_id", "no such team")


def _stored_auth(box: SecretBox, row: Any) -> AgentAuth:
    """The stored credentials; a secret sealed under another server key must be set again."""
    try:
        return open_auth(box, row.auth_type, row.auth_config_encrypted)
    except SecretBoxError:
        raise errors.invalid(
            "auth_config", "the stored secret cannot be opened with this server's key; set it again"
        ) from None


async def _resolve(policy: OutboundPolicy, card_url: str, auth: AgentAuth) -> ResolvedCard:
    return await resolve_card(card_url, policy=policy, headers=auth.headers())


def _card_values(resolved: ResolvedCard) -> dict[str, Any]:
    return {
        "agent_card_name": resolved.name[:255],
        "agent_card_skills": msgspec.json.encode(resolved.skills).decode(),
        "agent_card": msgspec.json.encode(resolved.card).decode(),
    }


# --- operations ---------------------------------------------------------------------------
# The writes that fetch an agent's card have two phases: `prepare_*` reads and fetches (in
# the request's read phase, so a slow agent holds no write lock) and `apply_*` writes after
# the caller has switched to writing (ctx.begin_writes(), api/transaction.py), re-checking
# what may have changed meanwhile.


@dataclass(frozen=True)
class Prepared:
    """What a prepare phase read and fetched, for its apply phase."""

    agent_id: str
    values: dict[str, Any]
    row: Any = None


async def prepare_create(
    conn: AsyncConnection, actor: Actor, *, agent_name: str, card_url: str,
    instructions: str = "", team_id: int = 0, auth_type: str = "none",
    auth_config: AuthConfig | None = None, streaming: bool = False, deps: Deps,
) -> tuple[Prepared, AgentAuth]:
    """A new agent (team_id 0: account-level), its card fetched from `card_url`."""
    name = agent_name.strip()
    if not name:
        raise errors.invalid("agent_name", "is required")
    await _require_manage(actor, team_id)
    await _check_team(conn, actor, team_id)
    auth = build_auth(auth_type, auth_config, None)
    card_url = url_to_store(card_url.strip(), "", keep=False, field="card_url")
    resolved = await _resolve(deps.policy, card_url, auth)
    return Prepared(prefixed_id("a2a"), {
        "team_id": team_id, "agent_name": name, "instructions": instructions,
        "card_url": card_url, **_card_values(resolved), "streaming": streaming,
    }), auth


@writes("/safari/a2a-agent/create", AGENT_MANAGE, targets=lambda record: [record.agent_id])
async def apply_create(conn: AsyncConnection, actor: Actor, *, prepared: Prepared,
                       auth: AgentAuth, deps: Deps) -> A2aAgentRecord:
    # The team may have gone while the card was fetched: check it again.
    await _check_team(conn, actor, prepared.values["team_id"])
    now = actor.now_ms
    await repo.insert_agent(conn, {
        "agent_id": prepared.agent_id, "account_id": actor.account_id, **prepared.values,
        "auth_type": auth.auth_type, "auth_config_encrypted": auth.seal(deps.box),
        "status": "enabled", "created_by": actor.person_id,
        "created_at": now, "updated_at": now,
    })
    row = await repo.get(conn, actor.account_id, prepared.agent_id)
    return _record(row, deps.box, can_edit=True)


async def prepare_update(
    conn: AsyncConnection, actor: Actor, *, agent_id: str, agent_name: str | None = None,
    card_url: str | None = None, instructions: str | None = None, auth_type: str | None = None,
    auth_config: AuthConfig | None = None, streaming: bool | None = None, deps: Deps,
) -> Prepared:
    """None keeps a field; a masked secret keeps the stored one."""
    row = await _require_for_write(conn, actor, agent_id)
    values: dict[str, Any] = {}
    if agent_name is not None:
        name = agent_name.strip()
        if not name:
            raise errors.invalid("agent_name", "is required")
        values["agent_name"] = name
    if instructions is not None:
        values["instructions"] = instructions
    if streaming is not None:
        values["streaming"] = streaming
    box = deps.box
    changes_auth = auth_type is not None or auth_config is not None
    new_card_url = None if card_url is None else url_to_store(
        card_url.strip(), row.card_url, keep=True, field="card_url")
    # The stored secret was entered for the card URL's origin: moving it elsewhere drops the
    # secret unless this update supplies it anew, and the new card is fetched without it.
    moved = new_card_url is not None and not same_origin(row.card_url, new_card_url)
    try:
        old_auth: AgentAuth | None = (
            None if moved else open_auth(box, row.auth_type, row.auth_config_encrypted))
    except SecretBoxError:
        # Unreadable (another server key): only a fresh secret can replace it.
        old_auth = None
    auth = old_auth
    if changes_auth:
        auth = build_auth(auth_type or row.auth_type, auth_config, old_auth)
        values["auth_type"] = auth.auth_type
        values["auth_config_encrypted"] = auth.seal(box)
    elif moved:
        auth = NO_AUTH
        values["auth_type"] = auth.auth_type
        values["auth_config_encrypted"] = auth.seal(box)
    if new_card_url is not None and new_card_url != row.card_url:
        if auth is None:
            auth = _stored_auth(box, row)
        values["card_url"] = new_card_url
        values.update(_card_values(await _resolve(deps.policy, new_card_url, auth)))
    return Prepared(row.agent_id, values, row)


@writes("/safari/a2a-agent/update", AGENT_MANAGE, targets=lambda record: [record.agent_id])
async def apply_update(conn: AsyncConnection, actor: Actor, *, prepared: Prepared,
                       deps: Deps) -> A2aAgentRecord:
    # Past any remote fetch: write, after checking the agent is still there for this actor.
    row = await _require_for_write(conn, actor, prepared.agent_id)
    if prepared.values:
        await repo.update_agent(conn, actor.account_id, row.agent_id,
                                {**prepared.values, "updated_at": actor.now_ms})
        row = await repo.get(conn, actor.account_id, row.agent_id)
    return _record(row, deps.box, can_edit=True)


@writes("/safari/a2a-agent/delete", AGENT_MANAGE)
async def delete_agent(conn: AsyncConnection, actor: Actor, *, agent_id: str) -> str:
    """Delete an agent; returns its id."""
    row = await _require_for_write(conn, actor, agent_id)
    await repo.delete_agent(conn, actor.account_id, row.agent_id)
    return str(row.agent_id)


async def prepare_enable(conn: AsyncConnection, actor: Actor, *, agent_id: str,
                         deps: Deps) -> Prepared:
    row = await _require_for_write(conn, actor, agent_id)
    if row.status == "enabled":
        raise errors.invalid("agent_id", "is already enabled")
    # The agent may have changed while it was off: enable only what answers with a valid card.
    resolved = await _resolve(deps.policy, row.card_url, _stored_auth(deps.box, row))
    return Prepared(row.agent_id, _card_values(resolved), row)


@writes("/safari/a2a-agent/enable", AGENT_MANAGE)
async def apply_enable(conn: AsyncConnection, actor: Actor, *, prepared: Prepared) -> str:
    """Enable the agent `prepare_enable` resolved; returns its id."""
    fresh = await _require_for_write(conn, actor, prepared.agent_id)
    if fresh.status == "enabled":  # enabled by someone else while the card was fetched
        raise errors.invalid("agent_id", "is already enabled")
    if fresh.card_url != prepared.row.card_url:
        raise errors.invalid("card_url", "changed while the agent was being enabled; retry")
    await repo.update_agent(conn, actor.account_id, prepared.agent_id, {
        **prepared.values, "status": "enabled", "updated_at": actor.now_ms,
    })
    return prepared.agent_id


@writes("/safari/a2a-agent/disable", AGENT_MANAGE)
async def disable_agent(conn: AsyncConnection, actor: Actor, *, agent_id: str) -> str:
    """Disable an enabled agent; returns its id."""
    row = await _require_for_write(conn, actor, agent_id)
    if row.status == "disabled":
        raise errors.invalid("agent_id", "is already disabled")
    await repo.update_agent(conn, actor.account_id, row.agent_id, {
        "status": "disabled", "updated_at": actor.now_ms,
    })
    return str(row.agent_id)


def get_agent_sync(conn: Connection, actor: Actor, *, agent_id: str,
                   deps: Deps) -> A2aAgentRecord:
    row = repo.find_visible_sync(conn, TeamScope.of_sync(conn, actor), agent_id)
    if row is None:
        raise errors.not_found("A2A agent", agent_id)
    return _record(row, deps.box, can_edit=_can_manage_sync(conn, actor, row.team_id))


def list_agents_sync(
    conn: Connection, actor: Actor, *, include_account: bool = True,
    team_ids: list[int] | None = None, query: str = "", offset: int, limit: int,
    deps: Deps,
) -> tuple[int, list[A2aAgentRecord]]:
    total, rows = repo.list_page_sync(
        conn, TeamScope.of_sync(conn, actor), include_account=include_account,
        only_teams=team_ids, query=query.strip(), offset=offset, limit=limit,
    )
    return total, [_record(r, deps.box, can_edit=_can_manage_sync(conn, actor, r.team_id))
                   for r in rows]


def _record(row: Any, box: SecretBox, *, can_edit: bool) -> A2aAgentRecord:
    try:
        masked = open_auth(box, row.auth_type, row.auth_config_encrypted).masked()
    except SecretBoxError:
        # Reads must not fail on a secret sealed under another key; the mask says "set".
        masked = AgentAuth(row.auth_type, header_name="").masked()
    return A2aAgentRecord(
        agent_id=row.agent_id,
        account_id=row.account_id,
        team_id=row.team_id,
        agent_name=row.agent_name,
        instructions=row.instructions,
        card_url=mask_url(row.card_url),  # the credentials it carries are write-only
        agent_card_name=row.agent_card_name,
        agent_card_skills=msgspec.json.decode(row.agent_card_skills, type=list[A2aSkill]),
        agent_card=msgspec.json.decode(row.agent_card, type=dict[str, Any]),
        auth_type=row.auth_type,
        auth_config=masked,
        streaming=bool(row.streaming),
        status=row.status,
        can_edit=can_edit,
        created_by=row.created_by,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


# --- for the agent loop -------------------------------------------------------------------


@dataclass(frozen=True)
class A2aTarget:
    """What the gateway needs to call one agent, credentials already opened."""

    agent_id: str
    agent_name: str
    instructions: str
    card: dict[str, Any]
    skills: list[dict[str, Any]]
    auth: AgentAuth
    streaming: bool


async def enabled_targets(
    conn: AsyncConnection, actor: Actor, *, team_id: int = 0, deps: Deps
) -> list[A2aTarget]:
    """The enabled agents a run in this scope may call (account-level plus the team's).

    An agent whose secret cannot be opened (sealed under another server key) is left out
    and logged, rather than failing the whole run."""
    targets: list[A2aTarget] = []
    account_id = actor.account_id
    for r in await repo.enabled_in_scope(conn, account_id, team_id):
        try:
            auth = open_auth(deps.box, r.auth_type, r.auth_config_encrypted)
        except SecretBoxError:
            log.warning("a2a_secret_unreadable", agent_id=r.agent_id, account_id=account_id)
            continue
        targets.append(A2aTarget(
            agent_id=r.agent_id, agent_name=r.agent_name, instructions=r.instructions,
            card=msgspec.json.decode(r.agent_card),
            skills=msgspec.json.decode(r.agent_card_skills), auth=auth,
            streaming=bool(r.streaming),
        ))
    return targets
