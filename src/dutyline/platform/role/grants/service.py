"""One role granted to, or revoked from, several members (/role/member/grant|revoke).

All or nothing: the role and every member must be the caller's account's (a foreign or
deleted id is not found, and nothing changes). Members who already hold the role (grant) or
do not (revoke) are skipped. The Owner role is fixed: it is never granted or revoked, so an
account keeps its one owner. A caller may only move a role whose permissions they hold
themselves (role.service.require_within_rights), and only on members whose every right they
hold (role.service.require_over). Permissions are read afresh on every
request (platform/auth.py), so a change applies to the member's very next call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.platform.role import repository as repo
from dutyline.platform.role import service as roles

OWNER_ROLE_FIXED = "the Owner role cannot be granted or revoked"


@writes("/role/member/grant", ACCOUNT_MANAGE)
async def grant_role(conn: AsyncConnection, actor: Actor, *, role_id: int,
                     member_ids: Sequence[int]) -> None:
    """Give the role to these members (those who hold it already are skipped)."""
    row, wanted = await _prepare(conn, actor, role_id, member_ids)
    holders = await repo.holders_among(conn, row.role_id, wanted)
    added = [m for m in wanted if m not in holders]
    await repo.add_holders(conn, actor.account_id, row.role_id, added, actor.now_s)


@writes("/role/member/revoke", ACCOUNT_MANAGE)
async def revoke_role(conn: AsyncConnection, actor: Actor, *, role_id: int,
                      member_ids: Sequence[int]) -> None:
    """Take the role from these members (those who do not hold it are skipped)."""
    row, wanted = await _prepare(conn, actor, role_id, member_ids)
    holders = await repo.holders_among(conn, row.role_id, wanted)
    removed = [m for m in wanted if m in holders]
    await repo.remove_holders(conn, row.role_id, removed, actor.now_s)


async def _prepare(conn: AsyncConnection, actor: Actor, role_id: int,
                   member_ids: Sequence[int]) -> tuple[Any, list[int]]:
    [row] = await roles.require_roles(conn, actor, role_ids=[role_id])
    # The audit entry names the role and every member asked for, skipped ones included.
    wanted = list(dict.fromkeys(member_ids))
    actor.note_audit_targets(row.role_id, *wanted)
    if row.builtin == "owner":
        raise errors.invalid("role_id", OWNER_ROLE_FIXED)
    live = await repo.live_member_ids(conn, actor.account_id, wanted)
    if missing := [m for m in wanted if m not in live]:
        raise errors.not_found("member", missing[0])
    await roles.require_within_rights(conn, actor, rows=[row])
    await roles.require_over(conn, actor, member_ids=wanted)
    return row, wanted
