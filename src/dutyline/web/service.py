"""People's sign-in: passwords, sessions and one-time links.

A session is a random 256-bit token in a cookie; the server keeps only its SHA-256 and, per
row, who it is for, when it began, was last seen and ends, and the browser and address it
began from. Every sign-in makes a new token (a token planted in a browser beforehand never
becomes a session). A one-time link (welcome, password reset) is a token of the same kind,
stored hashed, that expires and works once.

Who a session's person is, their roles and permissions, is read from the platform, exactly as
for an app key, and kept per process under the change signals (web/session_cache.py): a removed
member or role, or an ended session, takes effect in every process within a second."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.auth import Caller
from dutyline.api.unit import caller_actor, system_actor
from dutyline.kit.clock import Clock
from dutyline.platform.member import service as members
from dutyline.web import passwords
from dutyline.web import repository as repo
from dutyline.web.passwords import NewPassword

# A session ends after a week without use, and after thirty days whatever happens.
SESSION_IDLE_S = 7 * 86_400
SESSION_MAX_S = 30 * 86_400
# Seeing a session refreshes its end at most this often: not a write per page.
SESSION_TOUCH_S = 60
WELCOME_TTL_S = 7 * 86_400
RESET_TTL_S = 3600

LinkPurpose = Literal["welcome", "reset"]
LINK_PATHS: dict[str, str] = {"welcome": "/console/welcome/", "reset": "/console/reset/"}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _nothing(_: Any) -> list[Any]:
    return []  # a session's token or a link is never an audit target


@dataclass(frozen=True, slots=True)
class Session:
    """A live session, as a page sees it (never the token's hash outside this module's
    callers that end or list sessions)."""

    session_hash: str
    account_id: int
    person_id: int
    created_at: int
    last_seen_at: int
    expires_at: int
    user_agent: str
    ip: str
    second_factor_pending: bool


def _session(row: Any) -> Session:
    return Session(row.session_hash, int(row.account_id), int(row.member_id),
                   int(row.created_at), int(row.last_seen_at), int(row.expires_at),
                   row.user_agent, row.ip, bool(row.second_factor_pending))


def person_actor(caller: Caller, clock: Clock, *, credential: Any = "session") -> Actor:
    return caller_actor(caller, clock, credential)


# --- sign-in ----------------------------------------------------------------------------------


async def check_password(conn: AsyncConnection, *, email: str,
                         password: str) -> tuple[int, int] | None:
    """(account_id, person_id) of the member this e-mail and password sign in, or None. An
    address in several accounts signs in to the first whose password matches. Always one
    Argon2 verification at least, so an unknown address answers in a wrong password's time."""
    email = email.strip().lower()
    found = await members.operator_find_by_email(conn, email=email) if email else []
    stored = await repo.credentials(conn, [person_id for _, person_id in found])
    tried = False
    for account_id, person_id in found:
        row = stored.get(person_id)
        if row is None:
            continue
        tried = True
        if await passwords.verify(row.password_hash, password):
            return account_id, person_id
    if not tried:
        await passwords.verify_nothing(password)
    return None


async def have_passwords(conn: AsyncConnection, person_ids: list[int]) -> set[int]:
    return await conn.run_sync(have_passwords_sync, person_ids)


def have_passwords_sync(conn: Connection, person_ids: list[int]) -> set[int]:
    """Which of these persons have a console password (have signed up)."""
    return set(repo.credentials_sync(conn, person_ids))


def password_hash_sync(conn: Connection, *, person_id: int) -> str | None:
    """The person's stored password hash (None: they have no console credential), read in
    a unit of database work; `password_matches` checks a password against it."""
    row = repo.credential_sync(conn, person_id)
    return None if row is None else str(row.password_hash)


async def password_matches(hashed: str | None, password: str) -> bool:
    """The person's own password (its hash: `password_hash_sync`), asked again before a
    change that needs it; the hash is checked off the event loop."""
    return hashed is not None and await passwords.verify(hashed, password)


async def caller_of(conn: AsyncConnection, *, account_id: int, person_id: int) -> Caller | None:
    return await members.signed_in_caller(conn, account_id=account_id, person_id=person_id)


async def time_zones_of(conn: AsyncConnection, *, account_id: int,
                        person_id: int) -> tuple[str, str]:
    """(the person's own time zone, their account's): the zones their pages show times in."""
    return await members.reader_time_zones(conn, account_id=account_id, person_id=person_id)


async def email_of(conn: AsyncConnection, actor: Actor) -> str:
    """The e-mail address the actor's person signs in with ("" when none)."""
    found = await members.contacts(conn, system_actor(actor.account_id, actor.clock),
                                   [actor.person_id])
    person = found.get(actor.person_id)
    return person.email if person is not None else ""


@writes("/console/sign-in", targets=_nothing)
async def start_session(conn: AsyncConnection, actor: Actor, *, user_agent: str, ip: str,
                        second_factor_pending: bool = False) -> str:
    """A new session for the actor's person; returns its token (for the cookie only)."""
    token = new_token()
    now = actor.now_s
    await repo.delete_sessions_of(conn, actor.person_id, expired_before=now)
    await repo.insert_session(conn, {
        "session_hash": token_hash(token), "account_id": actor.account_id,
        "member_id": actor.person_id, "created_at": now, "last_seen_at": now,
        "expires_at": now + SESSION_IDLE_S, "user_agent": user_agent[:255], "ip": ip[:64],
        "second_factor_pending": second_factor_pending,
    })
    return token


async def live_session(conn: AsyncConnection, token: str, now_s: int) -> Session | None:
    if not token or len(token) > 128:
        return None
    row = await repo.live_session(conn, token_hash(token), now_s)
    return None if row is None else _session(row)


def needs_touch(session: Session, now_s: int) -> bool:
    return now_s - session.last_seen_at >= SESSION_TOUCH_S


async def touch_session(conn: AsyncConnection, session: Session, now_s: int) -> Session:
    """Mark the session seen now: its idle end moves on (never past its 30 days)."""
    expires = min(now_s + SESSION_IDLE_S, session.created_at + SESSION_MAX_S)
    await repo.touch_session(conn, session.session_hash, now_s=now_s, expires_at=expires)
    return dataclasses.replace(session, last_seen_at=now_s, expires_at=expires)


async def drop_session(conn: AsyncConnection, session: Session) -> None:
    """End a session that no longer stands for anyone (its member was removed)."""
    await repo.delete_session(conn, session.session_hash)


@writes("/console/sign-out", targets=_nothing)
async def end_session(conn: AsyncConnection, actor: Actor, *, session: Session) -> None:
    if session.person_id == actor.person_id:
        await repo.delete_session(conn, session.session_hash)


# --- passwords and one-time links -----------------------------------------------------------


@writes("/console/link/issue", targets=_nothing)
async def issue_link(conn: AsyncConnection, actor: Actor, *, purpose: LinkPurpose,
                     person_id: int) -> str:
    """A one-time link's token for a member of the actor's account (the earlier links of
    this purpose stop working), audited with the member as its target (never the token).
    The server's shell and the invitation mail call this; nobody else sees it."""
    token = new_token()
    account_id, now_s = actor.account_id, actor.now_s
    actor.note_audit_targets(person_id)
    await repo.retire_links(conn, person_id, purpose, now_s)
    await repo.insert_link(conn, {
        "token_hash": token_hash(token), "purpose": purpose, "account_id": account_id,
        "member_id": person_id, "created_at": now_s,
        "expires_at": now_s + (WELCOME_TTL_S if purpose == "welcome" else RESET_TTL_S),
    })
    return token


def link_url(base_url: str, purpose: LinkPurpose, token: str) -> str:
    return base_url.rstrip("/") + LINK_PATHS[purpose] + token


@dataclass(frozen=True, slots=True)
class LinkHolder:
    account_id: int
    person_id: int
    person_name: str
    email: str


async def link_holder(conn: AsyncConnection, clock: Clock, *, token: str,
                      purpose: LinkPurpose) -> LinkHolder | None:
    """Whom a usable link is for; None when it is unknown, used, expired, or its member is
    gone."""
    if not token or len(token) > 128:
        return None
    row = await repo.usable_link(conn, token_hash(token), purpose, int(clock.now()))
    if row is None:
        return None
    account_id, person_id = int(row.account_id), int(row.member_id)
    found = await members.contacts(conn, system_actor(account_id, clock), [person_id])
    person = found.get(person_id)
    if person is None:
        return None
    return LinkHolder(account_id, person_id, person.person_name, person.email)


@writes("/console/password/set", targets=_nothing)
async def set_password_by_link(conn: AsyncConnection, actor: Actor, *, token: str,
                               purpose: LinkPurpose, password: NewPassword,
                               email: str | None = None) -> None:
    """Use the link once: set the person's password (and their e-mail, for an Owner created
    without one), and end every session they had."""
    if email is not None:
        await members.reset_info(conn, actor, member_id=actor.person_id,
                                 changes=members.ProfileChanges(email=email))
    if not await repo.use_link(conn, token_hash(token), purpose, actor.now_s):
        raise errors.not_found("link", "")
    await repo.retire_links(conn, actor.person_id, purpose, actor.now_s)
    await _store_password(conn, actor, password)
    await repo.delete_sessions_of(conn, actor.person_id)


async def _store_password(conn: AsyncConnection, actor: Actor, password: NewPassword) -> None:
    await repo.set_password(conn, account_id=actor.account_id, member_id=actor.person_id,
                            password_hash=password.hash, now_s=actor.now_s)


@writes("/console/password/change", targets=_nothing)
async def change_password(conn: AsyncConnection, actor: Actor, *, password: NewPassword,
                          keep: Session) -> int:
    """Set the person's new password (the page checked the current one) and end every other
    session of theirs; returns how many ended."""
    await _store_password(conn, actor, password)
    await repo.retire_links(conn, actor.person_id, "reset", actor.now_s)
    return await repo.delete_sessions_of(conn, actor.person_id, keep=keep.session_hash)


# --- the person's sessions --------------------------------------------------------------------


def public_id(session: Session) -> str:
    """A name for a session in a page: not the key it is looked up by."""
    return hashlib.sha256(b"public:" + session.session_hash.encode()).hexdigest()[:20]


def sessions_of_sync(conn: Connection, actor: Actor) -> list[Session]:
    """The actor's live sessions, the last seen first."""
    return [_session(r) for r in repo.sessions_of_sync(conn, actor.person_id, actor.now_s)]


async def sessions_of(conn: AsyncConnection, actor: Actor) -> list[Session]:
    return await conn.run_sync(sessions_of_sync, actor)


@writes("/console/session/revoke", targets=_nothing)
async def revoke_session(conn: AsyncConnection, actor: Actor, *, session_id: str) -> None:
    """End one of the actor's own sessions, named by its public id."""
    for session in await sessions_of(conn, actor):
        if hmac.compare_digest(public_id(session), session_id):
            await repo.delete_session(conn, session.session_hash)
            return
    raise errors.not_found("session", session_id)
