"""Every query of change events. The push runs on a sync connection (like alert ingestion);
the reads are scoped by `visibility.Scope` like every incident read, so a change
of a private channel the caller cannot see answers like an unknown id."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, and_, func, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError

from dutyline.db.tables.incident_change import change_event, change_record
from dutyline.incident import visibility
from dutyline.incident.analytics.repository import bucket_of, local_time
from dutyline.incident.analytics.schemas import Grid
from dutyline.incident.visibility import Scope

C = change_record.c


# --- the push (sync) ----------------------------------------------------------------------

def find_by_key_sync(conn: Connection, integration_id: int, change_key: str) -> Row[Any] | None:
    stmt = select(change_record).where(C.integration_id == integration_id,
                                       C.change_key == change_key)
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return conn.execute(stmt).first()


def insert_sync(conn: Connection, values: dict[str, Any]) -> bool:
    """False when a concurrent push of the same key inserted it first."""
    try:
        with conn.begin_nested():
            conn.execute(change_record.insert().values(**values))
    except IntegrityError:
        return False
    return True


def update_sync(conn: Connection, change_id: int, values: dict[str, Any]) -> None:
    conn.execute(update(change_record).where(C.change_id == change_id)
                 .values(**values, event_cnt=C.event_cnt + 1))


def add_event_sync(conn: Connection, values: dict[str, Any]) -> None:
    conn.execute(change_event.insert().values(**values))


# --- reads ---------------------------------------------------------------------------------

def _visible(scope: Scope) -> list[ColumnElement[bool]]:
    return [C.account_id == scope.account_id, *visibility.channel_visible(C.channel_id, scope)]


def _list_conditions(scope: Scope, *, change_ids: list[int], channel_ids: list[int],
                     start_time: int, end_time: int, type_: str) -> list[ColumnElement[bool]]:
    conds = _visible(scope)
    if change_ids:
        conds.append(C.change_id.in_(change_ids))
    if channel_ids:
        conds.append(C.channel_id.in_(channel_ids))
    if start_time:
        conds.append(C.start_time >= start_time)
    if end_time:
        conds.append(C.start_time <= end_time)
    if type_:
        conds.append(C.type == type_)
    return conds


def page_sync(conn: Connection, scope: Scope, *, offset: int, limit: int,
              **filters: Any) -> tuple[int, list[Row[Any]]]:
    conds = _list_conditions(scope, **filters)
    total = int(conn.execute(
        select(func.count()).select_from(change_record).where(*conds)).scalar_one())
    if not total or offset >= total:
        return total, []
    rows = conn.execute(select(change_record).where(*conds)
                              .order_by(C.start_time.desc(), C.change_id.desc())
                              .offset(offset).limit(limit))
    return total, list(rows.all())


def _before(account_id: int, channel_id: int, at: int, window_s: int,
            lookback_s: int) -> list[ColumnElement[bool]]:
    """Changes of the channel that started at most `window_s` before `at`, or started
    earlier (at most `lookback_s` before) and were still running `window_s` before `at`."""
    since = at - window_s
    return [
        C.account_id == account_id, C.channel_id == channel_id,
        C.start_time <= at, C.start_time >= at - lookback_s,
        or_(C.start_time >= since, C.end_time == 0, C.end_time >= since),
    ]


def before_full_sync(conn: Connection, account_id: int, channel_id: int, at: int, *,
                     window_s: int, lookback_s: int, limit: int) -> list[Row[Any]]:
    """`before`'s whole records on a sync connection."""
    stmt = (select(change_record)
            .where(*_before(account_id, channel_id, at, window_s, lookback_s))
            .order_by(C.start_time.desc(), C.change_id.desc()).limit(limit))
    return list(conn.execute(stmt).all())


def before_sync(conn: Connection, account_id: int, channel_id: int, at: int, *,
                window_s: int, lookback_s: int, limit: int) -> list[Row[Any]]:
    stmt: Select[Any] = (
        select(C.change_id, C.title, C.type, C.status, C.start_time, C.end_time)
        .where(*_before(account_id, channel_id, at, window_s, lookback_s))
        .order_by(C.start_time.desc(), C.change_id.desc()).limit(limit))
    return list(conn.execute(stmt).all())


# --- the on-call report --------------------------------------------------------------------

def change_totals_sync(conn: Connection, scope: Scope, *, start_time: int,
                       end_time: int, grid: Grid) -> tuple[list[Row[Any]], list[Row[Any]]]:
    """([(bucket, n)] of the changes that started in [start_time, end_time),
    [(bucket, n)] of the change events received then), per local-time bucket of the grid
    (the same SQL as the insights')."""
    started = (select(bucket_of(local_time(C.start_time, grid), grid).label("bucket"))
               .where(*_visible(scope), C.start_time >= start_time, C.start_time < end_time)
               .subquery("started"))
    e = change_event.c
    received = (select(bucket_of(local_time(e.created_at, grid), grid).label("bucket"))
                .where(e.account_id == scope.account_id,
                       *visibility.channel_visible(e.channel_id, scope),
                       and_(e.created_at >= start_time, e.created_at < end_time))
                .subquery("received"))
    return _per_bucket(conn, started), _per_bucket(conn, received)


def _per_bucket(conn: Connection, rows: Any) -> list[Row[Any]]:
    # Grouped by the subquery's column: a window of one month makes the bucket a constant,
    # which SQLite would read as a column position in GROUP BY.
    b = rows.c.bucket
    return list(conn.execute(select(b, func.count().label("n")).group_by(b)).all())
