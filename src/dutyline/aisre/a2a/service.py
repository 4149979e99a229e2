"""Rules of A2A agents: scope and permission, card resolution, write-only credentials.

Scope: an account-level agent (team_id 0) is seen by everyone in the account and managed by
owners/admins; a team agent is seen and managed by that team's members (and owners/admins).
Managing also needs agent_manage, which the operation layer checks before we run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.a2a import repository as repo
from dutyline.aisre.a2a.auth import NO_AUTH, AgentAuth, build_auth, open_auth
from dutyline.aisre.a2a.card import ResolvedCard, resolve_card
from dutyline.aisre.a2a.schemas import (
    A2aAgentCreateRequest,
    A2aAgentIdRequest,
    A2aAgentListRequest,
    A2aAgentListResponse,
    A2aAgentRecord,
    A2aAgentUpdateRequest,
    A2aSkill,
)
from dutyline.aisre.scope import TeamScope, in_team_scope
from dutyline.api import errors
from dutyline.api.operation import Context
from dutyline.kit.ids import prefixed_id
from dutyline.kit.origin import same_origin
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox, SecretBoxError
from dutyline.platform.permissions import AGENT_MANAGE
from dutyline.platform.team import service as team_service

log = structlog.get_logger("dutyline.a2a")


def outbound_policy(ctx: Context) -> OutboundPolicy:
    return ctx.runtime.outbound_policy()


async def _can_manage(ctx: Context, team_id: int) -> bool:
    return ctx.caller.has(AGENT_MANAGE) and await in_team_scope(ctx.actor, team_id)


async def _require_manage(ctx: Context, team_id: int) -> None:
    if not await _can_manage(ctx, team_id):
        raise errors.AccessDenied()


async def _require_for_write(ctx: Context, agent_id: str) -> Any:
    """The agent, for a write. Another account's id is simply not found; an agent of the
    caller's account outside the caller's scope is refused."""
    row = await repo.get(ctx.conn, ctx.caller.account_id, agent_id)
    if row is None:
        raise errors.not_found("A2A agent", agent_id)
    await _require_manage(ctx, row.team_id)
    return row


def _stored_auth(box: SecretBox, row: Any) -> AgentAuth:
    """The stored credentials; a secret sealed under another server key must be set again."""
    try:
        return open_auth(box, row.auth_type, row.auth_config_encrypted)
    except SecretBoxError:
        raise errors.invalid(
            "auth_config", "the stored secret cannot be opened with this server's key; set it again"
        ) from None


async def _resolve(ctx: Context, card_url: str, auth: AgentAuth) -> ResolvedCard:
    return await resolve_card(card_url, policy=outbound_policy(ctx), headers=auth.headers())


def _card_values(resolved: ResolvedCard) -> dict[str, Any]:
    return {
        "agent_card_name": resolved.name[:255],
        "agent_card_skills": msgspec.json.encode(resolved.skills).decode(),
        "agent_card": msgspec.json.encode(resolved.card).decode(),
    }


async def create_agent(ctx: Context, req: A2aAgentCreateRequest) -> A2aAgentRecord:
    account_id = ctx.caller.account_id
    name = req.agent_name.strip()
    if not name:
        raise errors.invalid("agent_name", "is required")
    await _require_manage(ctx, req.team_id)
    if req.team_id and not await team_service.existing_team_ids(
        ctx.conn, account_id, [req.team_id]
    ):
        raise errors.invalid("team_id", "no such team")
    auth = build_auth(req.auth_type, req.auth_config, None)
    card_url = req.card_url.strip()
    resolved = await _resolve(ctx, card_url, auth)
    # The card is fetched in the read phase, so a slow agent holds no write lock (see
    # api/transaction.py); the team may have gone meanwhile, so check it again.
    await ctx.begin_writes()
    if req.team_id and not await team_service.existing_team_ids(
        ctx.conn, account_id, [req.team_id]
    ):
        raise errors.invalid("team_id", "no such team")
    now = ctx.now_ms
    agent_id = prefixed_id("a2a")
    await repo.insert_agent(ctx.conn, {
        "agent_id": agent_id, "account_id": account_id, "team_id": req.team_id,
        "agent_name": name, "instructions": req.instructions, "card_url": card_url,
        **_card_values(resolved),
        "auth_type": auth.auth_type, "auth_config_encrypted": auth.seal(ctx.runtime.secrets),
        "streaming": req.streaming, "status": "enabled", "created_by": ctx.caller.person_id,
        "created_at": now, "updated_at": now,
    })
    ctx.audit_targets.append(agent_id)
    row = await repo.get(ctx.conn, account_id, agent_id)
    return _record(row, ctx.runtime.secrets, can_edit=True)


async def update_agent(ctx: Context, req: A2aAgentUpdateRequest) -> A2aAgentRecord:
    row = await _require_for_write(ctx, req.agent_id)
    values: dict[str, Any] = {}
    if req.agent_name is not None:
        name = req.agent_name.strip()
        if not name:
            raise errors.invalid("agent_name", "is required")
        values["agent_name"] = name
    if req.instructions is not None:
        values["instructions"] = req.instructions
    if req.streaming is not None:
        values["streaming"] = req.streaming
    box = ctx.runtime.secrets
    changes_auth = req.auth_type is not None or req.auth_config is not None
    new_card_url = None if req.card_url is None else req.card_url.strip()
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
        auth = build_auth(req.auth_type or row.auth_type, req.auth_config, old_auth)
        values["auth_type"] = auth.auth_type
        values["auth_config_encrypted"] = auth.seal(box)
    elif moved:
        auth = NO_AUTH
        values["auth_type"] = auth.auth_type
        values["auth_config_encrypted"] = auth.seal(box)
    if new_card_url is not None and new_card_url != row.card_url:
        if auth is None:
            auth = _stored_auth(box, row)
        card_url = new_card_url
        values["card_url"] = card_url
        values.update(_card_values(await _resolve(ctx, card_url, auth)))
    ctx.audit_targets.append(row.agent_id)
    # Past any remote fetch: write, after checking the agent is still there for this caller.
    await ctx.begin_writes()
    row = await _require_for_write(ctx, req.agent_id)
    if values:
        values["updated_at"] = ctx.now_ms
        await repo.update_agent(ctx.conn, ctx.caller.account_id, row.agent_id, values)
        row = await repo.get(ctx.conn, ctx.caller.account_id, row.agent_id)
    return _record(row, box, can_edit=True)


async def delete_agent(ctx: Context, req: A2aAgentIdRequest) -> None:
    row = await _require_for_write(ctx, req.agent_id)
    await repo.delete_agent(ctx.conn, ctx.caller.account_id, row.agent_id)
    ctx.audit_targets.append(row.agent_id)


async def enable_agent(ctx: Context, req: A2aAgentIdRequest) -> None:
    row = await _require_for_write(ctx, req.agent_id)
    ctx.audit_targets.append(row.agent_id)
    if row.status == "enabled":
        raise errors.invalid("agent_id", "is already enabled")
    # The agent may have changed while it was off: enable only what answers with a valid card.
    auth = _stored_auth(ctx.runtime.secrets, row)
    resolved = await _resolve(ctx, row.card_url, auth)
    await ctx.begin_writes()
    fresh = await _require_for_write(ctx, req.agent_id)
    if fresh.status == "enabled":  # enabled by someone else while the card was fetched
        raise errors.invalid("agent_id", "is already enabled")
    if fresh.card_url != row.card_url:
        raise errors.invalid("card_url", "changed while the agent was being enabled; retry")
    await repo.update_agent(ctx.conn, ctx.caller.account_id, row.agent_id, {
        **_card_values(resolved), "status": "enabled", "updated_at": ctx.now_ms,
    })


async def disable_agent(ctx: Context, req: A2aAgentIdRequest) -> None:
    row = await _require_for_write(ctx, req.agent_id)
    ctx.audit_targets.append(row.agent_id)
    if row.status == "disabled":
        raise errors.invalid("agent_id", "is already disabled")
    await repo.update_agent(ctx.conn, ctx.caller.account_id, row.agent_id, {
        "status": "disabled", "updated_at": ctx.now_ms,
    })


async def get_agent(ctx: Context, req: A2aAgentIdRequest) -> A2aAgentRecord:
    row = await repo.find_visible(ctx.conn, await TeamScope.of(ctx.actor), req.agent_id)
    if row is None:
        raise errors.not_found("A2A agent", req.agent_id)
    return _record(row, ctx.runtime.secrets, can_edit=await _can_manage(ctx, row.team_id))


async def list_agents(ctx: Context, req: A2aAgentListRequest) -> A2aAgentListResponse:
    total, rows = await repo.list_page(
        ctx.conn, await TeamScope.of(ctx.actor), include_account=req.include_account,
        only_teams=req.team_ids, query=req.query.strip(),
        offset=req.offset, limit=req.limit,
    )
    box = ctx.runtime.secrets
    return A2aAgentListResponse(
        total=total,
        agents=[_record(r, box, can_edit=await _can_manage(ctx, r.team_id)) for r in rows],
    )


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
        card_url=row.card_url,
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
    conn: AsyncConnection, box: SecretBox, account_id: int, team_id: int = 0
) -> list[A2aTarget]:
    """The enabled agents a run in this scope may call (account-level plus the team's).

    An agent whose secret cannot be opened (sealed under another server key) is left out
    and logged, rather than failing the whole run."""
    targets: list[A2aTarget] = []
    for r in await repo.enabled_in_scope(conn, account_id, team_id):
        try:
            auth = open_auth(box, r.auth_type, r.auth_config_encrypted)
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
