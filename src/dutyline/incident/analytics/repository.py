"""Every analytics query: aggregates over an account's incidents (and alerts) of a window,
grouped in the database (GROUP BY), never by loading incidents.

Each query is scoped by `visibility.Scope` like every incident read (private channels the
caller cannot see are left out). Local-time buckets are integer arithmetic on
`start_time + offset` (kit/localtime), the same SQL on SQLite and PostgreSQL. Flags that only
the event stream knows (escalated, reassigned, closed by the auto-resolve timeout) come from one
grouped subquery over `incident_event`. Display names (channels, teams, members) are read with
plain read-only selects, as incident/query/repository.py does for incident records."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Select,
    Text,
    and_,
    case,
    cast,
    distinct,
    false,
    func,
    literal_column,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Row

from dutyline.db.like import any_contains
from dutyline.db.tables import incident_insight as flag_where
from dutyline.db.tables.channel import channel
from dutyline.db.tables.incident import alert, incident, incident_event
from dutyline.db.tables.notify import notify_delivery
from dutyline.incident import visibility
from dutyline.incident.analytics.schemas import Filter, Grid
from dutyline.incident.repository import responders_include
from dutyline.incident.visibility import Scope
from dutyline.kit import localtime
from dutyline.kit.vocabulary import CLOSED

ASSIGNED, RESOLVED, REOPENED, ACKED = "assigned", "resolved", "reopened", "acked"


def _int(value: int) -> ColumnElement[int]:
    """An integer constant written into the SQL: the same expression then appears in SELECT
    and GROUP BY (PostgreSQL tells bound parameters apart), and it is never user text."""
    return literal_column(str(int(value)), BigInteger)


def json_text(dialect: str, column: Any, *path: str) -> ColumnElement[Any]:
    """The value at `path` of a JSON document stored as text (text on PostgreSQL, the JSON
    scalar on SQLite); NULL where the path is absent."""
    if dialect == "postgresql":
        return func.jsonb_extract_path_text(cast(column, JSONB), *path)
    return func.json_extract(column, "$." + ".".join('"' + p.replace('"', "") + '"'
                                                     for p in path))


# --- local time as SQL -------------------------------------------------------------------

def local_time(column: Any, grid: Grid) -> ColumnElement[int]:
    """`column` (Unix seconds) as local seconds of the grid's zone."""
    (_, first), *changes = grid.offsets
    if not changes:
        return column + _int(first)  # type: ignore[no-any-return]
    whens = []
    previous = first
    for at, off in changes:
        whens.append((column < _int(at), _int(previous)))
        previous = off
    return column + case(*whens, else_=_int(previous))  # type: ignore[no-any-return]


def bucket_of(local: ColumnElement[int], grid: Grid) -> ColumnElement[int]:
    day = local // _int(localtime.DAY_S)
    if grid.unit == "day":
        return day
    if grid.unit == "week":
        return (day + _int(3)) // _int(7)
    if grid.unit == "month":
        starts = list(grid.month_starts)
        whens = [(local < _int(nxt), _int(cur)) for cur, nxt in pairwise(starts)]
        if not whens:
            return _int(starts[0])
        return case(*whens, else_=_int(starts[-1]))
    return _int(0)


def hours_of(local: ColumnElement[int], grid: Grid) -> ColumnElement[str]:
    if not grid.split_hours:
        return literal_column("''")
    hour = (local % _int(localtime.DAY_S)) // _int(3600)
    weekday = (local // _int(localtime.DAY_S) + _int(3)) % _int(7)
    return case(
        (or_(hour >= _int(localtime.SLEEP_FROM_H), hour < _int(localtime.SLEEP_TO_H)),
         literal_column(f"'{localtime.SLEEP}'")),
        (and_(weekday < _int(5), hour >= _int(localtime.WORK_FROM_H),
              hour < _int(localtime.WORK_TO_H)), literal_column(f"'{localtime.WORK}'")),
        else_=literal_column(f"'{localtime.OFF}'"),
    )


# --- the incidents of a filter ----------------------------------------------------------

def _filtered(scope: Scope, f: Filter, severity: ColumnElement[Any], channel_id: ColumnElement[Any],
              incident_id: ColumnElement[Any]) -> list[ColumnElement[bool]]:
    """A filter's severities, channels, teams (their channels) and incidents, on the columns
    of incidents or of alerts alike."""
    conds: list[ColumnElement[bool]] = []
    if f.severities:
        conds.append(severity.in_(f.severities))
    if f.channel_ids:
        conds.append(channel_id.in_(f.channel_ids))
    if f.team_ids:
        conds.append(channel_id.in_(
            select(channel.c.channel_id).where(channel.c.account_id == scope.account_id,
                                               channel.c.team_id.in_(f.team_ids))))
    if f.incident_ids:
        conds.append(incident_id.in_(f.incident_ids))
    return conds


def _conditions(dialect: str, scope: Scope, f: Filter) -> list[ColumnElement[bool]]:
    c = incident.c
    conds: list[ColumnElement[bool]] = [
        *visibility.incidents(scope), c.start_time >= f.start_time, c.start_time <= f.end_time,
    ]
    conds += _filtered(scope, f, c.incident_severity, c.channel_id, c.incident_id)
    if f.responder_ids:
        conds.append(responders_include(f.responder_ids))
    if f.query:
        conds.append(any_contains(f.query, c.title, c.description))
    for key, value in f.labels.items():
        conds.append(json_text(dialect, c.labels, key) == value)
    for key, value in f.fields.items():
        conds.append(json_text(dialect, c.fields, key) == value)
    acked = c.ack_time > 0
    if f.seconds_to_ack_from is not None:
        conds += [acked, c.ack_time - c.start_time >= f.seconds_to_ack_from]
    if f.seconds_to_ack_to is not None:
        conds += [acked, c.ack_time - c.start_time < f.seconds_to_ack_to]
    closed = c.progress == CLOSED
    if f.seconds_to_close_from is not None:
        conds += [closed, c.close_time - c.start_time >= f.seconds_to_close_from]
    if f.seconds_to_close_to is not None:
        conds += [closed, c.close_time - c.start_time < f.seconds_to_close_to]
    return conds


def _flags(account_id: int, since: int) -> Any:
    """Per incident, what its event stream says: escalated by a person or by the escalation
    engine (person 0: a timeout), reassigned, and whether its latest close was the channel's
    auto-resolve timeout (a timeout close after the last reopen). Each part reads one partial
    index of db/tables/incident_insight.py (index only: no event payload is read)."""
    ev = incident_event.c
    zero = _int(0)

    def part(where: ColumnElement[bool], manual: Any = zero, system: Any = zero,
             reassigned: Any = zero, reopen: Any = zero, timeout: Any = zero) -> Select[Any]:
        return select(ev.incident_id.label("incident_id"), manual.label("manual_esc"),
                      system.label("timeout_esc"), reassigned.label("reassigned"),
                      reopen.label("last_reopen"), timeout.label("last_timeout_close")) \
            .where(ev.account_id == account_id, ev.created_at >= since, where)

    marks = union_all(
        part(flag_where.ESCALATION, manual=case((ev.person_id != 0, 1), else_=0),
             system=case((ev.person_id == 0, 1), else_=0)),
        part(flag_where.REASSIGNMENT, reassigned=_int(1)),
        part(flag_where.REOPEN, reopen=ev.id),
        part(flag_where.TIMEOUT_CLOSE, timeout=ev.id),
    ).subquery("marks")
    m = marks.c
    return (
        select(m.incident_id, func.max(m.manual_esc).label("manual_esc"),
               func.max(m.timeout_esc).label("timeout_esc"),
               func.max(m.reassigned).label("reassigned"),
               func.max(m.last_reopen).label("last_reopen"),
               func.max(m.last_timeout_close).label("last_timeout_close"))
        .group_by(m.incident_id)
        .subquery("flags")
    )


def _paged(account_id: int, since: int, *, per_person: bool) -> Any:
    """Per incident (and person), how often the people were paged: `notifications` counts
    every delivery to a person (one per channel), `interruptions` the distinct moments a
    person was paged (the channels of one escalation step reach them at once: one
    interruption). Group targets (chats, webhooks, bare e-mail addresses) page nobody."""
    d = notify_delivery.c
    each = (
        select(d.incident_id, d.person_id, func.count().label("notifications"),
               func.count(distinct(d.created_at)).label("interruptions"))
        .where(d.account_id == account_id, d.person_id != 0, d.created_at >= since)
        .group_by(d.incident_id, d.person_id)
    )
    if per_person:
        return each.subquery("paged")
    e = each.subquery("paged_each")
    return (
        select(e.c.incident_id, func.sum(e.c.notifications).label("notifications"),
               func.sum(e.c.interruptions).label("interruptions"))
        .group_by(e.c.incident_id)
        .subquery("paged")
    )


def _sum_if(condition: ColumnElement[bool], value: Any = 1) -> ColumnElement[int]:
    return func.coalesce(func.sum(case((condition, value), else_=0)), 0)


def totals_sync(conn: Connection, scope: Scope, f: Filter, grid: Grid,
                by: str) -> list[dict[str, Any]]:
    """Sums per (bucket, hours, key) where key is 0 (account), the channel or its team."""
    dialect = conn.dialect.name
    c = incident.c
    flags = _flags(scope.account_id, f.start_time)
    paged = _paged(scope.account_id, f.start_time, per_person=False)
    local = local_time(c.start_time, grid)
    source: Any = incident.outerjoin(flags, flags.c.incident_id == c.incident_id) \
        .outerjoin(paged, paged.c.incident_id == c.incident_id)
    if by == "team":
        source = source.outerjoin(channel, and_(channel.c.channel_id == c.channel_id,
                                                channel.c.account_id == scope.account_id))
        key: Any = func.coalesce(channel.c.team_id, 0)
    elif by == "channel":
        key = c.channel_id
    else:
        key = _int(0)
    closed = c.progress == CLOSED
    timeout_close = and_(func.coalesce(flags.c.last_timeout_close, 0) >
                         func.coalesce(flags.c.last_reopen, 0))
    rows = (
        select(
            bucket_of(local, grid).label("bucket"), hours_of(local, grid).label("hours"),
            key.label("key"),
            c.start_time, c.ack_time, c.close_time, c.progress, c.closer_id, c.alert_cnt,
            c.alert_event_cnt,
            func.coalesce(flags.c.manual_esc, 0).label("manual_esc"),
            func.coalesce(flags.c.timeout_esc, 0).label("timeout_esc"),
            func.coalesce(flags.c.reassigned, 0).label("reassigned"),
            case((and_(closed, c.closer_id == 0, timeout_close), 1), else_=0)
            .label("timeout_closed"),
            func.coalesce(paged.c.notifications, 0).label("notifications"),
            func.coalesce(paged.c.interruptions, 0).label("interruptions"),
        )
        .select_from(source)
        .where(*_conditions(dialect, scope, f))
        .subquery("rows")
    )
    r = rows.c
    acked = r.ack_time > 0
    is_closed = r.progress == CLOSED
    stmt = (
        select(
            r.bucket, r.hours, r.key,
            func.count().label("incidents"),
            _sum_if(acked).label("acknowledged"),
            _sum_if(is_closed).label("closed"),
            _sum_if(and_(is_closed, r.closer_id != 0)).label("manually_closed"),
            func.coalesce(func.sum(r.timeout_closed), 0).label("timeout_closed"),
            _sum_if(or_(r.manual_esc == 1, r.timeout_esc == 1)).label("escalated"),
            func.coalesce(func.sum(r.manual_esc), 0).label("manually_escalated"),
            func.coalesce(func.sum(r.timeout_esc), 0).label("timeout_escalated"),
            func.coalesce(func.sum(r.reassigned), 0).label("reassigned"),
            _sum_if(acked, r.ack_time - r.start_time).label("seconds_to_ack"),
            _sum_if(is_closed, r.close_time - r.start_time).label("seconds_to_close"),
            _sum_if(and_(is_closed, acked), r.close_time - r.ack_time).label("engaged_seconds"),
            func.coalesce(func.sum(r.alert_cnt), 0).label("alerts"),
            func.coalesce(func.sum(r.alert_event_cnt), 0).label("alert_events"),
            _sum_if(r.alert_cnt > 0).label("alerted_incidents"),
            func.coalesce(func.sum(r.notifications), 0).label("notifications"),
            func.coalesce(func.sum(r.interruptions), 0).label("interruptions"),
        )
        .group_by(r.bucket, r.hours, r.key)
        .order_by(r.bucket, r.hours, r.key)
    )
    return [dict(r._mapping) for r in conn.execute(stmt)]


def _responders(dialect: str) -> tuple[Any, ColumnElement[int], ColumnElement[int],
                                       ColumnElement[int]]:
    """The responders array of each incident as rows: (source, person_id, assigned_at,
    acknowledged_at)."""
    if dialect == "postgresql":
        each: Any = func.jsonb_array_elements(cast(incident.c.responders, JSONB)) \
            .table_valued("value").alias("r")

        def field(name: str) -> ColumnElement[int]:
            return cast(each.c.value.op("->>")(literal_column(f"'{name}'")), BigInteger)
    else:
        each = func.json_each(incident.c.responders).table_valued("value").alias("r")

        def field(name: str) -> ColumnElement[int]:
            return cast(func.json_extract(each.c.value, f"$.{name}"), BigInteger)
    return each, field("person_id"), field("assigned_at"), field("acknowledged_at")


def responder_totals_sync(conn: Connection, scope: Scope, f: Filter,
                          grid: Grid) -> list[dict[str, Any]]:
    """Sums per (bucket, hours, responder): the incidents each person responded to."""
    dialect = conn.dialect.name
    c = incident.c
    each, person_id, assigned_at, acked_at = _responders(dialect)
    flags = _flags(scope.account_id, f.start_time)
    paged = _paged(scope.account_id, f.start_time, per_person=True)
    local = local_time(c.start_time, grid)
    conds = _conditions(dialect, scope, f)
    if f.responder_ids:
        conds.append(person_id.in_(f.responder_ids))
    rows = (
        select(
            bucket_of(local, grid).label("bucket"), hours_of(local, grid).label("hours"),
            person_id.label("key"), assigned_at.label("assigned_at"),
            func.coalesce(acked_at, 0).label("acked_at"), c.progress, c.close_time,
            func.coalesce(flags.c.manual_esc, 0).label("manual_esc"),
            func.coalesce(flags.c.timeout_esc, 0).label("timeout_esc"),
            func.coalesce(flags.c.reassigned, 0).label("reassigned"),
            func.coalesce(paged.c.notifications, 0).label("notifications"),
            func.coalesce(paged.c.interruptions, 0).label("interruptions"),
        )
        .select_from(incident.join(each, true())
                     .outerjoin(flags, flags.c.incident_id == c.incident_id)
                     .outerjoin(paged, and_(paged.c.incident_id == c.incident_id,
                                            paged.c.person_id == person_id)))
        .where(*conds)
        .subquery("rows")
    )
    r = rows.c
    acked = r.acked_at > 0
    stmt = (
        select(
            r.bucket, r.hours, r.key,
            func.count().label("incidents"),
            _sum_if(acked).label("acknowledged"),
            _sum_if(or_(r.manual_esc == 1, r.timeout_esc == 1)).label("escalated"),
            func.coalesce(func.sum(r.manual_esc), 0).label("manually_escalated"),
            func.coalesce(func.sum(r.timeout_esc), 0).label("timeout_escalated"),
            func.coalesce(func.sum(r.reassigned), 0).label("reassigned"),
            _sum_if(acked, r.acked_at - r.assigned_at).label("seconds_to_ack"),
            _sum_if(and_(acked, r.progress == CLOSED), r.close_time - r.acked_at)
            .label("engaged_seconds"),
            func.coalesce(func.sum(r.notifications), 0).label("notifications"),
            func.coalesce(func.sum(r.interruptions), 0).label("interruptions"),
        )
        .group_by(r.bucket, r.hours, r.key)
        .order_by(r.bucket, r.hours, r.key)
    )
    return [dict(r._mapping) for r in conn.execute(stmt)]


# --- incident rows -----------------------------------------------------------------------

def _page_select(dialect: str, scope: Scope, f: Filter) -> Select[Any]:
    c = incident.c
    return (
        select(
            c.incident_id, c.title, c.description, c.channel_id, c.progress,
            c.incident_severity, c.start_time, c.ack_time, c.close_time, c.closer_id,
            c.creator_id, c.labels, c.fields, c.assigned_to, c.responders,
            func.coalesce(channel.c.channel_name, "").label("channel_name"),
            func.coalesce(channel.c.team_id, 0).label("team_id"),
        )
        .select_from(
            incident.outerjoin(channel, and_(channel.c.channel_id == c.channel_id,
                                             channel.c.account_id == scope.account_id)))
        .where(*_conditions(dialect, scope, f))
    )


def incident_count_sync(conn: Connection, scope: Scope, f: Filter) -> int:
    stmt = select(func.count()).select_from(incident) \
        .where(*_conditions(conn.dialect.name, scope, f))
    return int(conn.execute(stmt).scalar_one())


def incident_page_sync(conn: Connection, scope: Scope, f: Filter, *, asc: bool,
                       offset: int, limit: int) -> list[Row[Any]]:
    c = incident.c
    order = (c.start_time.asc(), c.incident_id.asc()) if asc else \
        (c.start_time.desc(), c.incident_id.desc())
    stmt = _page_select(conn.dialect.name, scope, f).order_by(*order) \
        .offset(offset).limit(limit)
    return list(conn.execute(stmt).all())


def timeout_closed_ids_sync(conn: Connection, incident_ids: list[str]) -> set[str]:
    """Those of the incidents whose latest close was the auto-resolve timeout (a timeout close
    after their last reopen), from their own events (a page: at most 100 incidents)."""
    if not incident_ids:
        return set()
    ev = incident_event.c
    stmt = (
        select(ev.incident_id,
               func.max(case((flag_where.REOPEN, ev.id), else_=0)).label("reopen"),
               func.max(case((flag_where.TIMEOUT_CLOSE, ev.id), else_=0)).label("timeout"))
        .where(ev.incident_id.in_(incident_ids), ev.kind.in_([REOPENED, RESOLVED]))
        .group_by(ev.incident_id)
    )
    return {r.incident_id for r in conn.execute(stmt) if r.timeout > r.reopen}


def event_counts_sync(conn: Connection, incident_ids: list[str]) -> list[Row[Any]]:
    """(incident_id, kind, assignment type, person_id = 0, count) of the incidents' events
    that the per-incident figures count."""
    if not incident_ids:
        return []
    ev = incident_event.c
    kind = json_text(conn.dialect.name, ev.payload, "assignment", "type")
    rows = (
        select(ev.incident_id, ev.kind, func.coalesce(kind, "").label("type"),
               case((ev.person_id == 0, 1), else_=0).label("system"))
        .where(ev.incident_id.in_(incident_ids), ev.kind.in_([ASSIGNED, ACKED]))
        .subquery("rows")
    )
    r = rows.c
    stmt = (select(r.incident_id, r.kind, r.type, r.system, func.count().label("n"))
            .group_by(r.incident_id, r.kind, r.type, r.system))
    return list(conn.execute(stmt).all())


# --- alerts ------------------------------------------------------------------------------

def alert_label_totals_sync(conn: Connection, scope: Scope, f: Filter, grid: Grid, *,
                            label: str, k: int, by_events: bool,
                            asc: bool) -> list[Row[Any]]:
    """The k label values (of `label`) with the most (or fewest) alerts, or alert events,
    among the alerts that started in the window."""
    dialect = conn.dialect.name
    a = alert.c
    value = json_text(dialect, a.labels, label)
    conds: list[ColumnElement[bool]] = [
        *visibility.alerts(scope), a.start_time >= f.start_time, a.start_time <= f.end_time,
        value.is_not(None), a.inhibited == false(),
    ]
    conds += _filtered(scope, f, a.alert_severity, a.channel_id, a.incident_id)
    if f.query:
        conds.append(any_contains(f.query, a.title, a.description))
    for key, wanted in f.labels.items():
        conds.append(json_text(dialect, a.labels, key) == wanted)
    local = local_time(a.start_time, grid)
    rows = (
        select(cast(value, Text).label("label"), hours_of(local, grid).label("hours"),
               a.event_cnt)
        .where(*conds)
        .subquery("rows")
    )
    r = rows.c
    alerts = func.count().label("alerts")
    events = func.coalesce(func.sum(r.event_cnt), 0).label("alert_events")
    measure = events if by_events else alerts
    order = [measure.asc() if asc else measure.desc(), r.label.asc()]
    stmt = (select(r.label, r.hours, alerts, events).group_by(r.label, r.hours)
            .order_by(*order).limit(k))
    return list(conn.execute(stmt).all())


# --- deliveries (the on-call notification report) ----------------------------------------

REPORTED_KINDS = ("sms", "voice", "email")


def delivery_totals_sync(conn: Connection, scope: Scope, *, start_time: int,
                         end_time: int, grid: Grid,
                         channel_ids: tuple[int, ...]) -> list[Row[Any]]:
    """(bucket, kind, n): the deliveries by SMS, voice call and e-mail made in the window,
    per local-time bucket of when they were made; those of incidents in channels the scope
    cannot see are left out."""
    d = notify_delivery.c
    bucket = bucket_of(local_time(d.created_at, grid), grid).label("bucket")
    conds: list[ColumnElement[bool]] = [
        d.account_id == scope.account_id, d.created_at >= start_time, d.created_at < end_time,
        d.channel.in_(REPORTED_KINDS), *visibility.channel_visible(d.channel_id, scope),
    ]
    if channel_ids:
        conds.append(d.channel_id.in_(channel_ids))
    # Grouped over a subquery: with a one-month window the bucket is a constant, which
    # SQLite would read as a column position in GROUP BY.
    r = select(bucket, d.channel.label("kind")).where(*conds).subquery("rows").c
    stmt = select(r.bucket, r.kind, func.count().label("n")).group_by(r.bucket, r.kind)
    return list(conn.execute(stmt).all())
