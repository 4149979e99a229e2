"""Worknodes and runner keys: who may manage them, what a record shows, and the runner side of
the record (a key opening a connection, heartbeats, disconnects).

A worknode is one runner inside a customer's network. Owners and admins (account_manage)
create it, give it a name and labels (sent to the runner in `welcome`), and create keys for
it; any member of the account may list and read worknodes, to pick one as an automation
rule's `environment_id`.
A worknode is online while a server process holds its socket and its last heartbeat is recent
(the runner beats every 30 s: ws/client.go `heartbeatInterval`)."""

from __future__ import annotations

import hmac
import json
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.runner import keys
from dutyline.aisre.runner import repository as repo
from dutyline.aisre.runner.schemas import (
    RunnerKeyCreated,
    RunnerKeyListResponse,
    RunnerKeyRecord,
    WorknodeListResponse,
    WorknodeRecord,
)
from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.kit.ids import prefixed_id

# Three missed heartbeats (30 s each) and the worknode counts as offline.
ONLINE_WINDOW_MS = 90_000


def is_online(row: Any, now_ms: int) -> bool:
    return bool(row.holder) and row.last_heartbeat_at >= now_ms - ONLINE_WINDOW_MS


def _labels(labels: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for label in labels:
        label = label.strip()
        if label:
            seen.setdefault(label, None)
    return list(seen)


def _json(text: str, default: Any) -> Any:
    try:
        value = json.loads(text or "null")
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def record(row: Any, now_ms: int, key_count: int = 0) -> WorknodeRecord:
    return WorknodeRecord(
        worknode_id=row.worknode_id, account_id=row.account_id, name=row.name,
        labels=_json(row.labels, []), description=row.description,
        runner_name=row.runner_name, runner_labels=_json(row.runner_labels, []),
        version=row.version,
        environment=_json(row.environment, {}), metrics=_json(row.metrics, {}),
        online=is_online(row, now_ms), connected_at=row.connected_at,
        last_heartbeat_at=row.last_heartbeat_at, disconnected_at=row.disconnected_at,
        key_count=key_count, created_at=row.created_at, updated_at=row.updated_at,
    )


async def _worknode(conn: AsyncConnection, actor: Actor, worknode_id: str) -> Any:
    row = await repo.get_worknode(conn, actor.account_id, worknode_id)
    if row is None:
        raise errors.not_found("worknode", worknode_id)
    return row


# --- worknodes ------------------------------------------------------------------------------


@writes("/safari/worknode/create", ACCOUNT_MANAGE,
        targets=lambda record: [record.worknode_id])
async def create_worknode(
    conn: AsyncConnection, actor: Actor, *, name: str, labels: list[str], description: str
) -> WorknodeRecord:
    name = name.strip()
    if not name:
        raise errors.invalid("name", "must not be blank")
    if await repo.name_taken(conn, actor.account_id, name):
        raise errors.invalid("name", "already exists")
    now = actor.now_ms
    worknode_id = prefixed_id("wn")
    await repo.insert_worknode(conn, {
        "worknode_id": worknode_id, "account_id": actor.account_id, "name": name,
        "labels": json.dumps(_labels(labels)), "description": description,
        "created_by": actor.person_id, "created_at": now, "updated_at": now,
    })
    return await get_worknode(conn, actor, worknode_id=worknode_id)


@writes("/safari/worknode/update", ACCOUNT_MANAGE,
        targets=lambda record: [record.worknode_id])
async def update_worknode(
    conn: AsyncConnection, actor: Actor, *, worknode_id: str, name: str | None = None,
    labels: list[str] | None = None, description: str | None = None,
) -> WorknodeRecord:
    await _worknode(conn, actor, worknode_id)
    values: dict[str, Any] = {"updated_at": actor.now_ms}
    if name is not None:
        name = name.strip()
        if not name:
            raise errors.invalid("name", "must not be blank")
        if await repo.name_taken(conn, actor.account_id, name, other_than=worknode_id):
            raise errors.invalid("name", "already exists")
        values["name"] = name
    if labels is not None:
        values["labels"] = json.dumps(_labels(labels))
    if description is not None:
        values["description"] = description
    await repo.update_worknode(conn, worknode_id, values)
    return await get_worknode(conn, actor, worknode_id=worknode_id)


def get_worknode_sync(conn: Connection, actor: Actor, *, worknode_id: str) -> WorknodeRecord:
    row = repo.get_worknode_sync(conn, actor.account_id, worknode_id)
    if row is None:
        raise errors.not_found("worknode", worknode_id)
    counts = repo.key_counts_sync(conn, [worknode_id])
    return record(row, actor.now_ms, counts.get(worknode_id, 0))


async def get_worknode(conn: AsyncConnection, actor: Actor, *, worknode_id: str) -> WorknodeRecord:
    return await conn.run_sync(lambda sync: get_worknode_sync(sync, actor,
                                                              worknode_id=worknode_id))


def list_worknodes_sync(
    conn: Connection, actor: Actor, *, query: str = "", online: bool | None = None,
    p: int = 1, limit: int = 20,
) -> WorknodeListResponse:
    now = actor.now_ms
    total, rows = repo.list_worknodes_sync(
        conn, actor.account_id, query=query.strip(), online=online,
        online_since=now - ONLINE_WINDOW_MS, offset=(p - 1) * limit, limit=limit)
    counts = repo.key_counts_sync(conn, [r.worknode_id for r in rows])
    return WorknodeListResponse(total=total, p=p, limit=limit, items=[
        record(r, now, counts.get(r.worknode_id, 0)) for r in rows])


@writes("/safari/worknode/delete", ACCOUNT_MANAGE)
async def delete_worknode(conn: AsyncConnection, actor: Actor, *, worknode_id: str) -> str:
    """Delete a worknode with its keys (its runner is disconnected at its next message)."""
    await _worknode(conn, actor, worknode_id)
    await repo.delete_worknode(conn, actor.account_id, worknode_id)
    return worknode_id


# --- keys -----------------------------------------------------------------------------------


def _key_record(row: Any) -> RunnerKeyRecord:
    return RunnerKeyRecord(
        key_id=row.key_id, worknode_id=row.worknode_id, name=row.name,
        key_suffix=row.key_suffix, revoked=bool(row.revoked), revoked_at=row.revoked_at,
        last_used_at=row.last_used_at, created_at=row.created_at)


@writes("/safari/runner/key/create", ACCOUNT_MANAGE, targets=lambda created: [created.key_id])
async def create_key(
    conn: AsyncConnection, actor: Actor, *, worknode_id: str, name: str = ""
) -> RunnerKeyCreated:
    """A new key for a worknode; the key is in this response only."""
    await _worknode(conn, actor, worknode_id)
    for _ in range(3):
        key = keys.new_key()
        # A miss remembered for this value must not outlive the key's creation (keys.py).
        keys.MISSED.forget(keys.key_hash(key))
        values = {
            "key_id": prefixed_id("rkey"), "account_id": actor.account_id,
            "worknode_id": worknode_id, "name": name.strip(), "key_hash": keys.key_hash(key),
            "key_suffix": keys.suffix(key), "created_by": actor.person_id,
            "created_at": actor.now_ms,
        }
        try:
            await repo.insert_key(conn, values)
        except IntegrityError:  # pragma: no cover - a 256-bit collision
            continue
        row = await repo.get_key(conn, actor.account_id, str(values["key_id"]))
        base = _key_record(row)
        return RunnerKeyCreated(key=key, **{f: getattr(base, f) for f in base.__struct_fields__})
    raise errors.InternalError()  # pragma: no cover


@reads_sync(ACCOUNT_MANAGE)
def list_keys_sync(
    conn: Connection, actor: Actor, *, worknode_id: str = "",
    include_revoked: bool = False, p: int = 1, limit: int = 20,
) -> RunnerKeyListResponse:
    total, rows = repo.list_keys_sync(
        conn, actor.account_id, worknode_id=worknode_id.strip(),
        include_revoked=include_revoked, offset=(p - 1) * limit, limit=limit)
    return RunnerKeyListResponse(total=total, p=p, limit=limit,
                                 items=[_key_record(r) for r in rows])


@writes("/safari/runner/key/revoke", ACCOUNT_MANAGE)
async def revoke_key(conn: AsyncConnection, actor: Actor, *, key_id: str) -> str:
    """Revoke a key at once: new connections with it are refused, and a runner connected with
    it is disconnected at its next message (ws.py checks the key on every heartbeat)."""
    row = await repo.get_key(conn, actor.account_id, key_id)
    if row is None:
        raise errors.not_found("runner key", key_id)
    if not row.revoked:
        await repo.update_key(conn, key_id, {"revoked": True, "revoked_at": actor.now_ms})
    return key_id


# --- the runner's side ----------------------------------------------------------------------


class KeyRefused(Exception):
    """Unknown, revoked, or of a deleted worknode: one answer for all."""


async def open_with_key(conn: AsyncConnection, key: str, *, now_ms: int) -> tuple[Any, Any]:
    """The key's row and its worknode's, for a runner connecting; KeyRefused otherwise."""
    if not keys.well_formed(key):
        raise KeyRefused()
    digest = keys.key_hash(key)
    row = await repo.key_by_hash(conn, digest)
    if row is None or row.revoked or not hmac.compare_digest(row.key_hash, digest):
        raise KeyRefused()
    worknode = await repo.get_worknode(conn, row.account_id, row.worknode_id)
    if worknode is None:
        raise KeyRefused()
    await repo.update_key(conn, row.key_id, {"last_used_at": now_ms})
    return row, worknode


async def key_still_valid(conn: AsyncConnection, actor: Actor, *, key_id: str) -> bool:
    row = await repo.get_key(conn, actor.account_id, key_id)
    if row is None or row.revoked:
        return False
    return await repo.get_worknode(conn, actor.account_id, row.worknode_id) is not None


async def mark_connected(conn: AsyncConnection, worknode_id: str, *, holder: str,
                         now_ms: int) -> None:
    await repo.update_worknode(conn, worknode_id, {
        "holder": holder, "connected_at": now_ms, "updated_at": now_ms})


async def record_heartbeat(
    conn: AsyncConnection, worknode_id: str, *, holder: str, now_ms: int, version: str,
    name: str, labels: list[str] | None, environment: dict[str, Any] | None,
    metrics: dict[str, Any] | None,
) -> bool:
    """False when this process no longer holds the worknode (it reconnected elsewhere)."""
    values: dict[str, Any] = {"last_heartbeat_at": now_ms, "version": version[:64],
                              "runner_name": name[:255], "updated_at": now_ms}
    if labels is not None:
        values["runner_labels"] = json.dumps([str(x)[:128] for x in labels[:64]])
    if environment is not None:  # the runner sends it on the first heartbeat only
        values["environment"] = json.dumps(environment)[:16_000]
    if metrics is not None:
        values["metrics"] = json.dumps(metrics)[:4_000]
    return await repo.update_worknode(conn, worknode_id, values, holder=holder) > 0


async def mark_disconnected(conn: AsyncConnection, worknode_id: str, *, holder: str,
                            now_ms: int) -> None:
    await repo.update_worknode(conn, worknode_id, {
        "holder": "", "disconnected_at": now_ms, "updated_at": now_ms}, holder=holder)


async def worknode_for_run(conn: AsyncConnection, actor: Actor, *, worknode_id: str) -> Any:
    """The worknode a byoc rule names, or None (unknown or of another account)."""
    return await repo.get_worknode(conn, actor.account_id, worknode_id)


def welcome_fields(worknode: Any) -> dict[str, Any]:
    return {"worknode_id": worknode.worknode_id, "name": worknode.name,
            "labels": _json(worknode.labels, [])}
