"""Who is calling: the Caller an app_key resolves to, and the interface that resolves it.

The api layer knows nothing of tables: the platform domain implements `Authenticator`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.ext.asyncio import AsyncConnection


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

    @property
    def is_admin(self) -> bool:
        return self.builtin_role in ("owner", "admin")

    def has(self, permission: str) -> bool:
        return permission in self.permissions

    def has_any(self, permissions: tuple[str, ...]) -> bool:
        return any(p in self.permissions for p in permissions)


class PendingKey(Protocol):
    """A key this process does not know yet, to resolve inside a sync unit of database work
    (a sync read operation: api/operation.py) and then settle on the event loop."""

    def resolve(self, conn: Connection) -> Caller | None:
        """The key's Caller, or None; one query, touching nothing but `conn` (it runs on a
        database thread)."""
        ...

    def settle(self, caller: Caller | None) -> None:
        """Keep what `resolve` found (a resolution, or a failure), as `authenticate` does."""
        ...


class Authenticator(Protocol):
    def recently_failed(self, app_key: str) -> bool:
        """True when this key failed moments ago: answer 401 without opening a transaction.
        Never True for a key that may be valid (only remembered failures count)."""
        ...

    async def authenticate(self, conn: AsyncConnection, app_key: str) -> Caller | None:
        """Runs on the request's own connection, inside its transaction."""
        ...

    def known(self, app_key: str) -> Caller | None:
        """The key's Caller from this process's memory while its resolution holds, without
        any query; None when it must be looked up (`pending`)."""
        ...

    def pending(self, app_key: str) -> PendingKey:
        """A lookup of the key, to run inside a sync unit of database work."""
        ...

    async def team_ids(self, conn: AsyncConnection, caller: Caller) -> frozenset[int]:
        """The teams the caller belongs to (loaded only by operations that need them)."""
        ...

    def team_ids_sync(self, conn: Connection, caller: Caller) -> frozenset[int]:
        """`team_ids` inside a sync unit of database work."""
        ...


def hash_app_key(app_key: str) -> str:
    return hashlib.sha256(app_key.encode("utf-8", "surrogatepass")).hexdigest()
