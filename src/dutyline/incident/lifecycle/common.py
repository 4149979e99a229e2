"""What every incident write shares: loading a batch all-or-nothing, refusing a batch that is
not in the right state by naming the ids, and recording a change (feed entry + event) in the
transaction of the change."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.incident import events, feed, visibility
from dutyline.incident.lifecycle import repository as repo
from dutyline.kit.vocabulary import CLOSED, OPEN, PROCESSING, TRIGGERED

__all__ = ["CLOSED", "OPEN", "PROCESSING", "TRIGGERED", "dumps", "load_all", "loads", "record",
           "require_progress", "responders_adding", "responders_unacked",
           "responders_with_ack", "unique_ids"]

_json = msgspec.json.Decoder()


def dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def loads(text: str) -> Any:
    return _json.decode(text)


def unique_ids(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i.lower() for i in ids))


async def load_all(conn: AsyncConnection, actor: Actor, ids: list[str],
                   field: str = "incident_ids") -> list[Row[Any]]:
    """Every id, locked, in request order; any id that is not a visible incident of the
    actor's account (removed, or of a private channel they cannot see) fails the whole call
    by name, before anything changed."""
    return _all_found(await repo.lock(conn, await visibility.scope(actor), ids), ids, field)


def _all_found(found: dict[str, Row[Any]], ids: list[str], field: str) -> list[Row[Any]]:
    missing = [i for i in ids if i not in found]
    if missing:
        raise errors.ResourceNotFound(
            "{field}: incidents not found: {ids}", field=field, ids=", ".join(missing))
    return [found[i] for i in ids]


def require_progress(rows: list[Row[Any]], allowed: tuple[str, ...], reason: str,
                     field: str = "incident_ids") -> None:
    """Refuse the batch, naming every incident whose progress is not in `allowed`."""
    wrong = [r.incident_id for r in rows if r.progress not in allowed]
    if wrong:
        raise errors.InvalidParameter(
            "Invalid parameter {field}: {reason}: {ids}", field=field, reason=reason,
            ids=", ".join(wrong))


async def record(
    conn: AsyncConnection, actor: Actor, row: Row[Any], *, feed_type: str | None,
    detail: dict[str, Any], kind: str, payload: dict[str, Any] | None = None,
) -> None:
    """The feed entry (who, when, what) and the event for one change of one incident (the
    endpoint names the audit targets)."""
    account_id, person_id, now = actor.account_id, actor.person_id, actor.now_s
    if feed_type is not None:
        await feed.add(conn, actor, incident_id=row.incident_id, feed_type=feed_type,
                       detail=detail)
    await events.emit(
        conn, account_id=account_id, incident_id=row.incident_id, kind=kind, now_s=now,
        person_id=person_id,
        payload={"channel_id": row.channel_id, **(payload or {})},
    )


def responders_with_ack(text: str, person_id: int, now_s: int) -> list[dict[str, Any]]:
    """The caller acknowledges: their responder entry gets acknowledged_at (an acker who was
    not assigned joins the responders)."""
    responders: list[dict[str, Any]] = loads(text)
    for r in responders:
        if r.get("person_id") == person_id:
            r["acknowledged_at"] = now_s
            return responders
    responders.append({"person_id": person_id, "assigned_at": now_s, "acknowledged_at": now_s})
    return responders


def responders_unacked(text: str) -> list[dict[str, Any]]:
    responders: list[dict[str, Any]] = loads(text)
    for r in responders:
        r["acknowledged_at"] = 0
    return responders


def responders_adding(text: str, person_ids: Iterable[int], now_s: int) -> list[dict[str, Any]]:
    responders: list[dict[str, Any]] = loads(text)
    present = {r.get("person_id") for r in responders}
    for p in person_ids:
        if p not in present:
            responders.append({"person_id": p, "assigned_at": now_s, "acknowledged_at": 0})
            present.add(p)
    return responders
