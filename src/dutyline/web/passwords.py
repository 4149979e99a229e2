"""Passwords: Argon2id hashes (argon2-cffi's defaults, which follow RFC 9106's second
recommended option), computed off the event loop since one costs tens of milliseconds of CPU
and 64 MiB of memory by design."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from dutyline.api import errors

MIN_LENGTH = 10
# Argon2 takes any length, but a megabyte "password" is a cheap way to burn our CPU.
MAX_LENGTH = 1024

_HASHER = PasswordHasher()
# Verified against when no account matches, so an unknown e-mail costs the same time as a
# wrong password and the answer's timing does not say which addresses exist.
_DUMMY_HASH = _HASHER.hash("dutyline: no such account")


def check_policy(password: str, *, field: str = "password") -> None:
    """Length is what matters (no composition rules, which only make passwords predictable)."""
    if len(password) < MIN_LENGTH:
        raise errors.invalid(field, f"must be at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise errors.invalid(field, f"must be at most {MAX_LENGTH} characters")


@dataclass(frozen=True, slots=True)
class NewPassword:
    """A password that passed the policy, hashed before any write transaction begins (a
    hash takes long enough that it must not hold the database's writer)."""

    hash: str


async def new_password(password: str, *, field: str = "password") -> NewPassword:
    check_policy(password, field=field)
    return NewPassword(await asyncio.to_thread(_HASHER.hash, password))


def _verify(stored: str, password: str) -> bool:
    try:
        return _HASHER.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


async def verify(stored: str, password: str) -> bool:
    if len(password) > MAX_LENGTH:
        return False
    return await asyncio.to_thread(_verify, stored, password)


async def verify_nothing(password: str) -> None:
    """Spend a verification's time on no account (see _DUMMY_HASH)."""
    await asyncio.to_thread(_verify, _DUMMY_HASH, password[:MAX_LENGTH])
