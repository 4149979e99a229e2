"""Creating an account (the account row, its built-in roles, its Owner and a first key),
reading its own record, and its managers changing its settings (name, time zone, language)."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors, permissions
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.kit.ids import numeric_id
from dutyline.platform.account import repository
from dutyline.platform.account.schemas import AccountChanges as AccountChanges  # it takes
from dutyline.platform.account.schemas import AccountItem
from dutyline.platform.app_key import keys
from dutyline.platform.member import service as members

# Read once: checking a zone name must not touch the file system inside a request.
TIME_ZONES = frozenset(zoneinfo.available_timezones())


@dataclass(frozen=True)
class NewAccount:
    account_id: int
    person_id: int
    app_key: str


async def create_account(
    conn: AsyncConnection,
    *,
    account_name: str,
    owner_name: str,
    owner_email: str = "",
    now_s: int,
) -> NewAccount:
    """A new account with its built-in roles, its Owner and the Owner's first key (no actor:
    nobody acts inside an account that does not exist yet; the CLI passes its clock's time).
    Without `owner_email` the Owner sets theirs with their welcome link."""
    owner_email = owner_email.strip().lower()
    if owner_email and not members.is_email(owner_email):
        raise errors.invalid("owner_email", "is invalid")
    account_id = numeric_id()
    await repository.insert_account(conn, {
        "account_id": account_id, "account_name": account_name,
        "email": owner_email, "created_at": now_s, "updated_at": now_s,
    })
    role_ids: dict[str, int] = {}
    for builtin, name, description, permission_ids in permissions.BUILTIN_ROLES:
        role_id = numeric_id()
        role_ids[builtin] = role_id
        await repository.insert_builtin_role(conn, {
            "role_id": role_id, "account_id": account_id, "role_name": name,
            "description": description, "builtin": builtin,
            "created_at": now_s, "updated_at": now_s,
        }, sorted(permission_ids))
    person_id = numeric_id()
    await repository.insert_owner(conn, {
        "member_id": person_id, "account_id": account_id, "member_name": owner_name,
        "email": owner_email, "status": "enabled",
        "created_at": now_s, "updated_at": now_s,
    }, role_ids["owner"])
    issued = await keys.issue(
        conn, account_id=account_id, person_id=person_id, key_name="default", now_s=now_s
    )
    return NewAccount(account_id, person_id, issued.app_key)


async def has_any_account(conn: AsyncConnection) -> bool:
    return await repository.any_account(conn)


def account_info_sync(conn: Connection, actor: Actor) -> AccountItem:
    """The caller's own account: any member may read it (their records carry its name,
    locale and time zone already)."""
    row = repository.get_account_sync(conn, actor.account_id)
    if row is None:  # an account deleted under a live key: as for any unknown id
        raise errors.not_found("account", actor.account_id)
    return AccountItem(account_id=row.account_id, account_name=row.account_name,
                       domain=row.domain, email=row.email, locale=row.locale,
                       time_zone=row.time_zone, created_at=row.created_at,
                       updated_at=row.updated_at)


async def account_time_zone(conn: AsyncConnection, actor: Actor) -> str:
    """The actor's account's IANA time zone, "UTC" when none is set (for other domains'
    defaults: schedules, monitor rules' enabled times, insight day buckets)."""
    return await repository.time_zone(conn, actor.account_id) or "UTC"


def account_time_zone_sync(conn: Connection, actor: Actor) -> str:
    """`account_time_zone` inside a sync unit of database work."""
    return repository.time_zone_sync(conn, actor.account_id) or "UTC"


@writes("/console/account/settings", ACCOUNT_MANAGE, inputs=AccountChanges)
async def update_account(conn: AsyncConnection, actor: Actor, *,
                         changes: AccountChanges) -> int:
    """The account's name, time zone and language, as its managers set them; returns the
    account's id (for the audit log). Its members' pages follow the new zone at once where
    they set none of their own."""
    name = changes.account_name.strip()
    if len(name) < 2:
        raise errors.invalid("account_name", "must be 2 to 255 characters")
    if changes.time_zone not in TIME_ZONES:
        raise errors.invalid("time_zone", "is not a known time zone")
    await repository.update_account(conn, actor.account_id, {
        "account_name": name, "time_zone": changes.time_zone, "locale": changes.locale,
        "updated_at": actor.now_s})
    return actor.account_id
