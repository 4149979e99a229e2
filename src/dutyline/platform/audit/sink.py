"""Writes audit rows (api/runtime.AuditSink): the operation layer's one row per audited call,
the entries a write service noted on its actor, flushed by the unit of work that ran it
(api/unit.py: the console, a signed link, a job, a command), and the failed write of a unit
that failed, with its outcome."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor, AuditEntry, Credential
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
        entries: list[AuditEntry] | None = None,
    ) -> None:
        """One row for a call of the operation layer (an app key's), with the targets of
        what its services noted (`entries`) after the handler's own."""
        if entries:
            targets = merged_targets(targets, entries)
            is_dangerous = is_dangerous or any(e.dangerous for e in entries)
        await self._insert(
            conn, account_id=caller.account_id, member_id=caller.person_id,
            member_name=caller.person_name, key_suffix=caller.key_suffix,
            credential="app_key", request_id=request_id, client_ip=client_ip,
            operation=operation, targets=targets, body=redacted_body(body, request_type),
            outcome=outcome, is_write=is_write, is_dangerous=is_dangerous)

    async def flush(self, conn: AsyncConnection, actor: Actor, *, request_id: str = "",
                    client_ip: str = "", body: str = "") -> int:
        """Write the entries the actor's services noted: one row for the transaction (named
        after its first write, with every write's targets), in it. Returns the rows written
        (0 when nothing was written)."""
        entries = actor.take_audit_entries()
        if not entries:
            return 0
        await self._insert(
            conn, account_id=actor.account_id, member_id=actor.person_id,
            member_name=actor.person_name, key_suffix=actor.key_suffix,
            credential=actor.credential, request_id=request_id, client_ip=client_ip,
            operation=operation_name(entries[0].operation),
            targets=merged_targets([], entries), body=body, outcome="OK", is_write=True,
            is_dangerous=any(e.dangerous for e in entries))
        return 1

    async def failed(self, conn: AsyncConnection, actor: Actor, *, entry: AuditEntry,
                     outcome: str, request_id: str = "", client_ip: str = "",
                     body: str = "") -> None:
        """The row of a unit of work that failed: the write it attempted (refused, or
        raised, or rolled back with the unit) and the error's code as its outcome, as the
        operation layer records a failed call."""
        await self._insert(
            conn, account_id=actor.account_id, member_id=actor.person_id,
            member_name=actor.person_name, key_suffix=actor.key_suffix,
            credential=actor.credential, request_id=request_id, client_ip=client_ip,
            operation=operation_name(entry.operation), targets=merged_targets([], [entry]),
            body=body, outcome=outcome, is_write=True, is_dangerous=entry.dangerous)

    async def _insert(self, conn: AsyncConnection, *, account_id: int, member_id: int,
                      member_name: str, key_suffix: str, credential: Credential,
                      request_id: str, client_ip: str, operation: str, targets: list[Any],
                      body: str, outcome: str, is_write: bool, is_dangerous: bool) -> None:
        await repository.insert_entry(
            conn, {
                "account_id": account_id,
                "member_id": member_id,
                "member_name": member_name,
                "key_suffix": key_suffix,
                "credential": credential,
                "request_id": request_id,
                "ip": client_ip,
                "operation": operation,
                "target_ids": msgspec.json.encode([str(t) for t in targets]).decode(),
                "body": body,
                "outcome": outcome,
                "is_write": is_write,
                "is_dangerous": is_dangerous,
                "created_at": int(self.clock.now() * 1000),
            }
        )


def operation_name(path: str) -> str:
    """The audit log's name of an operation: `/team/upsert` -> `team.upsert`, as the
    operation layer names it (api/operation.Operation.operation_name)."""
    return path.strip("/").replace("/", ".")


def merged_targets(first: list[Any], entries: list[AuditEntry]) -> list[Any]:
    """`first`, then each entry's targets, each id once, in order."""
    seen: dict[str, Any] = {}
    for target in [*first, *(t for e in entries for t in e.targets)]:
        seen.setdefault(str(target), target)
    return list(seen.values())
