"""The optional second factor: TOTP codes (RFC 6238, 30-second steps, 6 digits), as
authenticator apps make them. The secret is sealed with the server key at rest; a code is
accepted once (the step it matched is remembered), one step early or late for clock drift.

Enrolment shows a new secret once and stores it only when a code made from it comes back.
Until then nothing is stored and no secret travels in the form: the secret is derived, under a
key of the server's, from the session and a random nonce the form carries
(`enrolment_secret`), so an abandoned enrolment leaves nothing behind, a form can only ever
lead to its own session's secret, and no value a client posts is ever opened and shown. The
enrolled secret is sealed for this purpose only (kit/secretbox.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

import pyotp
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.kit.secretbox import SecretBox, SecretBoxError
from dutyline.web import repository as repo

STEP_S = 30
ISSUER = "dutyline"
SEALED_FOR = "console-totp"


def provisioning_uri(secret: str, *, name: str) -> str:
    return pyotp.TOTP(secret).provisioning_uri(name=name, issuer_name=ISSUER)


def matched_step(secret: str, code: str, now: float) -> int | None:
    """The time step `code` is right for (now, or one step either side), or None."""
    code = "".join(code.split())
    if not (code.isdigit() and len(code) == 6):
        return None
    totp = pyotp.TOTP(secret)
    step = int(now // STEP_S)
    for candidate in (step, step - 1, step + 1):
        if hmac.compare_digest(totp.at(candidate * STEP_S), code):
            return candidate
    return None


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def enrolment_secret(key: bytes, *, session_hash: str, nonce: str) -> str | None:
    """The secret an enrolment page of this session shows for this nonce (None: no nonce).
    HMAC-SHA256 under the server's enrolment key: 160 bits, as authenticator apps expect."""
    if not nonce or len(nonce) > 64:
        return None
    mac = hmac.new(key, f"{session_hash}:{nonce}".encode("utf-8", "surrogatepass"),
                   hashlib.sha256).digest()
    return base64.b32encode(mac[:20]).decode("ascii")


def _open(box: SecretBox, sealed: str) -> str | None:
    """The enrolled secret: sealed for its purpose, or (enrolled before secrets were sealed
    per purpose) with the server's plain key. It is only ever checked, never shown."""
    if not sealed:
        return None
    for purpose in (SEALED_FOR, ""):
        try:
            return box.open(sealed, purpose=purpose)
        except SecretBoxError:
            continue
    return None


def enrolled_sync(conn: Connection, person_id: int) -> bool:
    row = repo.credential_sync(conn, person_id)
    return row is not None and bool(row.totp_secret)


async def enrolled(conn: AsyncConnection, person_id: int) -> bool:
    return await conn.run_sync(enrolled_sync, person_id)


async def check_code(conn: AsyncConnection, box: SecretBox, *, person_id: int, code: str,
                     now: float) -> bool:
    """True once for a right code of the person's enrolled secret."""
    row = await repo.credential(conn, person_id)
    secret = None if row is None else _open(box, row.totp_secret)
    if secret is None:
        return False
    step = matched_step(secret, code, now)
    return step is not None and await repo.claim_totp_step(conn, person_id, step)


@writes("/console/second-factor/enable")
async def enable(conn: AsyncConnection, actor: Actor, *, deps: Deps, secret: str | None,
                 code: str) -> None:
    """Enrol the secret shown (`enrolment_secret`) once a code made from it is given."""
    box = deps.box
    if secret is None:
        raise errors.invalid("code", "is not right: start again")
    step = matched_step(secret, code, actor.now)
    if step is None:
        raise errors.invalid("code", "is not right")
    if await repo.credential(conn, actor.person_id) is None:
        raise errors.invalid("code", "needs a password first")
    await repo.set_totp(conn, actor.person_id,
                        sealed_secret=box.seal(secret, purpose=SEALED_FOR), last_step=step,
                        now_s=actor.now_s)


@writes("/console/second-factor/disable")
async def disable(conn: AsyncConnection, actor: Actor) -> None:
    await repo.set_totp(conn, actor.person_id, sealed_secret="", last_step=0,
                        now_s=actor.now_s)
