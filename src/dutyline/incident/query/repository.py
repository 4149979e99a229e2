"""Every incident read. Each query of incidents or alerts is scoped by `visibility.Scope`: the
account, removed incidents hidden, private channels the caller cannot see hidden (a
cross-account, removed or hidden id reads as not found).

The display names an incident record carries (account, channel, integration, member) are read
here with plain read-only selects rather than through the other domains' services: a page of
incidents is then a fixed handful of round trips whatever its size."""

from __future__ import annotations

import contextlib
import functools
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    and_,
    bindparam,
    func,
    literal_column,
    null,
    or_,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.engine import Row

from dutyline.db.paging import ordered
from dutyline.db.prepared import Prepared, PreparedIn
from dutyline.db.tables.channel import channel, integration
from dutyline.db.tables.incident import (
    alert,
    alert_event,
    incident,
    incident_feed,
)
from dutyline.db.tables.platform import account, member
from dutyline.incident import visibility
from dutyline.incident.query.title_search import title_contains
from dutyline.incident.repository import responders_include
from dutyline.incident.visibility import Scope
from dutyline.kit.vocabulary import CLOSED, OPEN


@dataclass
class ListFilter:
    """The conditions of /incident/list, already validated by the service."""

    start_time: int
    end_time: int
    now_s: int
    progress: list[str] = field(default_factory=list)
    severities: list[str] = field(default_factory=list)
    channel_ids: list[int] = field(default_factory=list)
    channel_scope: Any = None  # a subquery of channel ids (teams, "my channels"), or None
    creator_ids: list[int] = field(default_factory=list)
    closer_ids: list[int] = field(default_factory=list)
    responder_ids: list[int] = field(default_factory=list)
    incident_ids: list[str] = field(default_factory=list)
    nums: list[str] = field(default_factory=list)
    query: str = ""
    is_snoozed: bool = False
    ever_muted: bool = False


def _conditions(scope: Scope, f: ListFilter) -> list[ColumnElement[bool]]:
    c = incident.c
    conds: list[ColumnElement[bool]] = [
        *visibility.incidents(scope),
        c.start_time >= f.start_time,
        c.start_time <= f.end_time,  # a window in seconds includes its end
    ]
    if f.progress:
        conds.append(c.progress.in_(f.progress))
    if f.severities:
        conds.append(c.incident_severity.in_(f.severities))
    if f.channel_ids:
        conds.append(c.channel_id.in_(f.channel_ids))
    if f.channel_scope is not None:
        conds.append(c.channel_id.in_(f.channel_scope))
    if f.creator_ids:
        conds.append(c.creator_id.in_(f.creator_ids))
    if f.closer_ids:
        conds.append(and_(c.closer_id.in_(f.closer_ids), c.progress == CLOSED))
    if f.responder_ids:
        conds.append(responders_include(f.responder_ids))
    if f.incident_ids:
        conds.append(c.incident_id.in_(f.incident_ids))
    if f.nums:
        conds.append(c.num.in_(f.nums))
    if f.query:
        conds.append(_query_condition(f.query))
    if f.is_snoozed:
        conds.append(c.snoozed_before > f.now_s)
    if f.ever_muted:
        conds.append(c.ever_muted.is_(True))
    return conds


def team_channel_scope(account_id: int, team_ids: list[int]) -> Any:
    return select(channel.c.channel_id).where(
        channel.c.account_id == account_id, channel.c.team_id.in_(team_ids),
        channel.c.deleted_at == 0,
    )


def creator_channel_scope(account_id: int, person_id: int, within: Any = None) -> Any:
    """Channels the person created ("my channels"), optionally narrowed to another scope."""
    stmt = select(channel.c.channel_id).where(
        channel.c.account_id == account_id, channel.c.creator_id == person_id,
        channel.c.deleted_at == 0,
    )
    return stmt if within is None else stmt.where(channel.c.channel_id.in_(within))


def window_sync(
    conn: Connection, scope: Scope, f: ListFilter, *, asc: bool, offset: int,
    limit: int, after: tuple[int, str] | None = None, count: bool = True,
) -> tuple[int, Sequence[Any]]:
    """The total (0 unless `count`) and one page of a list, both planned for the actual
    title query: one statement, the total a column of every row of the page (an uncorrelated
    subquery, counted once) and each row with the names its record shows (`NAMED_AT`), rows
    read by position. Only an empty page past the list's end counts again on its own."""
    with custom_plans(conn, f.query):
        rows = page_sync(conn, scope, f, asc=asc, offset=offset, limit=limit, after=after,
                         total=count)
    if not count:
        return 0, rows
    if not rows:
        return (count_of_sync(conn, scope, f) if offset or after is not None else 0), rows
    return int(rows[0][TOTAL_AT]), rows


def count_of_sync(conn: Connection, scope: Scope, f: ListFilter) -> int:
    stmt = select(func.count()).select_from(incident).where(*_conditions(scope, f))
    return int(conn.execute(stmt).scalar_one())


def progress_counts_sync(conn: Connection, scope: Scope, f: ListFilter) -> dict[str, int]:
    """The list's incidents counted by progress (a progress with none is left out)."""
    stmt = (select(incident.c.progress, func.count()).where(*_conditions(scope, f))
            .group_by(incident.c.progress))
    with custom_plans(conn, f.query):
        return {progress: int(n) for progress, n in conn.execute(stmt).all()}


def open_counts_by_channel_sync(conn: Connection, scope: Scope,
                                channel_ids: list[int]) -> dict[int, int]:
    """{channel_id: its open incidents (triggered or processing)} of these channels, whenever
    they started (a channel with none is left out)."""
    if not channel_ids:
        return {}
    stmt = (select(incident.c.channel_id, func.count())
            .where(*visibility.incidents(scope), incident.c.channel_id.in_(channel_ids),
                   incident.c.progress.in_(OPEN))
            .group_by(incident.c.channel_id))
    return {int(channel_id): int(n) for channel_id, n in conn.execute(stmt).all()}


# The names an incident record shows, read with the page (a primary-key lookup per row)
# rather than by a statement each: a page's row is the incident's columns in table order
# (`COLUMN_AT`), these five from NAMED_AT on (channel name and status, None for no such
# channel; account name, locale, time zone), then the list's total (TOTAL_AT) when counted.
_NAMES = (
    channel.c.channel_name.label("named_channel_name"),
    channel.c.status.label("named_channel_status"),
    account.c.account_name.label("named_account_name"),
    account.c.locale.label("named_account_locale"),
    account.c.time_zone.label("named_account_time_zone"),
)
_WITH_NAMES = (
    incident.outerjoin(channel, and_(channel.c.channel_id == incident.c.channel_id,
                                     channel.c.account_id == incident.c.account_id))
    .outerjoin(account, account.c.account_id == incident.c.account_id)
)
COLUMN_AT: dict[str, int] = {name: i for i, name in enumerate(incident.c.keys())}
NAMED_AT = len(COLUMN_AT)
TOTAL_AT = NAMED_AT + len(_NAMES)


def page_sync(
    conn: Connection, scope: Scope, f: ListFilter, *, asc: bool, offset: int,
    limit: int, after: tuple[int, str] | None = None, total: bool = False,
) -> Sequence[Any]:
    """One page in (start_time, incident_id) order, with the names (NAMED_AT); `after`
    continues past a cursor; with `total`, the list's total at TOTAL_AT. The usual lists (every
    channel visible, no title search, each id filter of at most one value) run a statement
    prepared once per shape (db/prepared.py); the others are built for their values."""
    shape = _simple_shape(scope, f)
    if shape is not None:
        prepared = _prepared_page(shape, asc, after is not None, total)
        params: dict[str, Any] = {
            "account_id": scope.account_id, "start_time": f.start_time,
            "end_time": f.end_time, "now_s": f.now_s, "offset": offset, "limit": limit}
        for name in shape:
            if name in _ONE_VALUE:
                params[name] = getattr(f, name)[0]
        if after is not None:
            params["after_start"], params["after_id"] = after
        return prepared.rows(conn, params)
    conds = _conditions(scope, f)
    key = tuple_(incident.c.start_time, incident.c.incident_id)
    if after is not None:
        conds.append(key > tuple_(*after) if asc else key < tuple_(*after))
    order = ordered(incident.c.start_time, incident.c.incident_id, asc=asc)
    columns: list[Any] = [incident, *_NAMES]
    if total:
        columns.append(select(func.count()).select_from(incident).where(*_conditions(scope, f))
                       .correlate(None).scalar_subquery().label("list_total"))
    stmt = (select(*columns).select_from(_WITH_NAMES).where(*conds).order_by(*order)
            .offset(offset).limit(limit))
    return conn.execute(stmt).all()


# The id filters a prepared page binds as one value (`column = :name`); a list naming several
# values of one, its title search, a team/creator scope, responders or a caller who does not
# see every channel takes the built statement.
_ONE_VALUE = {
    "progress": incident.c.progress, "severities": incident.c.incident_severity,
    "channel_ids": incident.c.channel_id, "creator_ids": incident.c.creator_id,
    "closer_ids": incident.c.closer_id, "incident_ids": incident.c.incident_id,
    "nums": incident.c.num,
}


def _simple_shape(scope: Scope, f: ListFilter) -> tuple[str, ...] | None:
    if (scope.channel_ids is not None or f.query or f.channel_scope is not None
            or f.responder_ids):
        return None
    shape: list[str] = []
    for name in _ONE_VALUE:
        values = getattr(f, name)
        if len(values) > 1:
            return None
        if values:
            shape.append(name)
    if f.is_snoozed:
        shape.append("is_snoozed")
    if f.ever_muted:
        shape.append("ever_muted")
    return tuple(shape)


@functools.cache
def _prepared_page(shape: tuple[str, ...], asc: bool, after: bool, total: bool) -> Prepared:
    """The page statement of one shape (`_simple_shape`), with bound parameters."""
    c = incident.c
    conds: list[ColumnElement[bool]] = [
        c.account_id == bindparam("account_id"), c.deleted_at == 0,
        c.start_time >= bindparam("start_time"), c.start_time <= bindparam("end_time"),
    ]
    for name in shape:
        if name == "is_snoozed":
            conds.append(c.snoozed_before > bindparam("now_s"))
        elif name == "ever_muted":
            conds.append(c.ever_muted.is_(True))
        else:
            conds.append(_ONE_VALUE[name] == bindparam(name))
            if name == "closer_ids":
                conds.append(c.progress == CLOSED)
    page_conds = list(conds)
    if after:
        key = tuple_(c.start_time, c.incident_id)
        bound = tuple_(bindparam("after_start"), bindparam("after_id"))
        page_conds.append(key > bound if asc else key < bound)
    columns: list[Any] = [incident, *_NAMES]
    if total:
        columns.append(select(func.count()).select_from(incident).where(*conds)
                       .correlate(None).scalar_subquery().label("list_total"))
    stmt = (select(*columns).select_from(_WITH_NAMES).where(*page_conds)
            .order_by(*ordered(c.start_time, c.incident_id, asc=asc))
            .offset(bindparam("offset", type_=Integer))
            .limit(bindparam("limit", type_=Integer)))
    return Prepared(stmt)


_HEX_ID = re.compile(r"[0-9a-fA-F]{24}")
_NUM = re.compile(r"[0-9A-Za-z]{6}")


def _query_condition(query: str) -> ColumnElement[bool]:
    """`query` matches the title, or names the incident by its 24-hex id or its 6-character
    num (as clients of the live service search). Id and num are exact, case-insensitive."""
    title = title_contains(query)
    if _HEX_ID.fullmatch(query):
        return or_(title, incident.c.incident_id == query.lower())
    if _NUM.fullmatch(query):
        return or_(title, incident.c.num == query.upper())
    return title


def find_sync(conn: Connection, scope: Scope, incident_id: str) -> Row[Any] | None:
    stmt = select(incident).where(incident.c.incident_id == incident_id,
                                  *visibility.incidents(scope))
    return conn.execute(stmt).first()


def find_many_sync(conn: Connection, scope: Scope, ids: list[str]) -> list[Row[Any]]:
    if not ids:
        return []
    stmt = select(incident).where(incident.c.incident_id.in_(ids), *_by_key(scope))
    rows = list(conn.execute(stmt).all())
    return sorted(rows, key=lambda r: (r.start_time, r.incident_id), reverse=True)


def _by_key(scope: Scope) -> list[ColumnElement[bool]]:
    """visibility.incidents(scope) for a read of a few ids: the account written `account_id
    + 0`, an expression no index serves, so that SQLite looks the ids up by primary key. Given
    `account_id = ?` it walks ix_incident_list (account_id, deleted_at, ...) through the whole
    account instead: 5 ids took 136 ms among 100,000 incidents (bench/past_incidents.py)."""
    return [(incident.c.account_id + 0) == scope.account_id, incident.c.deleted_at == 0,
            *visibility.channel_visible(incident.c.channel_id, scope)]


_ACCOUNT_NAMES = select(account.c.account_name, account.c.locale, account.c.time_zone).where(
    account.c.account_id == bindparam("account_id"))


def account_row_sync(conn: Connection, account_id: int) -> Any:
    return conn.execute(_ACCOUNT_NAMES, {"account_id": account_id}).first()


def feed_page_sync(
    conn: Connection, account_id: int, incident_id: str, *, types: list[str], asc: bool,
    offset: int, limit: int,
) -> list[Row[Any]]:
    conds = [incident_feed.c.incident_id == incident_id,
             incident_feed.c.account_id == account_id]
    if types:
        conds.append(incident_feed.c.type.in_(types))
    order = incident_feed.c.id.asc() if asc else incident_feed.c.id.desc()
    stmt = (
        select(incident_feed, member.c.member_name)
        .select_from(incident_feed)
        .outerjoin(member, member.c.member_id == incident_feed.c.creator_id)
        .where(*conds).order_by(order).offset(offset).limit(limit)
    )
    return list(conn.execute(stmt).all())


def _alert_conditions(scope: Scope, incident_id: str,
                      is_active: bool | None) -> list[ColumnElement[bool]]:
    conds = [alert.c.incident_id == incident_id, *visibility.alerts(scope)]
    if is_active is not None:
        conds.append(alert.c.end_time == 0 if is_active else alert.c.end_time != 0)
    return conds


def alert_count_sync(conn: Connection, scope: Scope, incident_id: str,
                     is_active: bool | None) -> int:
    stmt = select(func.count()).select_from(alert).where(
        *_alert_conditions(scope, incident_id, is_active))
    return int(conn.execute(stmt).scalar_one())


def alert_page_sync(
    conn: Connection, scope: Scope, incident_id: str, is_active: bool | None, *,
    offset: int, limit: int,
) -> list[Row[Any]]:
    stmt = (
        select(alert, integration.c.integration_name, integration.c.integration_type,
               channel.c.channel_name, channel.c.status.label("channel_status"))
        .select_from(alert)
        .outerjoin(integration, integration.c.integration_id == alert.c.integration_id)
        .outerjoin(channel, channel.c.channel_id == alert.c.channel_id)
        .where(*_alert_conditions(scope, incident_id, is_active))
        .order_by(*ordered(alert.c.start_time, alert.c.alert_id, asc=False))
        .offset(offset).limit(limit)
    )
    return list(conn.execute(stmt).all())


def alert_events_sync(conn: Connection, alert_ids: list[str]) -> dict[str, list[Row[Any]]]:
    if not alert_ids:
        return {}
    stmt = (
        select(alert_event).where(alert_event.c.alert_id.in_(alert_ids))
        .order_by(*ordered(alert_event.c.event_time, alert_event.c.event_id, asc=False))
    )
    found: dict[str, list[Row[Any]]] = defaultdict(list)
    for r in conn.execute(stmt).all():
        # A bounded history per alert: the newest 100 events are what a console shows.
        if len(found[r.alert_id]) < 100:
            found[r.alert_id].append(r)
    return found


# An incident record's `frequency` (reference IncidentInfo: "frequency bucket for recurrence
# analysis: frequent or rare"): `frequent` when its channel opened at least RECURRENCE_FREQUENT
# other incidents with the same title in the RECURRENCE_WINDOW_S before it started.
RECURRENCE_WINDOW_S = 7 * 86_400
RECURRENCE_FREQUENT = 3


def _recurrence_statement() -> Any:
    """One statement of a fixed shape (compiled once, cached): for each incident of the
    page, the start of the RECURRENCE_FREQUENT-th most recent earlier incident of its channel
    with its title in the window, NULL when there are fewer. A correlated read of a short,
    backwards range of ix_incident_recurrence (account_id, channel_id, title, start_time)
    that stops at the threshold, whatever the channel's history."""
    page = incident.alias("page")
    earlier = incident.alias("earlier")
    third = (
        select(earlier.c.start_time)
        .where(earlier.c.account_id == page.c.account_id,
               earlier.c.channel_id == page.c.channel_id,
               earlier.c.title == page.c.title,
               earlier.c.start_time <= page.c.start_time,
               earlier.c.start_time >= page.c.start_time - RECURRENCE_WINDOW_S,
               earlier.c.incident_id != page.c.incident_id,
               earlier.c.deleted_at == 0)
        .order_by(earlier.c.start_time.desc())
        .limit(1).offset(RECURRENCE_FREQUENT - 1)
        .correlate(page)
        .scalar_subquery()
    )
    return select(page.c.incident_id).where(
        page.c.incident_id.in_(bindparam("ids", expanding=True)), third.is_not(None))


_RECURRENCE = _recurrence_statement()


def _sources_statement(frequency: bool) -> Any:
    """The integrations with an alert in each incident, as (integration_id,
    integration_type) in first-seen order, and, with `frequency`, `frequent` of the same ids
    in one statement: the integrations' rows (kind 0) then the frequent ids (kind 1, the rest
    NULL). Fixed shapes, compiled once."""
    ids: Any = bindparam("ids", expanding=True)
    origins = (
        select(alert.c.incident_id, alert.c.integration_id, integration.c.integration_type,
               func.min(alert.c.start_time).label("first"), literal_column("0").label("kind"))
        .select_from(alert)
        .outerjoin(integration, integration.c.integration_id == alert.c.integration_id)
        .where(alert.c.incident_id.in_(ids))
        .group_by(alert.c.incident_id, alert.c.integration_id, integration.c.integration_type)
    )
    if not frequency:
        return origins.order_by("first")
    recurring = _RECURRENCE.with_only_columns(
        _RECURRENCE.selected_columns.incident_id, null(), null(), null(),
        literal_column("1"), maintain_column_froms=True)
    both = union_all(origins, recurring).subquery("sources")
    return select(both).order_by(both.c.kind, both.c.first)


_SOURCES = {True: PreparedIn(_sources_statement(True)),
            False: PreparedIn(_sources_statement(False))}


def sources_sync(conn: Connection, incident_ids: list[str], *, frequency: bool = True
                 ) -> tuple[dict[str, list[tuple[int, str]]], set[str]]:
    """({incident_id: [(integration_id, integration_type)] of the integrations with an alert
    in it, in first-seen order}, `frequent` (empty without `frequency`)) of the same
    incidents, in one round trip."""
    found: dict[str, list[tuple[int, str]]] = defaultdict(list)
    recurring: set[str] = set()
    if not incident_ids:
        return found, recurring
    for incident_id, integration_id, integration_type, _, kind in _SOURCES[frequency].rows(
            conn, {"ids": incident_ids}):
        if kind:
            recurring.add(incident_id)
        else:
            found[incident_id].append((integration_id, integration_type or "standard"))
    return found, recurring


# /incident/past/list: the candidates scored in Python are at most this many recent incidents
# of the channel, plus this many of the incident's own group (same grouping key), both read
# through an index (ix_incident_channel_start, ix_incident_channel_group).
PAST_RECENT = 300
PAST_SAME_GROUP = 50


def past_candidates_sync(conn: Connection, scope: Scope, ref: Row[Any]) -> list[Any]:
    """Incidents of `ref`'s channel that started before it (not merged into another), the
    few columns the similarity score reads: a bounded set, never the channel's history."""
    conds = [
        *visibility.incidents(scope),
        incident.c.channel_id == ref.channel_id,
        incident.c.incident_id != ref.incident_id,
        incident.c.start_time <= ref.start_time,
        incident.c.merged_into.is_(None),
    ]
    columns = (incident.c.incident_id, incident.c.title, incident.c.labels,
               incident.c.start_time)
    recent = select(*columns).where(*conds).order_by(
        *ordered(incident.c.start_time, incident.c.incident_id, asc=False)).limit(PAST_RECENT)
    found: dict[str, Any] = {r.incident_id: r for r in conn.execute(recent).all()}
    if ref.equals_md5:
        same_group = select(*columns).where(
            *conds, incident.c.equals_md5 == ref.equals_md5,
        ).order_by(incident.c.start_time.desc()).limit(PAST_SAME_GROUP)
        for r in conn.execute(same_group).all():
            found.setdefault(r.incident_id, r)
    return list(found.values())


# --- title search plans (the condition itself: title_search.py) -----------------------------

@contextlib.contextmanager
def custom_plans(conn: Connection, query: str) -> Iterator[None]:
    """On PostgreSQL, plan the statements run inside for their actual values.

    Statements are prepared, and after five runs PostgreSQL may keep one generic plan, made
    without knowing the pattern. With the trigram index that plan reads every match of the
    window and sorts it for a page (13 ms instead of 0.4 for 'disk' in 100,000 incidents),
    or, for a 1-2 character query that no trigram narrows, scans the whole index. Only the
    actual pattern tells whether walking the window in order or asking the index is
    cheaper. One SET LOCAL per title search (in a transaction of its own when the connection
    reads in autocommit, as a read unit does); nothing for other lists or on SQLite."""
    if not query or conn.dialect.name != "postgresql":
        yield
        return
    autocommit = conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT"
    if autocommit:
        conn.exec_driver_sql("BEGIN")
    try:
        conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
        yield
    finally:
        if autocommit:
            conn.exec_driver_sql("COMMIT")
