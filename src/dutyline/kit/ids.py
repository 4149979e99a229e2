"""Identifier generation. Every id is unguessable: ids leak into URLs and logs, and a
guessable id turns every missing permission check into a data leak."""

from __future__ import annotations

import itertools
import secrets

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


# Request ids need to be unique, not secret: a random per-process prefix and a counter cost a
# fraction of uuid4's urandom call, which was 8 % of a request's CPU (bench/README.md).
_REQUEST_PREFIX = secrets.token_hex(8)
_request_counter = itertools.count(1)


def request_id() -> str:
    return f"{_REQUEST_PREFIX}{next(_request_counter):016x}"


# The alphabet of "short UUIDs" (no 0, 1, I, O, l): the shape of the reference's calendar
# ids (`cal.QiNvtdKs4Wj52kZhT3LafM`), 22 characters, about 128 random bits.
_SHORT_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def short_uuid_id(prefix: str) -> str:
    """`cal.…`, `cale.…`: a prefix, a dot, then 22 random characters of `_SHORT_ALPHABET`."""
    return prefix + "." + "".join(secrets.choice(_SHORT_ALPHABET) for _ in range(22))
