"""App-key requests and records. The reference defines no app-key operations: these follow
the conventions of the others (envelope, `p`/`limit` paging, field names)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.types import Id


class AppKeyCreateRequest(msgspec.Struct, kw_only=True):
    key_name: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    # Absent: a key for the caller.
    person_id: Id | None = None


class AppKeyCreateResponse(msgspec.Struct, kw_only=True):
    key_id: int
    key_name: str
    person_id: int
    app_key: str  # the plaintext, shown here and never again


class AppKeyListRequest(msgspec.Struct, kw_only=True):
    person_id: Id | None = None


class AppKeyItem(msgspec.Struct, kw_only=True):
    key_id: int
    key_name: str
    person_id: int
    suffix: str
    created_at: int
    last_used_at: int


class AppKeyListResponse(msgspec.Struct, kw_only=True):
    items: list[AppKeyItem]


class AppKeyDeleteRequest(msgspec.Struct, kw_only=True):
    key_id: Id
