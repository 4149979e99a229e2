"""Constrained field types shared by request schemas."""

from __future__ import annotations

from typing import Annotated

import msgspec

MAX_INT64 = 2**63 - 1

MIN_INT64 = -(2**63)

# Every integer a request carries is bounded at decode, so a number no int64 column can hold
# is a 400 naming the field, never an overflow at the database (tests/security/
# test_integer_bounds.py walks every request schema for an unbounded one).
# Ids of accounts, persons, teams, ...: positive int64, in fields, list elements and the keys
# of id-keyed mappings alike. 0 is allowed where a field says "0 means none" and is typed
# NonNegInt64 there.
Id = Annotated[int, msgspec.Meta(ge=1, le=MAX_INT64)]
NonNegInt64 = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT64)]
# A signed number whose range the service checks itself, with its own message.
Int64 = Annotated[int, msgspec.Meta(ge=MIN_INT64, le=MAX_INT64)]
PageNumber = Annotated[int, msgspec.Meta(ge=1, le=10_000)]
PageSize = Annotated[int, msgspec.Meta(ge=1, le=100)]
MAX_PAGE_WINDOW = 10_000


class PageRequest(msgspec.Struct, kw_only=True):
    """`p` (from 1) and `limit` (1-100, default 20); `p × limit` beyond 10,000 is refused."""

    p: PageNumber = 1
    limit: PageSize = 20

    def __post_init__(self) -> None:
        if self.p * self.limit > MAX_PAGE_WINDOW:
            # msgspec turns this into a ValidationError; the handler names field `p`.
            raise ValueError(f"p × limit must not exceed {MAX_PAGE_WINDOW}")

    @property
    def offset(self) -> int:
        return (self.p - 1) * self.limit


class SaveWarning(msgspec.Struct, kw_only=True):
    """What a saved setting will not do with the server's current settings (a page that
    cannot be sent: e-mail without SMTP, a loopback webhook behind the guard). The write is
    kept; the answer says so, naming the field."""

    field: str
    message: str


class SaveWarnings(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The answer of a write that otherwise answers nothing: `{}`, or its warnings."""

    warnings: list[SaveWarning] = msgspec.field(default_factory=list)
