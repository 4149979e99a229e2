"""Writes audit rows for the operation layer (api/runtime.AuditSink)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.auth import Caller
from dutyline.kit.clock import Clock
from dutyline.platform.audit import repository

MAX_BODY_CHARS = 10 * 1024
# Request fields whose values never reach the audit log: the log keeps no secret.
SECRET_FIELDS = frozenset(
    {"api_key", "app_key", "token", "password", "secret", "headers", "auth_config",
     "http_post_token", "integration_key", "authorization", "client_secret"}
)


def redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: ("***" if isinstance(k, str) and k.lower() in SECRET_FIELDS else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def redacted_body(body: bytes) -> str:
    if not body.strip():
        return ""
    try:
        parsed = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return "<not JSON>"
    except (UnicodeDecodeError, RecursionError):
        # Refused as 400 by the operation layer; the failure is still audited.
        return "<not valid JSON text>"
    text = msgspec.json.encode(redact(parsed)).decode()
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
                "body": redacted_body(body),
                "outcome": outcome,
                "is_write": is_write,
                "is_dangerous": is_dangerous,
                "created_at": int(self.clock.now() * 1000),
            }
        )
