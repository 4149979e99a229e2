"""Every query of notification delivery: deliveries and their attempts."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from sqlalchemy import Connection, Select, and_, bindparam, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.notify import notify_attempt, notify_delivery
from dutyline.kit.channels import GROUP_CHANNELS


class Finished(NamedTuple):
    """An attempt's effect on its delivery."""

    delivery_id: str
    attempts_before: int
    attempts: int
    status: str
    last_error: str


# The webhook history: deliveries by the group target kinds, and by the Teams app (a rule
# stored with such a target records its deliveries failed, with the reason).
WEBHOOK_CHANNELS = (*GROUP_CHANNELS, "teams_app")


async def insert_deliveries(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(insert(notify_delivery), rows)


# Built once, their values bound when they run: a batch of outcomes records in two
# statements whose SQL is the same for every batch (a statement with each row's values
# written in, a CASE per column, costs more CPU to build than the batch's sends).
_d = notify_delivery.c
_ATTEMPT_STATES = (select(_d.delivery_id, _d.status, _d.attempts)
                   .where(_d.delivery_id.in_(bindparam("delivery_ids", expanding=True))))
_LOCK_ATTEMPT_STATES = {"postgresql": _ATTEMPT_STATES.with_for_update()}
_FINISH_ATTEMPT = update(notify_delivery).where(
    _d.delivery_id == bindparam("finished_id"),
    _d.status == "pending",
    _d.attempts == bindparam("attempts_before"),
).values(attempts=bindparam("attempts_after"), status=bindparam("status_after"),
         last_error=bindparam("error_after"), updated_at=bindparam("now_s"))


async def finish_attempts(conn: AsyncConnection, outcomes: list[Finished], *,
                          now_s: int) -> set[str]:
    """Record attempts' effects on their deliveries, each only if nobody recorded that
    attempt already (a presumed-dead runner racing a successor): the ids of the deliveries
    this call moved on. The rows are read locked (PostgreSQL; on SQLite the write
    transaction holds the only writer), then the attempts still to record are written in
    one executemany."""
    if not outcomes:
        return set()
    stmt = _LOCK_ATTEMPT_STATES.get(conn.dialect.name, _ATTEMPT_STATES)
    found = {row.delivery_id: row for row in (await conn.execute(
        stmt, {"delivery_ids": sorted({o.delivery_id for o in outcomes})})).all()}
    moved: set[str] = set()
    params: list[dict[str, Any]] = []
    for o in outcomes:
        row = found.get(o.delivery_id)
        if (row is None or row.status != "pending" or int(row.attempts) != o.attempts_before
                or o.delivery_id in moved):
            continue
        moved.add(o.delivery_id)
        params.append({"finished_id": o.delivery_id, "attempts_before": o.attempts_before,
                       "attempts_after": o.attempts, "status_after": o.status,
                       "error_after": o.last_error, "now_s": now_s})
    if params:
        await conn.execute(_FINISH_ATTEMPT, params)
    return moved


async def insert_attempts(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(insert(notify_attempt), rows)


async def get_deliveries(conn: AsyncConnection, delivery_ids: list[str]) -> list[Row[Any]]:
    return list((await conn.execute(select(notify_delivery).where(
        notify_delivery.c.delivery_id.in_(delivery_ids)))).all())


_OF_INCIDENT = (select(notify_delivery)
                .where(notify_delivery.c.account_id == bindparam("account_id"),
                       notify_delivery.c.incident_id == bindparam("incident_id"))
                .order_by(notify_delivery.c.created_at, notify_delivery.c.delivery_id))
_ATTEMPTS_OF = (select(notify_attempt)
                .where(notify_attempt.c.delivery_id.in_(bindparam("delivery_ids",
                                                                  expanding=True)))
                .order_by(notify_attempt.c.delivery_id, notify_attempt.c.attempt))


def deliveries_of_incident_sync(conn: Connection, account_id: int,
                                incident_id: str) -> list[Row[Any]]:
    return list(conn.execute(_OF_INCIDENT, {"account_id": account_id,
                                            "incident_id": incident_id}).all())


def attempts_of_sync(conn: Connection, delivery_ids: list[str]) -> list[Row[Any]]:
    if not delivery_ids:
        return []
    return list(conn.execute(_ATTEMPTS_OF, {"delivery_ids": delivery_ids}).all())


@functools.cache
def _history_statements(by_status: bool, by_ref: bool, asc: bool,
                        after: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, keyset page by (event_time_ms, id)) statements of one combination of
    filters, built once."""
    a = notify_attempt.c
    conds = [a.account_id == bindparam("account_id"), a.channel.in_(WEBHOOK_CHANNELS),
             a.event_time_ms >= bindparam("start_ms"), a.event_time_ms < bindparam("end_ms")]
    if by_status:
        conds.append(a.status == bindparam("status"))
    if by_ref:
        conds.append(a.incident_id == bindparam("ref_id"))
    count = select(func.count()).select_from(notify_attempt).where(*conds)
    t, i = a.event_time_ms, a.id
    if after:
        at = bindparam("after_time", type_=t.type)
        aid = bindparam("after_id", type_=i.type)
        conds.append(or_(t > at, and_(t == at, i > aid)) if asc
                     else or_(t < at, and_(t == at, i < aid)))
    order = (t.asc(), i.asc()) if asc else (t.desc(), i.desc())
    page = select(notify_attempt).where(*conds).order_by(*order).limit(bindparam("limit"))
    return count, page


def _history_params(account_id: int, start_ms: int, end_ms: int, status: str,
                    ref_id: str) -> dict[str, Any]:
    params: dict[str, Any] = {"account_id": account_id, "start_ms": start_ms,
                              "end_ms": end_ms}
    if status:
        params["status"] = status
    if ref_id:
        params["ref_id"] = ref_id
    return params


def history_count_sync(conn: Connection, account_id: int, *, start_ms: int, end_ms: int,
                       status: str, ref_id: str) -> int:
    count, _ = _history_statements(bool(status), bool(ref_id), False, False)
    params = _history_params(account_id, start_ms, end_ms, status, ref_id)
    return int(conn.execute(count, params).scalar_one())


def history_page_sync(conn: Connection, account_id: int, *, start_ms: int, end_ms: int,
                      status: str, ref_id: str, asc: bool, after: tuple[int, int] | None,
                      limit: int) -> list[Row[Any]]:
    """Keyset page by (event_time_ms, id)."""
    _, page = _history_statements(bool(status), bool(ref_id), asc, after is not None)
    params = _history_params(account_id, start_ms, end_ms, status, ref_id)
    params["limit"] = limit
    if after is not None:
        params["after_time"], params["after_id"] = after
    return list(conn.execute(page, params).all())


_BY_EVENT = select(notify_attempt).where(
    notify_attempt.c.account_id == bindparam("account_id"),
    notify_attempt.c.delivery_id == bindparam("delivery_id"),
    notify_attempt.c.attempt == bindparam("attempt"),
    notify_attempt.c.channel.in_(WEBHOOK_CHANNELS))


def attempt_by_event_sync(conn: Connection, account_id: int, delivery_id: str,
                          attempt: int) -> Row[Any] | None:
    return conn.execute(_BY_EVENT, {"account_id": account_id, "delivery_id": delivery_id,
                                    "attempt": attempt}).first()
