"""Runner keys: random, prefixed, stored as SHA-256 hashes, compared in constant time, shown
once. The prefix is the runner's own (`wnt_`, "worknode token": cmd/main.go of
flashduty-runner shows `--token wnt_xxx`), so secret scanners and people recognise one.

Wrong keys are remembered briefly (`MISSED`, the negative cache app keys use too:
kit/misses.py): a flood of connections with a wrong key is refused from memory, without a
database transaction each. A key created in this process erases its hash there at once
(service.create_key); one created by another process works here at the latest after
`NEGATIVE_TTL_S`, and no runner can hold a new key's 256 random bits before it exists."""

from __future__ import annotations

import hashlib
import secrets

from dutyline.kit.misses import MissedKeys

PREFIX = "wnt_"
MAX_LENGTH = 256
NEGATIVE_TTL_S = 10.0
MAX_MISSES = 50_000

# One per process: every runner socket of the process reads it, create_key erases from it.
MISSED = MissedKeys(NEGATIVE_TTL_S, MAX_MISSES)


def new_key() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def suffix(key: str) -> str:
    return key[-4:]


def well_formed(key: str) -> bool:
    """Could be a runner key at all (checked before any lookup)."""
    return key.startswith(PREFIX) and len(key) <= MAX_LENGTH
