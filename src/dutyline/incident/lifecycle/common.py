"""What every incident write shares: loading a batch all-or-nothing, refusing a batch that is
not in the right state by naming the ids, and recording a change (feed entry + event) in the
transaction of the change (incident/state's `record`, which its transitions write theirs
with)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.incident import state, visibility
from dutyline.incident.lifecycle import repository as repo
from dutyline.incident.state.values import (
    dumps,
    loads,
    responders_adding,
)
from dutyline.kit.vocabulary import CLOSED, OPEN

__all__ = ["CLOSED", "OPEN", "dumps", "load_all", "loads", "record", "require_progress",
           "responders_adding", "unique_ids"]


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
    """Refuse the batch, naming every incident whose progress is not in `allowed` (a
    change that is not a transition of its own: assigning, adding responders)."""
    state.require(rows, state.Guard(reason, allowed), 0, field)


async def record(
    conn: AsyncConnection, actor: Actor, row: Row[Any], *, feed_type: str | None,
    detail: dict[str, Any], kind: str, payload: dict[str, Any] | None = None,
) -> None:
    """The feed entry (who, when, what) and the event for one change of one incident (the
    endpoint names the audit targets)."""
    await conn.run_sync(state.record, state.by(actor), row.incident_id, row.channel_id,
                        feed_type=feed_type, detail=detail, kind=kind, payload=payload)
