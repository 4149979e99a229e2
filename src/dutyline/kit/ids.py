"""Identifier generation. Every id is unguessable: ids leak into URLs and logs, and a
guessable id turns every missing permission check into a data leak."""

from __future__ import annotations

import secrets
import uuid

# Numeric ids stay below 2**53 so JavaScript clients read them exactly, and above 2**40 so
# they never collide with small hand-typed numbers in tests or tooling.
_NUMERIC_LOW = 2**40
_NUMERIC_SPAN = 2**53 - 2**40


def numeric_id() -> int:
    """A positive int64 id for accounts, persons, teams, channels, pages..."""
    return _NUMERIC_LOW + secrets.randbelow(_NUMERIC_SPAN)


def hex_id() -> str:
    """A 24-hex-character id, the shape of incident, rule and template ids."""
    return secrets.token_hex(12)


def prefixed_id(prefix: str) -> str:
    """`arule_…`, `mcp_…`: a prefix that says what the id names, then 24 hex characters."""
    return f"{prefix}_{secrets.token_hex(12)}"


def request_id() -> str:
    return uuid.uuid4().hex
