"""Runner keys: random, prefixed, stored as SHA-256 hashes, compared in constant time, shown
once. The prefix is the runner's own (`wnt_`, "worknode token": cmd/main.go of
flashduty-runner shows `--token wnt_xxx`), so secret scanners and people recognise one."""

from __future__ import annotations

import hashlib
import secrets

PREFIX = "wnt_"


def new_key() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def suffix(key: str) -> str:
    return key[-4:]
