"""The `search_after_ctx` of /enrichment/mapping/data/list: the last row of a page as
(sort value, row key), with the schema and order it belongs to, so the next page is one
keyset range read (no OFFSET: page 500 costs what page 1 costs) and a cursor replayed against
another schema or order is refused rather than silently paging something else. No MAC: the
schema is resolved in the caller's account before the cursor is used, so an edited cursor can
only page rows the caller may read anyway."""

from __future__ import annotations

import base64
import binascii

import msgspec

from dutyline.api import errors

FIELD = "search_after_ctx"


class _Cursor(msgspec.Struct, array_like=True):
    schema_id: str
    orderby: str
    asc: bool
    value: int
    key: str


def write(schema_id: str, orderby: str, asc: bool, value: int, key: str) -> str:
    raw = msgspec.json.encode(_Cursor(schema_id, orderby, asc, value, key))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def read(text: str, *, schema_id: str, orderby: str, asc: bool) -> tuple[int, str]:
    """(sort value, row key) after which the page starts; 400 naming the field for a cursor
    that is not one of this list (edited, truncated, or of another schema or order)."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        cursor = msgspec.json.decode(raw, type=_Cursor)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise errors.invalid(FIELD, "is not a cursor of this list") from None
    if (cursor.schema_id, cursor.orderby, cursor.asc) != (schema_id, orderby, asc):
        raise errors.invalid(FIELD, "was issued for another schema or order; start again "
                                    "without it")
    return cursor.value, cursor.key
