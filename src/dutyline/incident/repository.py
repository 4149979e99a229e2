"""The queries of the incident package's own modules (creation, the feed, the event stream);
each sub-package (query, alert, lifecycle, field, analytics, ingest) keeps its own
repository.py.

Opening an incident, adding a feed entry and emitting an event run on ingestion's hot path,
inside a sync `Connection` (`Database.run_sync`): those are the sync helpers of the marked
section, which the async callers reach through `run_sync`."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Text,
    cast,
    func,
    insert,
    or_,
    select,
)
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.like import ESCAPE, contains_pattern
from dutyline.db.tables.incident import incident, incident_event, incident_feed
from dutyline.db.upsert import insert_for


async def event_row(conn: AsyncConnection, event_id: int) -> Row[Any] | None:
    stmt = select(incident_event).where(incident_event.c.id == event_id)
    return (await conn.execute(stmt)).first()


async def event_rows(conn: AsyncConnection, event_ids: list[int]) -> list[Row[Any]]:
    """The events that still exist, oldest first."""
    stmt = (select(incident_event).where(incident_event.c.id.in_(event_ids))
            .order_by(incident_event.c.id))
    return list((await conn.execute(stmt)).all())


_LAST_EVENT_ID = select(func.coalesce(func.max(incident_event.c.id), 0))


def last_event_id_sync(conn: Connection) -> int:
    """The newest event's id (0 for none): where a live view starts reading."""
    return int(conn.execute(_LAST_EVENT_ID).scalar_one())


async def last_event_id(conn: AsyncConnection) -> int:
    return await conn.run_sync(last_event_id_sync)


async def events_after(conn: AsyncConnection, after_id: int, *, account_id: int | None = None,
                       limit: int) -> list[Any]:
    """(id, account_id, incident_id, kind) of the events past `after_id`, oldest first: of
    one account, or of all. A range of the primary key, so as cheap as the events are few."""
    c = incident_event.c
    stmt = select(c.id, c.account_id, c.incident_id, c.kind).where(c.id > after_id)
    if account_id is not None:
        stmt = stmt.where(c.account_id == account_id)
    return list((await conn.execute(stmt.order_by(c.id).limit(limit))).all())


def responders_include(person_ids: Sequence[int]) -> ColumnElement[bool]:
    """Incidents whose responders include any of these people (the `responder_ids` filter of
    /incident/list and the analytics). `responders` is JSON written only by this package,
    always encoded by msgspec with person_id first and no spaces, so a person's entry
    starts with this exact text."""
    return or_(*(incident.c.responders.like(contains_pattern(f'{{"person_id":{p},'),
                                            escape=ESCAPE) for p in person_ids))


# --- hot path: sync helpers (run inside Database.run_sync / AsyncConnection.run_sync) -------


@functools.cache
def _insert_incident(dialect: str) -> Any:
    return (insert_for(dialect)(incident)
            .on_conflict_do_nothing(index_elements=[incident.c.account_id, incident.c.num])
            .returning(incident.c.incident_id))


def insert_incident(conn: Connection, values: dict[str, Any]) -> bool:
    """Insert the incident unless its `num` is taken in its account (False then: draw
    another). Any other conflict (the id) still raises."""
    return conn.execute(_insert_incident(conn.dialect.name), values).first() is not None


# Built once: ingestion runs these for every new incident (building a statement with its
# values, and its cache key, cost more CPU than running it).
_INSERT_FEED_ENTRY = insert(incident_feed)
_INSERT_EVENT = insert(incident_event).returning(incident_event.c.id)
# On PostgreSQL the same insert also tells the listening processes (NOTIFY, delivered once the
# transaction commits) which account has news: no extra round trip on the hot path, and
# PostgreSQL folds a transaction's identical notifications into one.
LIVE_CHANNEL = "dutyline_incident_events"
_INSERT_EVENT_PG = insert(incident_event).returning(
    incident_event.c.id,
    func.pg_notify(LIVE_CHANNEL, cast(incident_event.c.account_id, Text)))


def insert_feed_entry(conn: Connection, values: dict[str, Any]) -> None:
    conn.execute(_INSERT_FEED_ENTRY, values)


def insert_feed_entries(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Several entries in one multi-row insert."""
    if rows:
        conn.execute(insert(incident_feed), rows)


def insert_event(conn: Connection, values: dict[str, Any]) -> int:
    """The new event's id."""
    stmt = _INSERT_EVENT_PG if conn.dialect.name == "postgresql" else _INSERT_EVENT
    return int(conn.execute(stmt, values).one()[0])
