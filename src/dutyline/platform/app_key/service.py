"""Rules of app keys: anyone manages their own keys; another member's keys need
account_manage; the plaintext is returned once, at creation."""

from __future__ import annotations

from dutyline.api import errors
from dutyline.api.operation import Context
from dutyline.platform.app_key import keys
from dutyline.platform.app_key import repository as repo
from dutyline.platform.app_key.schemas import (
    AppKeyCreateRequest,
    AppKeyCreateResponse,
    AppKeyDeleteRequest,
    AppKeyItem,
    AppKeyListRequest,
    AppKeyListResponse,
)
from dutyline.platform.permissions import ACCOUNT_MANAGE


async def create_key(ctx: Context, req: AppKeyCreateRequest) -> AppKeyCreateResponse:
    name = req.key_name.strip()
    if not name:
        raise errors.invalid("key_name", "is required")
    person_id = await _target_person(ctx, req.person_id)
    issued = await keys.issue(ctx.conn, account_id=ctx.caller.account_id, person_id=person_id,
                              key_name=name, now_s=ctx.now_s)
    ctx.audit_targets.append(issued.key_id)
    return AppKeyCreateResponse(key_id=issued.key_id, key_name=issued.key_name,
                                person_id=person_id, app_key=issued.app_key)


async def list_keys(ctx: Context, req: AppKeyListRequest) -> AppKeyListResponse:
    person_id = await _target_person(ctx, req.person_id)
    rows = await repo.list_for_person(ctx.conn, ctx.caller.account_id, person_id)
    return AppKeyListResponse(items=[
        AppKeyItem(key_id=r.key_id, key_name=r.key_name, person_id=r.person_id, suffix=r.suffix,
                   created_at=r.created_at, last_used_at=r.last_used_at)
        for r in rows
    ])


async def delete_key(ctx: Context, req: AppKeyDeleteRequest) -> None:
    row = await repo.get(ctx.conn, ctx.caller.account_id, req.key_id)
    if row is None:
        raise errors.not_found("app key", req.key_id)
    if row.person_id != ctx.caller.person_id and not ctx.caller.has(ACCOUNT_MANAGE):
        raise errors.AccessDenied()
    # Authentication reads the table on every request (no cache), so the key fails on the
    # very next call, in every process.
    await repo.delete_key(ctx.conn, row.key_id)
    ctx.audit_targets.append(row.key_id)


async def _target_person(ctx: Context, person_id: int | None) -> int:
    """Whose keys: the caller's own, or — with account_manage — any enabled member's."""
    caller = ctx.caller
    if person_id is None or person_id == caller.person_id:
        return caller.person_id
    if not caller.has(ACCOUNT_MANAGE):
        raise errors.AccessDenied()
    if not await repo.active_member(ctx.conn, caller.account_id, person_id):
        raise errors.not_found("member", person_id)
    return person_id
