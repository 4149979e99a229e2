"""HTTP POST trigger tokens: random, prefixed (so a leaked one is recognisable in logs and by
secret scanners), stored as SHA-256 hashes, compared in constant time, shown once."""

from __future__ import annotations

import hashlib
import hmac
import secrets

PREFIX = "dlat_"  # dutyline automation trigger


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def matches(token: str, stored_hash: str) -> bool:
    """Constant time in the token's content; an empty stored hash never matches."""
    return bool(stored_hash) and hmac.compare_digest(token_hash(token), stored_hash)


def fire_path(trigger_id: str) -> str:
    return f"/safari/automation/triggers/{trigger_id}/fire"
