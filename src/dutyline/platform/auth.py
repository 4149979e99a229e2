"""Resolve an app_key to a Caller: the key's member and the permissions of their enabled roles.

Authentication is on every request's path, so a key that resolved lately answers from this
process's memory: the Caller it resolved to, kept under the version of the "auth" change
signal read before the query (db/signals.py). Every write that changes what a key resolves
to (a key deleted, a member renamed, disabled or removed, a role granted or revoked, a role's
permissions or status changed) bumps that signal in its transaction, so a revoked key is
refused by every process within a second; while this process cannot vouch for the signal, it
queries every time, as it would with no cache. Failures are remembered separately and briefly
(platform/app_key/misses.py): a repeated wrong key answers 401 from memory instead of querying
again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import permissions
from dutyline.api.auth import Caller, hash_app_key
from dutyline.db.engine import Database
from dutyline.db.signals import AUTH, ChangeSignals, Version
from dutyline.kit.clock import Clock
from dutyline.platform.app_key import repository as key_repo
from dutyline.platform.app_key.misses import MISSED, MissedKeys
from dutyline.platform.team import repository as team_repo

_BUILTIN_RANK = {"owner": 2, "admin": 1}
# Resolved keys kept per process; the oldest is dropped past this many.
MAX_KNOWN_KEYS = 10_000


def caller_from_rows(rows: Sequence[Any], *, key_id: int = 0, key_suffix: str = "") -> Caller:
    """A member's rows (one per permission of their enabled roles; member_id, member_name,
    account_id, builtin, permission_id) as the Caller they resolve to: what an app key gets
    and what a person signed in to the console gets are the same roles and permissions."""
    first = rows[0]
    builtin = ""
    permission_ids: set[int] = set()
    for row in rows:
        kind = row.builtin or ""
        if _BUILTIN_RANK.get(kind, 0) > _BUILTIN_RANK.get(builtin, 0):
            builtin = kind
        if row.permission_id is not None:
            permission_ids.add(row.permission_id)
    if builtin:
        # Owners and admins hold every permission, including ones added to the catalog
        # after their role rows were written.
        permission_ids |= permissions.ALL_IDS
    return Caller(
        account_id=first.account_id,
        person_id=first.member_id,
        person_name=first.member_name,
        key_id=key_id,
        key_suffix=key_suffix,
        permissions=permissions.expand(permission_ids),
        builtin_role=builtin,
    )


class DatabaseAuthenticator:
    def __init__(
        self, clock: Clock, misses: MissedKeys = MISSED, *, signals: ChangeSignals | None = None,
    ) -> None:
        self.clock = clock
        self.misses = misses
        # Without a watched signal (a bare authenticator) nothing is kept: version() is None.
        self.signals = signals or ChangeSignals()
        # key hash -> (the "auth" version read before its query, the Caller it resolved to)
        self._known: dict[str, tuple[Version, Caller]] = {}
        # key_id -> last use (Unix seconds), written out in batches by flush_last_used():
        # a write per request would turn every read into a write.
        self._last_used: dict[int, int] = {}

    def recently_failed(self, app_key: str) -> bool:
        return self.misses.recently_missed(hash_app_key(app_key), self.clock.now())

    async def authenticate(self, conn: AsyncConnection, key: str) -> Caller | None:
        key_hash = hash_app_key(key)
        if self.misses.recently_missed(key_hash, self.clock.now()):
            return None
        caller = self._known_hash(key_hash)
        if caller is None:
            version = self.signals.version(AUTH)  # read before the query it vouches for
            caller = _caller_of(await key_repo.caller_rows(conn, key_hash))
            self._settle(key_hash, version, caller)
        return caller

    def known(self, app_key: str) -> Caller | None:
        return self._known_hash(hash_app_key(app_key))

    def _known_hash(self, key_hash: str) -> Caller | None:
        """The key's Caller while its resolution holds (the "auth" version it was read under
        is still the current one), its use noted; else None."""
        version = self.signals.version(AUTH)
        if version is None:
            return None
        known = self._known.get(key_hash)
        if known is None or known[0] != version:
            return None
        self._last_used[known[1].key_id] = int(self.clock.now())
        return known[1]

    def pending(self, app_key: str) -> _PendingKey:
        # The signal's version is read before the query, as `authenticate` does.
        return _PendingKey(self, hash_app_key(app_key), self.signals.version(AUTH))

    def _settle(self, key_hash: str, version: Version | None, caller: Caller | None) -> None:
        """Remember a key's resolution (under the version read before its query) or its
        failure."""
        now = self.clock.now()
        if caller is None:
            self._known.pop(key_hash, None)
            self.misses.remember(key_hash, now)
            return
        self._last_used[caller.key_id] = int(now)
        if version is not None:
            self._known.pop(key_hash, None)  # re-inserted last: the oldest go first
            self._known[key_hash] = (version, caller)
            if len(self._known) > MAX_KNOWN_KEYS:
                del self._known[next(iter(self._known))]

    async def flush_last_used(self, db: Database) -> int:
        """Write the buffered last-use times; returns how many keys were updated."""
        if not self._last_used:
            return 0
        pending, self._last_used = self._last_used, {}
        async with db.transaction(write=True) as conn:
            await key_repo.set_last_used(conn, pending)
        return len(pending)

    async def team_ids(self, conn: AsyncConnection, caller: Caller) -> frozenset[int]:
        return await team_repo.team_ids_of(conn, caller.account_id, caller.person_id)

    def team_ids_sync(self, conn: Connection, caller: Caller) -> frozenset[int]:
        return team_repo.team_ids_of_sync(conn, caller.account_id, caller.person_id)


def _caller_of(rows: Sequence[Any]) -> Caller | None:
    if not rows:
        return None
    first = rows[0]
    return caller_from_rows(rows, key_id=first.key_id, key_suffix=first.suffix)


class _PendingKey:
    """One key's lookup inside a sync unit of database work (api/auth.py PendingKey): the
    query runs on the database thread; what it found is kept on the event loop."""

    __slots__ = ("_authenticator", "_key_hash", "_version")

    def __init__(self, authenticator: DatabaseAuthenticator, key_hash: str,
                 version: Version | None) -> None:
        self._authenticator = authenticator
        self._key_hash = key_hash
        self._version = version

    def resolve(self, conn: Connection) -> Caller | None:
        return _caller_of(key_repo.caller_rows_sync(conn, self._key_hash))

    def settle(self, caller: Caller | None) -> None:
        self._authenticator._settle(self._key_hash, self._version, caller)
