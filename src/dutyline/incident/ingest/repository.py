"""Every query of ingestion: alert rows and their events, the inhibit-source index of the
noise rules, the incident counters grouping keeps, and the auto-resolve timer's read.

Almost all of it runs on the hot path of a push, inside a sync `Connection`
(`Database.run_sync`), so those are the sync helpers of the marked section. Statements run on
every push are built once with bound parameters: building them per call (and SQLAlchemy
regenerating their cache keys) was over a third of a push's CPU."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    bindparam,
    case,
    delete,
    false,
    func,
    literal_column,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.incident import alert, alert_event, incident, intake_outcome
from dutyline.db.tables.incident_noise import inhibit_source
from dutyline.db.upsert import insert_for
from dutyline.incident.state import raised_severity
from dutyline.kit.vocabulary import CLOSED, OK, TRIGGERED


async def timer_incident(conn: AsyncConnection, incident_id: str) -> Any:
    """What the auto-resolve timer decides on: the incident's channel, progress and times."""
    stmt = select(
        incident.c.account_id, incident.c.channel_id, incident.c.progress,
        incident.c.last_time, incident.c.start_time,
    ).where(incident.c.incident_id == incident_id)
    return (await conn.execute(stmt)).first()


# --- hot path: sync helpers (run inside Database.run_sync / AsyncConnection.run_sync) -------


# -- alerts and their events

# Written out, not bound: the active-key lookups must be able to use uq_alert_active_key,
# which is partial (end_time = 0), and neither PostgreSQL's generic plan of a prepared
# statement nor SQLite can prove `end_time = $n` implies it; PostgreSQL walked the channel's
# active alerts instead (1 ms a push at 10,000 active alerts, bench/README.md).
_ACTIVE = alert.c.end_time == literal_column("0")

_FIND_ACTIVE = (
    select(
        alert.c.alert_id, alert.c.incident_id, alert.c.alert_severity, alert.c.labels,
        incident.c.progress, alert.c.inhibit_rule_id, alert.c.inhibited_by,
        alert.c.silence_rule_id,
    )
    .select_from(alert.outerjoin(incident, incident.c.incident_id == alert.c.incident_id))
    .where(
        alert.c.integration_id == bindparam("integration_id"),
        alert.c.alert_key == bindparam("alert_key"),
        alert.c.channel_id == bindparam("channel_id"),
        _ACTIVE,
    )
    .with_for_update(of=alert)
)
_ACTIVE_CHANNELS = (
    select(alert.c.channel_id)
    .where(
        alert.c.integration_id == bindparam("integration_id"),
        alert.c.alert_key == bindparam("alert_key"),
        _ACTIVE,
    )
    .order_by(alert.c.channel_id)
)
_INSERT_EVENT = alert_event.insert()


@functools.cache
def _update_statement(columns: frozenset[str]) -> Any:
    """UPDATE of an active alert setting `columns` (bound as v_<name>) and counting one
    event; one cached statement per combination of optional columns."""
    values: dict[str, Any] = {name: bindparam(f"v_{name}") for name in sorted(columns)}
    values["event_cnt"] = alert.c.event_cnt + 1
    return update(alert).where(alert.c.alert_id == bindparam("v_alert_id")).values(values)


def find_active_alert(conn: Connection, integration_id: int, channel_id: int,
                      alert_key: str) -> Any:
    """(alert_id, incident_id, alert_severity, labels, incident progress, inhibit_rule_id,
    inhibited_by, silence_rule_id) of the key's active alert in the channel (a route may
    deliver one event to several), locked on PostgreSQL; None."""
    params = {"integration_id": integration_id, "alert_key": alert_key,
              "channel_id": channel_id}
    return conn.execute(_FIND_ACTIVE, params).first()


def active_channels(conn: Connection, integration_id: int, alert_key: str) -> list[int]:
    """The channels where a key of the integration has an active alert."""
    params = {"integration_id": integration_id, "alert_key": alert_key}
    return [int(r[0]) for r in conn.execute(_ACTIVE_CHANNELS, params)]


def update_active_alert(conn: Connection, alert_id: str, values: dict[str, Any]) -> None:
    """Set these columns of an active alert and count one more event on it."""
    params = {f"v_{name}": value for name, value in values.items()}
    params["v_alert_id"] = alert_id
    conn.execute(_update_statement(frozenset(values)), params)


@functools.cache
def _insert_alert(dialect: str) -> Any:
    return (
        insert_for(dialect)(alert)
        .on_conflict_do_nothing(
            index_elements=[alert.c.integration_id, alert.c.alert_key, alert.c.channel_id],
            # A literal, not a bound parameter: PostgreSQL infers the partial index from this
            # predicate, and once asyncpg's prepared statement switches to a generic plan a
            # `$1` no longer implies `end_time = 0` ("no unique or exclusion constraint
            # matching the ON CONFLICT specification" from the sixth new alert on).
            index_where=text("end_time = 0"),
        )
        .returning(alert.c.alert_id)
    )


def insert_alert(conn: Connection, values: dict[str, Any]) -> str | None:
    """Start an alert; None when a concurrent push already holds the key's active slot (the
    partial unique index)."""
    row = conn.execute(_insert_alert(conn.dialect.name), values).first()
    return None if row is None else str(row[0])


def end_alert(conn: Connection, alert_id: str, *, now_s: int) -> None:
    conn.execute(
        update(alert)
        .where(alert.c.alert_id == alert_id, alert.c.end_time == 0)
        .values(end_time=now_s, updated_at=now_s)
    )


_SET_ALERT_INCIDENT = (update(alert).where(alert.c.alert_id == bindparam("set_alert_id"))
                       .values(incident_id=bindparam("set_incident_id")))


def set_alert_incident(conn: Connection, alert_id: str, incident_id: str) -> None:
    conn.execute(_SET_ALERT_INCIDENT, {"set_alert_id": alert_id, "set_incident_id": incident_id})


def set_alert_values(conn: Connection, alert_id: str, values: dict[str, Any]) -> None:
    conn.execute(update(alert).where(alert.c.alert_id == alert_id).values(**values))


def insert_event(conn: Connection, values: dict[str, Any]) -> None:
    conn.execute(_INSERT_EVENT, values)


# -- the inhibit-source index (incident/ingest/noise.py)

_SOURCE_LIVE = [
    alert.c.end_time == 0,
    alert.c.acked == false(),
    alert.c.last_time >= bindparam("since"),
    or_(alert.c.incident_id.is_(None), incident.c.progress == TRIGGERED),
]
_SOURCE_FROM = (
    inhibit_source.join(alert, alert.c.alert_id == inhibit_source.c.alert_id)
    .outerjoin(incident, incident.c.incident_id == alert.c.incident_id)
)


def _source_lookup(rule_param: str, key_param: str) -> Any:
    """The first live source of one rule at one match key."""
    return (
        select(inhibit_source.c.rule_id, inhibit_source.c.alert_id)
        .select_from(_SOURCE_FROM)
        .where(inhibit_source.c.rule_id == bindparam(rule_param),
               inhibit_source.c.match_key == bindparam(key_param), *_SOURCE_LIVE)
        .limit(1)
    )


_SOURCE_STILL_LIVE = (
    select(alert.c.alert_id)
    .select_from(alert.outerjoin(incident, incident.c.incident_id == alert.c.incident_id))
    .where(alert.c.alert_id == bindparam("alert_id"), *_SOURCE_LIVE)
)
_UNINDEX = delete(inhibit_source).where(inhibit_source.c.alert_id == bindparam("alert_id"))
_SUBJECT_COLUMNS = (
    alert.c.alert_id, alert.c.integration_id, alert.c.alert_key, alert.c.title,
    alert.c.title_rule, alert.c.description, alert.c.alert_severity, alert.c.labels,
)
_HELD_BY = select(*_SUBJECT_COLUMNS).where(
    alert.c.inhibited_by == bindparam("source"), alert.c.end_time == 0,
    # Spelled as the partial index's own predicate (a literal, not a parameter), so both
    # planners see the index applies (a bound `= ?` alone does not prove `!= ''`).
    text("alert.inhibited_by != ''"),
)
# Source rows written in one statement at most.
_INSERT_BATCH = 1000


@functools.cache
def _find_sources_statement(count: int) -> Any:
    """One live source (if any) of each of `count` rules, each at its own match key: a UNION
    ALL of LIMIT 1 lookups, one round trip for every rule a new alert is a target of."""
    if count == 1:
        return _source_lookup("r0", "k0")
    branches = [_source_lookup(f"r{i}", f"k{i}").subquery(f"s{i}") for i in range(count)]
    return union_all(*(select(b.c.rule_id, b.c.alert_id) for b in branches))


def find_sources(conn: Connection, keys: Sequence[tuple[str, str]],
                 since: int) -> dict[str, str]:
    """{rule_id: a live source alert} for these (rule_id, match key) pairs, in one statement."""
    params: dict[str, Any] = {"since": since}
    for i, (rule_id, key) in enumerate(keys):
        params[f"r{i}"] = rule_id
        params[f"k{i}"] = key
    return {str(r): str(a) for r, a in conn.execute(_find_sources_statement(len(keys)),
                                                    params).all()}


def source_still_live(conn: Connection, alert_id: str, since: int) -> bool:
    row = conn.execute(_SOURCE_STILL_LIVE, {"alert_id": alert_id, "since": since}).first()
    return row is not None


def unindex_source(conn: Connection, alert_id: str) -> None:
    conn.execute(_UNINDEX, {"alert_id": alert_id})


def index_sources(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Insert (rule_id, match_key, alert_id, channel_id) rows, ignoring those present."""
    statement = insert_for(conn)(inhibit_source).on_conflict_do_nothing()
    for start in range(0, len(rows), _INSERT_BATCH):
        conn.execute(statement, rows[start:start + _INSERT_BATCH])


def held_by(conn: Connection, source_alert_id: str) -> list[Any]:
    """The still-firing alerts this source inhibits (the columns a filter reads)."""
    return list(conn.execute(_HELD_BY, {"source": source_alert_id}).all())


def drop_rule_sources(conn: Connection, rule_id: str) -> None:
    conn.execute(delete(inhibit_source).where(inhibit_source.c.rule_id == rule_id))


def recent_active_alerts(conn: Connection, channel_id: int, since: int,
                         limit: int) -> list[Any]:
    """The channel's active alerts seen since `since` (the columns a filter reads)."""
    return list(conn.execute(
        select(*_SUBJECT_COLUMNS)
        .where(alert.c.channel_id == channel_id, alert.c.end_time == 0,
               alert.c.last_time >= since)
        .limit(limit)
    ))


# -- incidents: grouping, counters and closing


def lock_group(conn: Connection, channel_id: int, key: str) -> None:
    """Two new alerts of one group arriving together must not open two incidents: on
    PostgreSQL they queue on a transaction lock of the group; SQLite writers are serialized
    already."""
    if conn.dialect.name == "postgresql":
        digest = hashlib.blake2b(f"{channel_id}:{key}".encode(), digest_size=8).digest()
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"),
                     {"k": int.from_bytes(digest, "big", signed=True)})


def open_incident_of_group(conn: Connection, *, account_id: int, channel_id: int, key: str,
                           started_since: int | None) -> str | None:
    """The newest open incident of the channel with this grouping key that takes alerts."""
    stmt = (
        select(incident.c.incident_id)
        .where(
            incident.c.channel_id == channel_id,
            incident.c.equals_md5 == key,
            incident.c.progress != CLOSED,
            incident.c.account_id == account_id,
            incident.c.deleted_at == 0,
            incident.c.merged_into.is_(None),
            # /incident/disable-merge: such an incident takes no more alerts; the alert
            # opens (or joins) another incident of its group.
            incident.c.merge_disabled.is_(false()),
        )
        .order_by(incident.c.start_time.desc())
        .limit(1)
    )
    if started_since is not None:
        stmt = stmt.where(incident.c.start_time >= started_since)
    found = conn.execute(stmt).scalar_one_or_none()
    return None if found is None else str(found)


def count_joined_alert(conn: Connection, incident_id: str, *, severity: str,
                       now_s: int) -> None:
    """A new alert joined the incident: count it (and its first event) and raise the
    incident's severity to the alert's if that is worse."""
    conn.execute(
        update(incident)
        .where(incident.c.incident_id == incident_id)
        .values(
            alert_cnt=incident.c.alert_cnt + 1,
            active_alert_cnt=incident.c.active_alert_cnt + 1,
            alert_event_cnt=incident.c.alert_event_cnt + 1,
            last_time=now_s, updated_at=now_s, **raised_severity(severity),
        )
    )


@functools.cache
def _count_statement(raised_to: str | None, recovered: bool) -> Any:
    """The incident UPDATE of count_event, built once per (raised severity, recovered):
    it runs on nearly every push, and building it per call cost more than running it."""
    values: dict[str, Any] = {
        "alert_event_cnt": incident.c.alert_event_cnt + 1,
        "last_time": bindparam("v_now"),
        "updated_at": bindparam("v_now"),
    }
    if raised_to is not None:
        values.update(raised_severity(raised_to))
    if recovered:
        values["active_alert_cnt"] = case(
            (incident.c.active_alert_cnt > 0, incident.c.active_alert_cnt - 1), else_=0
        )
    return (
        update(incident)
        .where(incident.c.incident_id == bindparam("v_incident_id"))
        .values(values)
        .returning(incident.c.account_id, incident.c.active_alert_cnt, incident.c.progress,
                   incident.c.channel_id)
    )


def count_event(conn: Connection, incident_id: str, *, raised_to: str | None,
                recovered: bool, now_s: int) -> Any:
    """Count one more event on the incident (raising its severity, one active alert fewer
    when `recovered`); (account_id, active_alert_cnt, progress, channel_id) after it, or
    None. On PostgreSQL it locks the incident row."""
    return conn.execute(_count_statement(raised_to, recovered),
                        {"v_now": now_s, "v_incident_id": incident_id}).first()


def drop_active_alert(conn: Connection, incident_id: str, *, now_s: int) -> None:
    conn.execute(
        update(incident)
        .where(incident.c.incident_id == incident_id, incident.c.active_alert_cnt > 0)
        .values(active_alert_cnt=incident.c.active_alert_cnt - 1, updated_at=now_s)
    )


def last_trigger_time(conn: Connection, incident_id: str) -> int | None:
    """When the incident's alerts last had a triggering (non-Ok) event."""
    stmt = (
        select(func.max(alert_event.c.event_time))
        .select_from(alert_event.join(alert, alert.c.alert_id == alert_event.c.alert_id))
        .where(alert.c.incident_id == incident_id, alert_event.c.event_status != OK)
    )
    value = conn.execute(stmt).scalar_one_or_none()
    return None if value is None else int(value)


# --- what became of the events an integration received (its console page) ---------------

_INSERT_OUTCOME = intake_outcome.insert()
_PRUNE_OUTCOMES = delete(intake_outcome).where(
    intake_outcome.c.integration_id == bindparam("integration_id"),
    intake_outcome.c.id.not_in(
        select(intake_outcome.c.id)
        .where(intake_outcome.c.integration_id == bindparam("integration_id"))
        .order_by(intake_outcome.c.id.desc())
        .limit(bindparam("keep"))
        .scalar_subquery()))


def insert_outcome(conn: Connection, values: dict[str, Any]) -> None:
    conn.execute(_INSERT_OUTCOME, values)


def prune_outcomes(conn: Connection, integration_id: int, keep: int) -> None:
    """All but the newest `keep` outcomes of the integration go."""
    conn.execute(_PRUNE_OUTCOMES, {"integration_id": integration_id, "keep": keep})


def recent_outcomes(conn: Connection, account_id: int, integration_id: int,
                    limit: int) -> list[Any]:
    return list(conn.execute(
        select(intake_outcome)
        .where(intake_outcome.c.account_id == account_id,
               intake_outcome.c.integration_id == integration_id)
        .order_by(intake_outcome.c.id.desc())
        .limit(limit)))
