"""Reading the audit log: search with an opaque, signed cursor, and the audited operations."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.api.runtime import Runtime, ServedOperation
from dutyline.config import Settings
from dutyline.platform.audit import names
from dutyline.platform.audit import repository as repo
from dutyline.platform.audit.schemas import (
    DEFAULT_LIMIT,
    MAX_SPAN_SECONDS,
    AuditLog,
    AuditOperationTypeItem,
)

CURSOR_FIELD = "search_after_ctx"
_CURSOR = struct.Struct(">qqq")  # account_id, created_at ms, row id
_MAC_BYTES = 16
_CATALOG_LOCALE_CN = "zh_CN"


def _cursor_key(settings: Settings) -> bytes:
    """The MAC key: derived from the server's secret key, shared by every process.

    Without one (PostgreSQL and no DUTYLINE_SECRET_KEY) the database URL stands in: then the
    MAC still rejects edited or corrupt cursors but is forgeable by someone who knows the URL.
    That is acceptable because a cursor only ever pages through the caller's own account's
    rows: the query is scoped by account whatever the cursor says."""
    try:
        secret = settings.resolved_secret_key()
    except RuntimeError:
        secret = settings.database_url
    return hmac.new(secret.encode(), b"dutyline audit cursor v1", hashlib.sha256).digest()


def encode_cursor(settings: Settings, account_id: int, created_at: int, row_id: int) -> str:
    payload = _CURSOR.pack(account_id, created_at, row_id)
    mac = hmac.new(_cursor_key(settings), payload, hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.urlsafe_b64encode(payload + mac).rstrip(b"=").decode()


def decode_cursor(settings: Settings, account_id: int, cursor: str) -> tuple[int, int]:
    """(created_at, id) of the last row seen; 400 naming the field for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise errors.invalid(CURSOR_FIELD) from None
    if len(raw) != _CURSOR.size + _MAC_BYTES:
        raise errors.invalid(CURSOR_FIELD)
    payload, mac = raw[: _CURSOR.size], raw[_CURSOR.size:]
    expected = hmac.new(_cursor_key(settings), payload, hashlib.sha256).digest()[:_MAC_BYTES]
    if not hmac.compare_digest(mac, expected):
        raise errors.invalid(CURSOR_FIELD)
    owner, created_at, row_id = _CURSOR.unpack(payload)
    if owner != account_id:  # another account's cursor: as invalid as a forged one
        raise errors.invalid(CURSOR_FIELD)
    return created_at, row_id


@dataclass(frozen=True)
class AuditQuery:
    """Which entries: a window of whole seconds (end included) and optional filters."""

    start_time: int
    end_time: int
    request_id: str = ""
    operations: Sequence[str] | None = None
    person_id: int | None = None
    # True: only dangerous operations; False or None: all of them.
    is_dangerous: bool | None = None
    # True: only writes; False: only reads; None: both.
    is_write: bool | None = None


def _validate(q: AuditQuery) -> None:
    if q.end_time <= q.start_time:
        raise errors.invalid("end_time", "must be after start_time")
    if q.end_time - q.start_time > MAX_SPAN_SECONDS:
        raise errors.invalid("end_time", "must be at most 90 days after start_time")


@reads_sync(ACCOUNT_MANAGE)
def search_sync(
    conn: Connection, actor: Actor, *, query: AuditQuery, after: str = "", limit: int = 0,
    deps: Deps, labels: Mapping[str, str],
) -> tuple[int, list[AuditLog], str]:
    """(total, one page of the account's entries newest first, the next page's cursor or "").
    `after` is the cursor of the page before; `labels` name the operations."""
    _validate(query)
    account_id = actor.account_id
    position = decode_cursor(deps.settings, account_id, after) if after else None
    limit = limit or DEFAULT_LIMIT
    f = repo.AuditFilter(
        account_id=account_id,
        from_ms=query.start_time * 1000,
        to_ms=query.end_time * 1000 + 999,  # end_time is a whole second, included
        request_id=query.request_id,
        operations=(tuple(names.own_name(o) for o in query.operations)
                    if query.operations else None),
        member_id=query.person_id,
        only_dangerous=bool(query.is_dangerous),
        is_write=query.is_write,
    )
    total = repo.count_sync(conn, f)
    # One row more than asked tells whether a next page exists, so the last page's cursor is
    # "" as the reference says, and not a cursor to an empty page.
    rows = repo.page_sync(conn, f, after=position, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    docs = [
        AuditLog(
            created_at=r.created_at, account_id=r.account_id, member_id=r.member_id,
            member_name=r.member_name, request_id=r.request_id, ip=r.ip,
            operation=r.operation, operation_name=labels.get(r.operation, r.operation),
            body=r.body, params=[], is_dangerous=bool(r.is_dangerous),
            is_write=bool(r.is_write), outcome=r.outcome, key_suffix=r.key_suffix,
            target_ids=_target_ids(r.target_ids), credential=r.credential,
        )
        for r in rows
    ]
    cursor = ""
    if more and rows:
        cursor = encode_cursor(deps.settings, account_id, rows[-1].created_at, rows[-1].id)
    return total, docs, cursor


def _target_ids(text: str) -> list[str]:
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def audited_operations(runtime: Runtime) -> tuple[ServedOperation, ...]:
    """The operations the audit log records: those of the process's own registry (the
    composition root hands it to the runtime) that are audited, by name."""
    ops = {op.operation_name: op for op in runtime.operations if op.audited}
    return tuple(ops[name] for name in sorted(ops))


def labels(runtime: Runtime, locale: str) -> dict[str, str]:
    """The audited operations' names in a locale."""
    translator = runtime.translator
    return {op.operation_name: translator.gettext(locale, op.summary or op.operation_name)
            for op in audited_operations(runtime)}


@reads_sync(ACCOUNT_MANAGE)
def operation_types_sync(conn: Connection, actor: Actor, *,
                         runtime: Runtime) -> list[AuditOperationTypeItem]:
    """The operation names the audit log records, with their catalogue names (the same for
    every account; reading them is part of reading the log). Reads no row."""
    translator = runtime.translator
    return [
        AuditOperationTypeItem(
            name=op.operation_name,
            name_cn=translator.gettext(_CATALOG_LOCALE_CN, op.summary or op.operation_name),
        )
        for op in audited_operations(runtime)
    ]
