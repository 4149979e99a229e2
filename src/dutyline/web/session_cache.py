"""Console sessions resolved from this process's memory: the session a cookie names and the
person it stands for, without a query per page.

Each entry is kept under two change signals (db/signals.py) read before its queries:
"session" (any session row ended: signed out, revoked, passwords changed, sign-in over it)
and "auth" (what its member resolves to: disabled, removed, renamed, roles changed). When
either moves, in this process or any other, the entry is read again; while the process cannot
vouch for them, every page reads the database, as with no cache.

An entry is trusted only before the session's end as it read it, and before the session is
due to be seen again (SESSION_TOUCH_S): then the row is read afresh and, if no process saw it
lately, its end is moved as without a cache: at most one write a minute per session."""

from __future__ import annotations

from dataclasses import dataclass

from dutyline.api.auth import Caller
from dutyline.db.engine import Database
from dutyline.db.signals import AUTH, SESSION, ChangeSignals, Version
from dutyline.web import service as signin
from dutyline.web.service import Session

# Sessions kept per process; the one read longest ago is dropped past this many.
MAX_KNOWN_SESSIONS = 10_000


@dataclass(frozen=True, slots=True)
class SignedIn:
    session: Session
    caller: Caller
    # The zones the person's pages show times in: their own, their account's ("" unset);
    # a change to either row moves the "auth" signal, which reads the entry again.
    time_zones: tuple[str, str] = ("", "")


class SessionCache:
    def __init__(self, signals: ChangeSignals, *, size: int = MAX_KNOWN_SESSIONS) -> None:
        self.signals = signals
        self.size = size
        # session hash -> (the "auth" and "session" versions read before its queries, entry)
        self._known: dict[str, tuple[tuple[Version, Version], SignedIn]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._known)

    def _versions(self) -> tuple[Version, Version] | None:
        auth, session = self.signals.version(AUTH), self.signals.version(SESSION)
        return None if auth is None or session is None else (auth, session)

    async def resolve(self, db: Database, token: str, now_s: int, *,
                      touch: bool = True) -> SignedIn | None:
        """The live session `token` names and its enabled member, or None. A session whose
        member is gone ends here. With `touch`, a session not seen for a while is marked
        seen (its idle end moves on)."""
        if not token or len(token) > 128:
            return None
        key = signin.token_hash(token)
        versions = self._versions()
        known = self._known.get(key)
        if versions is not None and known is not None and known[0] == versions:
            entry = known[1]
            if entry.session.expires_at > now_s and not (
                    touch and signin.needs_touch(entry.session, now_s)):
                self.hits += 1
                return entry
        self.misses += 1
        async with db.transaction(write=False) as conn:
            session = await signin.live_session(conn, token, now_s)
            caller = None if session is None else await signin.caller_of(
                conn, account_id=session.account_id, person_id=session.person_id)
            zones = ("", "") if caller is None or session is None else (
                await signin.time_zones_of(conn, account_id=session.account_id,
                                           person_id=session.person_id))
        if session is None or caller is None:
            self._known.pop(key, None)
            if session is not None:
                async with db.transaction(write=True) as conn:
                    await signin.drop_session(conn, session)
            return None
        if touch and signin.needs_touch(session, now_s):
            async with db.transaction(write=True) as conn:
                session = await signin.touch_session(conn, session, now_s)
        entry = SignedIn(session, caller, zones)
        self._known.pop(key, None)  # re-inserted last: the oldest go first
        if versions is not None:
            self._known[key] = (versions, entry)
            if len(self._known) > self.size:
                del self._known[next(iter(self._known))]
        return entry
