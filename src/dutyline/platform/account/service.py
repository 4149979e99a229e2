"""Creating an account: the account row, its built-in roles, its Owner and a first key."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.platform import account, member, member_role, role, role_permission
from dutyline.kit.ids import numeric_id
from dutyline.platform import permissions
from dutyline.platform.app_key import keys


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
    account_id = numeric_id()
    await conn.execute(
        insert(account).values(
            account_id=account_id,
            account_name=account_name,
            email=owner_email.lower(),
            created_at=now_s,
            updated_at=now_s,
        )
    )
    role_ids: dict[str, int] = {}
    for builtin, name, description, permission_ids in permissions.BUILTIN_ROLES:
        role_id = numeric_id()
        role_ids[builtin] = role_id
        await conn.execute(
            insert(role).values(
                role_id=role_id,
                account_id=account_id,
                role_name=name,
                description=description,
                builtin=builtin,
                created_at=now_s,
                updated_at=now_s,
            )
        )
        await conn.execute(
            insert(role_permission),
            [{"role_id": role_id, "permission_id": pid} for pid in sorted(permission_ids)],
        )
    person_id = numeric_id()
    await conn.execute(
        insert(member).values(
            member_id=person_id,
            account_id=account_id,
            member_name=owner_name,
            email=owner_email.lower(),
            status="enabled",
            created_at=now_s,
            updated_at=now_s,
        )
    )
    await conn.execute(
        insert(member_role).values(
            member_id=person_id, role_id=role_ids["owner"], account_id=account_id
        )
    )
    issued = await keys.issue(
        conn, account_id=account_id, person_id=person_id, key_name="default", now_s=now_s
    )
    return NewAccount(account_id, person_id, issued.app_key)


async def has_any_account(conn: AsyncConnection) -> bool:
    return bool((await conn.execute(select(func.count()).select_from(account))).scalar_one())
