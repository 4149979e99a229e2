"""Rules of app keys: anyone manages their own keys; listing another member's keys needs
account_manage (a list shows no key); issuing or deleting one also needs every right that
member holds, since a key acts with its member's rights, and only the Owner touches the
Owner's keys (role.service.require_over). The plaintext is returned once, at creation.
Issuing and deleting a key are audited whoever calls them (any member may, for their own
keys).

The operator's `dutyline app-key` command calls these too, acting for the key's account as
`Actor.system`; only listing across every account is the operator's alone (`operator_list`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.platform.app_key import keys
from dutyline.platform.app_key import repository as repo

# The record a new key's request is checked against (the console decodes its form into it).
from dutyline.platform.app_key.schemas import AppKeyCreateRequest as AppKeyCreateRequest
from dutyline.platform.app_key.schemas import AppKeyItem
from dutyline.platform.role import service as roles


@writes("/app-key/create", targets=lambda issued: [issued.key_id])
async def create_key(conn: AsyncConnection, actor: Actor, *, key_name: str,
                     person_id: int | None = None) -> keys.IssuedKey:
    """Issue a key for the actor, or for another enabled member of the account."""
    name = key_name.strip()
    if not name:
        raise errors.invalid("key_name", "is required")
    person_id = await _target_person(conn, actor, person_id)
    # A key acts with its member's rights: issuing one is acting as them.
    await roles.require_over(conn, actor, member_ids=[person_id])
    return await keys.issue(conn, account_id=actor.account_id, person_id=person_id,
                            key_name=name, now_s=actor.now_s)


def list_keys_sync(conn: Connection, actor: Actor, *,
                   person_id: int | None = None) -> list[AppKeyItem]:
    """One member's keys (never the keys themselves)."""
    person_id = _target_person_sync(conn, actor, person_id)
    return [AppKeyItem(key_id=r[0], key_name=r[1], person_id=r[2], suffix=r[3],
                       created_at=r[4], last_used_at=r[5])
            for r in repo.list_for_person_sync(conn, actor.account_id, person_id)]


def key_info_sync(conn: Connection, actor: Actor, *, key_id: int) -> AppKeyItem:
    """One key of the account (never the key itself): one's own, or any with
    account_manage, as listing them; any other is not found."""
    row = repo.get_sync(conn, actor.account_id, key_id)
    if row is None or (row.person_id != actor.person_id and not actor.has(ACCOUNT_MANAGE)):
        raise errors.not_found("app key", key_id)
    return AppKeyItem(key_id=row.key_id, key_name=row.key_name, person_id=row.person_id,
                      suffix=row.suffix, created_at=row.created_at,
                      last_used_at=row.last_used_at)


@reads_sync(ACCOUNT_MANAGE)
def list_account_keys_sync(conn: Connection, actor: Actor, *, offset: int,
                           limit: int) -> tuple[int, list[AppKeyItem]]:
    """(how many, one page of) every member's keys of the account, oldest first (never the
    keys themselves): what /app-key/list shows member by member, for those who manage the
    account."""
    total, rows = repo.list_for_account_sync(conn, actor.account_id, offset=offset,
                                             limit=limit)
    return total, [AppKeyItem(key_id=r[0], key_name=r[1], person_id=r[2], suffix=r[3],
                              created_at=r[4], last_used_at=r[5]) for r in rows]


@writes("/app-key/delete", dangerous=True)
async def delete_key(conn: AsyncConnection, actor: Actor, *, key_id: int) -> None:
    row = await repo.get(conn, actor.account_id, key_id)
    if row is None:
        raise errors.not_found("app key", key_id)
    if row.person_id != actor.person_id and not actor.has(ACCOUNT_MANAGE):
        raise errors.AccessDenied()
    await roles.require_over(conn, actor, member_ids=[row.person_id])
    actor.note_audit_targets(row.key_id)
    # Authentication reads the table on every request (no cache), so the key fails on the
    # very next call, in every process.
    await repo.delete_key(conn, row.key_id)


async def account_of_member(conn: AsyncConnection, *, person_id: int) -> int:
    """The account of an enabled member (the operator names a person, not an account)."""
    account_id = await repo.account_of_member(conn, person_id)
    if account_id is None:
        raise errors.not_found("member", person_id)
    return account_id


async def account_of_key(conn: AsyncConnection, *, key_id: int) -> int:
    """The account a key belongs to (the operator names a key, not an account)."""
    account_id = await repo.account_of_key(conn, key_id)
    if account_id is None:
        raise errors.not_found("app key", key_id)
    return account_id


async def operator_list(conn: AsyncConnection, *, account_id: int | None
                        ) -> list[dict[str, Any]]:
    """Every key of one account, or of every account (the server's operator only)."""
    return [dict(r._mapping) for r in await repo.list_all(conn, account_id)]


def _target_person_sync(conn: Connection, actor: Actor, person_id: int | None) -> int:
    """Whose keys: the actor's own, or — with account_manage — any enabled member's."""
    if person_id is None or person_id == actor.person_id:
        return actor.person_id
    if not actor.has(ACCOUNT_MANAGE):
        raise errors.AccessDenied()
    if repo.account_of_member_sync(conn, person_id) != actor.account_id:
        raise errors.not_found("member", person_id)
    return person_id


async def _target_person(conn: AsyncConnection, actor: Actor, person_id: int | None) -> int:
    return await conn.run_sync(_target_person_sync, actor, person_id)
