"""Every incident read. Each query of incidents or alerts is scoped by `visibility.Scope`: the
account, removed incidents hidden, private channels the caller cannot see hidden (a
cross-account, removed or hidden id reads as not found).

The display names an incident record carries (account, channel, integration, member) are read
here with plain read-only selects rather than through the other domains' services: a page of
incidents is then a fixed handful of round trips whatever its size."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Connection,
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
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal, _TraverseInternalsType

from dutyline.db.like import contains_pattern
from dutyline.db.paging import ordered
from dutyline.db.tables.channel import channel, integration
from dutyline.db.tables.incident import (
    alert,
    alert_event,
    incident,
    incident_feed,
    incident_title_fts,
)
from dutyline.db.tables.platform import account, member
from dutyline.incident import visibility
from dutyline.incident.repository import responders_include
from dutyline.incident.visibility import Scope


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
        c.start_time < f.end_time,
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
        conds.append(and_(c.closer_id.in_(f.closer_ids), c.progress == "Closed"))
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


async def window(
    conn: AsyncConnection, scope: Scope, f: ListFilter, *, asc: bool, offset: int,
    limit: int, after: tuple[int, str] | None = None, count: bool = True,
) -> tuple[int, list[Row[Any]]]:
    """The total (0 unless `count`) and one page of a list, both planned for the actual
    title query: one statement, the total a column of every row of the page (an uncorrelated
    subquery, counted once) and each row with the names its record shows (`named`). Only an
    empty page past the list's end counts again on its own."""
    await plan_for_the_query(conn, f.query)
    total = (select(func.count()).select_from(incident).where(*_conditions(scope, f))
             .correlate(None).scalar_subquery()) if count else None
    rows = await page(conn, scope, f, asc=asc, offset=offset, limit=limit, after=after,
                      total=total)
    if not count:
        return 0, rows
    if not rows:
        return (await count_of(conn, scope, f) if offset or after is not None else 0), rows
    return int(rows[0].list_total), rows


async def count_of(conn: AsyncConnection, scope: Scope, f: ListFilter) -> int:
    stmt = select(func.count()).select_from(incident).where(*_conditions(scope, f))
    return int((await conn.execute(stmt)).scalar_one())


async def progress_counts(conn: AsyncConnection, scope: Scope, f: ListFilter
                          ) -> dict[str, int]:
    """The list's incidents counted by progress (a progress with none is left out)."""
    await plan_for_the_query(conn, f.query)
    stmt = (select(incident.c.progress, func.count()).where(*_conditions(scope, f))
            .group_by(incident.c.progress))
    return {progress: int(n) for progress, n in (await conn.execute(stmt)).all()}


# The names an incident record shows, read with the page (a primary-key lookup per row)
# rather than by a statement each: see `named`.
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


def named(row: Row[Any]) -> bool:
    """Whether `row` carries its channel's and account's names (a row of `page`): then
    `named_channel_name`, `named_channel_status` (None for no such channel),
    `named_account_name`, `named_account_locale` and `named_account_time_zone`."""
    return "named_account_name" in row._fields


async def page(
    conn: AsyncConnection, scope: Scope, f: ListFilter, *, asc: bool, offset: int,
    limit: int, after: tuple[int, str] | None = None, total: Any = None,
) -> list[Row[Any]]:
    """One page in (start_time, incident_id) order, with the names (`named`); `after`
    continues past a cursor; `total`, a scalar subquery, is added as `list_total`."""
    conds = _conditions(scope, f)
    key = tuple_(incident.c.start_time, incident.c.incident_id)
    if after is not None:
        conds.append(key > tuple_(*after) if asc else key < tuple_(*after))
    order = ordered(incident.c.start_time, incident.c.incident_id, asc=asc)
    columns: list[Any] = [incident, *_NAMES]
    if total is not None:
        columns.append(total.label("list_total"))
    stmt = (select(*columns).select_from(_WITH_NAMES).where(*conds).order_by(*order)
            .offset(offset).limit(limit))
    return list((await conn.execute(stmt)).all())


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


async def find(conn: AsyncConnection, scope: Scope, incident_id: str) -> Row[Any] | None:
    stmt = select(incident).where(incident.c.incident_id == incident_id,
                                  *visibility.incidents(scope))
    return (await conn.execute(stmt)).first()


async def find_many(conn: AsyncConnection, scope: Scope, ids: list[str]) -> list[Row[Any]]:
    if not ids:
        return []
    stmt = select(incident).where(incident.c.incident_id.in_(ids), *_by_key(scope))
    rows = list((await conn.execute(stmt)).all())
    return sorted(rows, key=lambda r: (r.start_time, r.incident_id), reverse=True)


def _by_key(scope: Scope) -> list[ColumnElement[bool]]:
    """visibility.incidents(scope) for a read of a few ids: the account written `account_id
    + 0`, an expression no index serves, so that SQLite looks the ids up by primary key. Given
    `account_id = ?` it walks ix_incident_list (account_id, deleted_at, ...) through the whole
    account instead: 5 ids took 136 ms among 100,000 incidents (bench/past_incidents.py)."""
    return [(incident.c.account_id + 0) == scope.account_id, incident.c.deleted_at == 0,
            *visibility.channel_visible(incident.c.channel_id, scope)]


async def account_row(conn: AsyncConnection, account_id: int) -> Any:
    stmt = select(account.c.account_name, account.c.locale, account.c.time_zone).where(
        account.c.account_id == account_id)
    return (await conn.execute(stmt)).first()


async def integrations_by_incident(
    conn: AsyncConnection, incident_ids: list[str]
) -> dict[str, list[tuple[int, str]]]:
    """(integration_id, integration_type) of every integration with an alert in each
    incident, in first-seen order."""
    if not incident_ids:
        return {}
    stmt = (
        select(alert.c.incident_id, alert.c.integration_id, integration.c.integration_type,
               func.min(alert.c.start_time).label("first"))
        .select_from(alert)
        .outerjoin(integration, integration.c.integration_id == alert.c.integration_id)
        .where(alert.c.incident_id.in_(incident_ids))
        .group_by(alert.c.incident_id, alert.c.integration_id, integration.c.integration_type)
        .order_by("first")
    )
    found: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for r in (await conn.execute(stmt)).all():
        found[r.incident_id].append((r.integration_id, r.integration_type or "standard"))
    return found


async def feed_page(
    conn: AsyncConnection, account_id: int, incident_id: str, *, types: list[str], asc: bool,
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
    return list((await conn.execute(stmt)).all())


def _alert_conditions(scope: Scope, incident_id: str,
                      is_active: bool | None) -> list[ColumnElement[bool]]:
    conds = [alert.c.incident_id == incident_id, *visibility.alerts(scope)]
    if is_active is not None:
        conds.append(alert.c.end_time == 0 if is_active else alert.c.end_time != 0)
    return conds


async def alert_count(conn: AsyncConnection, scope: Scope, incident_id: str,
                      is_active: bool | None) -> int:
    stmt = select(func.count()).select_from(alert).where(
        *_alert_conditions(scope, incident_id, is_active))
    return int((await conn.execute(stmt)).scalar_one())


async def alert_page(
    conn: AsyncConnection, scope: Scope, incident_id: str, is_active: bool | None, *,
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
    return list((await conn.execute(stmt)).all())


async def alert_events(conn: AsyncConnection, alert_ids: list[str]) -> dict[str, list[Row[Any]]]:
    if not alert_ids:
        return {}
    stmt = (
        select(alert_event).where(alert_event.c.alert_id.in_(alert_ids))
        .order_by(*ordered(alert_event.c.event_time, alert_event.c.event_id, asc=False))
    )
    found: dict[str, list[Row[Any]]] = defaultdict(list)
    for r in (await conn.execute(stmt)).all():
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


async def frequent(conn: AsyncConnection, incident_ids: list[str]) -> set[str]:
    """Those of `incident_ids` (already read, so already visible) that are `frequent`."""
    if not incident_ids:
        return set()
    return set((await conn.execute(_RECURRENCE, {"ids": incident_ids})).scalars())


def _sources_statement(frequency: bool) -> Any:
    """`integrations_by_incident` and, with `frequency`, `frequent` of the same ids in one
    statement: the integrations' rows (kind 0) then the frequent ids (kind 1, the rest
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


_SOURCES = {True: _sources_statement(True), False: _sources_statement(False)}


async def sources(conn: AsyncConnection, incident_ids: list[str], *, frequency: bool = True
                  ) -> tuple[dict[str, list[tuple[int, str]]], set[str]]:
    """`integrations_by_incident` and `frequent` (empty without `frequency`) of the same
    incidents, in one round trip."""
    found: dict[str, list[tuple[int, str]]] = defaultdict(list)
    recurring: set[str] = set()
    if not incident_ids:
        return found, recurring
    for r in (await conn.execute(_SOURCES[frequency], {"ids": incident_ids})).all():
        if r.kind:
            recurring.add(r.incident_id)
        else:
            found[r.incident_id].append((r.integration_id, r.integration_type or "standard"))
    return found, recurring


# /incident/past/list: the candidates scored in Python are at most this many recent incidents
# of the channel, plus this many of the incident's own group (same grouping key), both read
# through an index (ix_incident_channel_start, ix_incident_channel_group).
PAST_RECENT = 300
PAST_SAME_GROUP = 50


async def past_candidates(conn: AsyncConnection, scope: Scope, ref: Row[Any]) -> list[Any]:
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
    found: dict[str, Any] = {r.incident_id: r for r in (await conn.execute(recent)).all()}
    if ref.equals_md5:
        same_group = select(*columns).where(
            *conds, incident.c.equals_md5 == ref.equals_md5,
        ).order_by(incident.c.start_time.desc()).limit(PAST_SAME_GROUP)
        for r in (await conn.execute(same_group)).all():
            found.setdefault(r.incident_id, r)
    return list(found.values())


# --- title search ---------------------------------------------------------------------------
# The title condition of /incident/list's `query`: a case-insensitive substring match that an
# index answers, with the same results on each database as the plain LIKE it stands for.
#
# The meaning is `lower(title) LIKE '%<query lowered by Python>%'`, with %, _ and / taken
# literally. PostgreSQL runs exactly that, and a pg_trgm GIN index on lower(title) serves it
# (migration 0005). SQLite cannot index a LIKE with a leading %, so there it becomes a MATCH on
# an FTS5 trigram table of lower(title), which is the same test: the table holds what the LIKE
# reads and matches case-sensitively, and a quoted FTS5 string of three or more characters
# matches exactly the rows that contain it. Shorter queries have no trigram to look up and keep
# the LIKE (a full read of the window, as before).

TRIGRAM = 3


def title_contains(query: str) -> ColumnElement[bool]:
    """incident.title contains `query`, ignoring case as the database's lower() does (on
    SQLite only ASCII letters; on PostgreSQL by the database's locale)."""
    needle = query.lower()
    like = func.lower(incident.c.title).like(contains_pattern(needle), escape="/")
    # (No NUL can get here, which FTS5 would take for the end of its query: the request layer
    # refuses strings holding one, api/handler.py.)
    if len(needle) < TRIGRAM:
        return like
    return _IndexedTitleMatch(like, _fts_match(needle))


async def plan_for_the_query(conn: AsyncConnection, query: str) -> None:
    """On PostgreSQL, plan the rest of this transaction's statements for their actual values.

    Statements are prepared, and after five runs PostgreSQL may keep one generic plan, made
    without knowing the pattern. With the trigram index that plan reads every match of the
    window and sorts it for a page (13 ms instead of 0.4 for 'disk' in 100,000 incidents),
    or, for a 1-2 character query that no trigram narrows, scans the whole index. Only the
    actual pattern tells whether walking the window in order or asking the index is
    cheaper. One SET per title search; nothing for other lists or on SQLite."""
    if query and conn.dialect.name == "postgresql":
        await conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")


def _fts_match(needle: str) -> ColumnElement[bool]:
    # One FTS5 string (double quotes, a quote inside doubled): every character literal, the
    # whole needle one phrase of consecutive trigrams, i.e. a substring.
    phrase = '"' + needle.replace('"', '""') + '"'
    matching = select(incident_title_fts.c.rowid).where(
        incident_title_fts.c.incident_title_fts.match(phrase))
    return literal_column(f"{incident.name}.rowid").in_(matching)


class _IndexedTitleMatch(ColumnElement[bool]):
    """The LIKE on PostgreSQL, the equivalent FTS5 MATCH on SQLite. Both stay in the
    statement's cache key (and their bound values in its parameters): a statement is cached
    per dialect, and each dialect renders only its own."""

    type = Boolean()
    inherit_cache = True
    _traverse_internals: _TraverseInternalsType = [  # noqa: RUF012 (SQLAlchemy types it so)
        ("plain_like", InternalTraversal.dp_clauseelement),
        ("fts_match", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, plain_like: ColumnElement[bool], fts_match: ColumnElement[bool]) -> None:
        self.plain_like = plain_like
        self.fts_match = fts_match


@compiles(_IndexedTitleMatch)
def _compile_like(element: _IndexedTitleMatch, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.plain_like, **kw)


@compiles(_IndexedTitleMatch, "sqlite")
def _compile_fts(element: _IndexedTitleMatch, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.fts_match, **kw)
