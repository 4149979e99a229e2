"""Resolve an app_key to a Caller: the key's member, their enabled roles and teams."""

from __future__ import annotations

from sqlalchemy import select

from dutyline.api.auth import Caller, hash_app_key
from dutyline.db.engine import Database
from dutyline.db.tables.platform import app_key, member, member_role, role, role_permission, team_member
from dutyline.platform import permissions

_BUILTIN_RANK = {"owner": 2, "admin": 1}

class DatabaseAuthenticator:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def authenticate(self, key: str) -> Caller | None:
        key_hash = hash_app_key(key)
        async with self.db.connect() as conn:
            row = (
                await conn.execute(
                    select(
                        app_key.c.key_id,
                        app_key.c.suffix,
                        member.c.member_id,
                        member.c.member_name,
                        member.c.account_id,
                    )
                    .join(member, member.c.member_id == app_key.c.person_id)
                    .where(app_key.c.key_hash == key_hash, member.c.status == "enabled")
                )
            ).first()
            if row is None:
                return None
            grants = (
                await conn.execute(
                    select(role.c.builtin, role_permission.c.permission_id)
                    .select_from(member_role)
                    .join(role, role.c.role_id == member_role.c.role_id)
                    .outerjoin(role_permission, role_permission.c.role_id == role.c.role_id)
                    .where(member_role.c.member_id == row.member_id, role.c.status == "enabled")
                )
            ).all()
            team_ids = (
                await conn.execute(
                    select(team_member.c.team_id).where(team_member.c.person_id == row.member_id)
                )
            ).scalars().all()
        builtin = ""
        permission_ids: set[int] = set()
        for kind, permission_id in grants:
            if _BUILTIN_RANK.get(kind, 0) > _BUILTIN_RANK.get(builtin, 0):
                builtin = kind
            if permission_id is not None:
                permission_ids.add(permission_id)
        if builtin:
            # Owners and admins hold every permission, including ones added after their
            # role rows were written.
            permission_ids |= permissions.ALL_IDS
        return Caller(
            account_id=row.account_id,
            person_id=row.member_id,
            person_name=row.member_name,
            key_id=row.key_id,
            key_suffix=row.suffix,
            permissions=permissions.expand(permission_ids),
            builtin_role=builtin,
            team_ids=frozenset(team_ids),
        )
