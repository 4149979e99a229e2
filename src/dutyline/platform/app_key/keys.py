"""Issuing app keys: 256 random bits, shown once, stored only as a SHA-256 hash."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.auth import hash_app_key
from dutyline.kit.ids import numeric_id
from dutyline.platform.app_key import repository as repo
from dutyline.platform.app_key.misses import MISSED

KEY_PREFIX = "dk_"


@dataclass(frozen=True)
class IssuedKey:
    key_id: int
    key_name: str
    person_id: int
    app_key: str  # the plaintext: returned in this response only


def generate() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


async def issue(
    conn: AsyncConnection, *, account_id: int, person_id: int, key_name: str, now_s: int
) -> IssuedKey:
    plaintext = generate()
    key_id = numeric_id()
    # A miss remembered for this value must not outlive the key's creation (misses.py).
    MISSED.forget(hash_app_key(plaintext))
    await repo.insert_key(conn, {
        "key_id": key_id, "account_id": account_id, "person_id": person_id,
        "key_name": key_name, "key_hash": hash_app_key(plaintext), "suffix": plaintext[-4:],
        "created_at": now_s, "last_used_at": 0,
    })
    return IssuedKey(key_id, key_name, person_id, plaintext)
