"""Who is calling: the Caller an app_key resolves to, and the interface that resolves it.

The api layer knows nothing of tables: the platform domain implements `Authenticator`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Caller:
    account_id: int
    person_id: int
    person_name: str
    key_id: int
    key_suffix: str
    # Permission names, already expanded so that "x_manage" implies "x_view".
    permissions: frozenset[str]
    # "owner", "admin" or "" — owners and admins see and manage everything in the account.
    builtin_role: str = ""
    team_ids: frozenset[int] = field(default_factory=frozenset)

    @property
    def is_admin(self) -> bool:
        return self.builtin_role in ("owner", "admin")

    def has(self, permission: str) -> bool:
        return permission in self.permissions

    def has_any(self, permissions: tuple[str, ...]) -> bool:
        return any(p in self.permissions for p in permissions)


class Authenticator(Protocol):
    async def authenticate(self, app_key: str) -> Caller | None: ...


def hash_app_key(app_key: str) -> str:
    return hashlib.sha256(app_key.encode("utf-8", "surrogatepass")).hexdigest()
