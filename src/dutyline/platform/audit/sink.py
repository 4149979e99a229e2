"""Writes audit rows for the operation layer (api/runtime.AuditSink)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.auth import Caller
from dutyline.api.secret import for_audit
from dutyline.kit.clock import Clock
from dutyline.platform.audit import repository

MAX_BODY_CHARS = 10 * 1024


def redacted_body(body: bytes, request_type: Any) -> str:
    """The body as the audit log keeps it: the request type's secret fields masked and the
    fields it does not know left out (api/secret.py): the audit log never holds a secret."""
    if not body.strip():
        return ""
    try:
        parsed = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return "<not JSON>"
    except (UnicodeDecodeError, RecursionError):
        # Refused as 400 by the operation layer; the failure is still audited.
        return "<not valid JSON text>"
    text = msgspec.json.encode(for_audit(parsed, request_type)).decode()
    return text if len(text) <= MAX_BODY_CHARS else text[:MAX_BODY_CHARS]


class DatabaseAuditSink:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def record(
        self,
        conn: AsyncConnection,
        *,
        caller: Caller,
        operation: str,
        request_id: str,
        client_ip: str,
        body: bytes,
        request_type: Any,
        targets: list[Any],
        outcome: str,
        is_write: bool,
        is_dangerous: bool,
    ) -> None:
        await repository.insert_entry(
            conn, {
                "account_id": caller.account_id,
                "member_id": caller.person_id,
                "member_name": caller.person_name,
                "key_suffix": caller.key_suffix,
                "request_id": request_id,
                "ip": client_ip,
                "operation": operation,
                "target_ids": msgspec.json.encode([str(t) for t in targets]).decode(),
                "body": redacted_body(body, request_type),
                "outcome": outcome,
                "is_write": is_write,
                "is_dangerous": is_dangerous,
                "created_at": int(self.clock.now() * 1000),
            }
        )
