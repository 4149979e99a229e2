"""Every query of schedules. Each is scoped by account_id: that is the visibility rule."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal_column,
    select,
    union_all,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.like import ESCAPE, contains_pattern
from dutyline.db.paging import ordered, windowed_page
from dutyline.db.tables.schedule import schedule, schedule_feed, schedule_person
from dutyline.platform.member import service as member_service


async def insert_schedule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(schedule).values(**values))


async def update_schedule(conn: AsyncConnection, account_id: int, schedule_id: int,
                          values: dict[str, Any]) -> None:
    await conn.execute(
        update(schedule)
        .where(schedule.c.account_id == account_id, schedule.c.schedule_id == schedule_id)
        .values(**values, revision=schedule.c.revision + 1))


async def delete_schedules(conn: AsyncConnection, account_id: int, ids: list[int]) -> None:
    await conn.execute(delete(schedule_person).where(
        schedule_person.c.account_id == account_id, schedule_person.c.schedule_id.in_(ids)))
    await conn.execute(delete(schedule).where(
        schedule.c.account_id == account_id, schedule.c.schedule_id.in_(ids)))


async def replace_persons(conn: AsyncConnection, account_id: int, schedule_id: int,
                          person_ids: Sequence[int]) -> None:
    await conn.execute(delete(schedule_person).where(
        schedule_person.c.schedule_id == schedule_id))
    if person_ids:
        await conn.execute(insert(schedule_person), [
            {"schedule_id": schedule_id, "person_id": p, "account_id": account_id}
            for p in sorted(set(person_ids))])


# -- reads: sync, for read operations' units of database work (api/operation.py); the async
# forms run the same functions. Statements are built once, with bound parameters.

_GET = select(schedule).where(schedule.c.account_id == bindparam("account_id"),
                              schedule.c.schedule_id == bindparam("schedule_id"))
_GET_MANY = (select(schedule)
             .where(schedule.c.account_id == bindparam("account_id"),
                    schedule.c.schedule_id.in_(bindparam("ids", expanding=True)))
             .order_by(schedule.c.created_at, schedule.c.schedule_id))


def get_sync(conn: Connection, account_id: int, schedule_id: int) -> Row[Any] | None:
    return conn.execute(_GET, {"account_id": account_id, "schedule_id": schedule_id}).first()


async def get(conn: AsyncConnection, account_id: int, schedule_id: int) -> Row[Any] | None:
    return await conn.run_sync(get_sync, account_id, schedule_id)


def get_many_sync(conn: Connection, account_id: int, ids: Sequence[int]) -> list[Row[Any]]:
    if not ids:
        return []
    return list(conn.execute(_GET_MANY, {"account_id": account_id, "ids": list(ids)}).all())


async def get_many(conn: AsyncConnection, account_id: int, ids: Sequence[int]) -> list[Row[Any]]:
    return await conn.run_sync(get_many_sync, account_id, ids)


async def existing_ids(conn: AsyncConnection, account_id: int, ids: Sequence[int]) -> set[int]:
    rows = await conn.execute(select(schedule.c.schedule_id).where(
        schedule.c.account_id == account_id, schedule.c.schedule_id.in_(list(ids))))
    return {r.schedule_id for r in rows}


@cache
def _page_statements(by_query: bool, by_teams: bool,
                     by_creator: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, windowed page) queries for one combination of filters."""
    conditions = [schedule.c.account_id == bindparam("account_id")]
    if by_query:
        conditions.append(func.lower(schedule.c.schedule_name).like(bindparam("needle"),
                                                                    escape=ESCAPE))
    if by_teams:
        conditions.append(schedule.c.team_id.in_(bindparam("team_ids", expanding=True)))
    if by_creator:
        conditions.append(schedule.c.created_by == bindparam("created_by"))
    count = select(func.count()).select_from(schedule).where(*conditions)
    page = select(schedule).where(*conditions).order_by(
        *ordered(schedule.c.created_at, schedule.c.schedule_id, asc=False))
    return count, windowed_page(page)


def list_page_sync(
    conn: Connection, account_id: int, *, query: str, team_ids: Sequence[int] | None,
    created_by: int | None, offset: int, limit: int,
) -> tuple[int, list[Row[Any]]]:
    params: dict[str, Any] = {"account_id": account_id, "offset": offset, "limit": limit}
    if query:
        params["needle"] = contains_pattern(query.lower())
    if team_ids is not None:
        params["team_ids"] = list(team_ids)
    if created_by is not None:
        params["created_by"] = created_by
    count, page = _page_statements(bool(query), team_ids is not None, created_by is not None)
    rows = conn.execute(page, params).all()
    if rows:
        return int(rows[0].total), list(rows)
    return int(conn.execute(count, params).scalar_one()), []


def _naming_calendar(account_id: int, cal_id: str) -> Any:
    # The layers' compact JSON holds `"cal_id":"<id>"` for each layer following the calendar.
    return and_(schedule.c.account_id == account_id,
                schedule.c.layers.contains(f'"cal_id":"{cal_id}"', autoescape=True))


async def schedules_naming_calendar(conn: AsyncConnection, account_id: int,
                                    cal_id: str) -> list[Row[Any]]:
    return list(await conn.execute(
        select(schedule.c.schedule_id, schedule.c.schedule_name)
        .where(_naming_calendar(account_id, cal_id)).order_by(schedule.c.schedule_id)))


async def bump_revisions_naming_calendar(conn: AsyncConnection, account_id: int,
                                         cal_id: str) -> None:
    """A new revision for the schedules following the calendar: what it says changed, so
    their compiled timelines (keyed by revision) are rebuilt in every process."""
    await conn.execute(update(schedule).where(_naming_calendar(account_id, cal_id))
                       .values(revision=schedule.c.revision + 1))


_IDS_OF_PERSON = select(schedule_person.c.schedule_id).where(
    schedule_person.c.account_id == bindparam("account_id"),
    schedule_person.c.person_id == bindparam("person_id"))


def schedule_ids_of_person_sync(conn: Connection, account_id: int,
                                person_id: int) -> list[int]:
    return list(conn.execute(_IDS_OF_PERSON, {"account_id": account_id,
                                              "person_id": person_id}).scalars())


async def schedule_ids_of_person(conn: AsyncConnection, account_id: int,
                                 person_id: int) -> list[int]:
    return await conn.run_sync(schedule_ids_of_person_sync, account_id, person_id)


# -- hot path: "who is on call now" ---------------------------------------------------------

@cache
def _revisions_and_live_statement() -> Any:
    """Built once: building a statement of this shape costs more than SQLite running it."""
    live = member_service.live_member_ids_statement()
    return union_all(
        select(literal_column("0").label("kind"), schedule.c.schedule_id.label("id"),
               schedule.c.revision.label("revision"))
        .where(schedule.c.schedule_id.in_(bindparam("schedule_ids", expanding=True)),
               schedule.c.account_id == bindparam("account_id")),
        # The members' statement as it is, with the same three columns (no subquery: on
        # PostgreSQL a subquery in a UNION costs more to plan than the rest to run).
        live.with_only_columns(literal_column("1"), *live.selected_columns,
                               literal_column("0")),
    )


def revisions_and_live_sync(
    conn: Connection, account_id: int, ids: Sequence[int], person_ids: Sequence[int],
) -> tuple[dict[int, int], set[int]]:
    """In one round trip: schedule_id -> revision of the account's schedules among `ids`
    (a primary-key lookup reading two integers), and which of `person_ids` are live members
    of the account (the members service's statement, UNION ALL)."""
    found: dict[int, int] = {}
    alive: set[int] = set()
    rows = conn.execute(_revisions_and_live_statement(), {
        "schedule_ids": list(ids), "account_id": account_id,
        # 0 names no member: an empty expanding list would recompile the statement each time
        "member_ids": list(person_ids) or [0]})
    for row_kind, ident, revision in rows.all():
        if row_kind:
            alive.add(ident)
        else:
            found[ident] = revision
    return found, alive


_DEFINITIONS = select(schedule.c.schedule_id, schedule.c.revision, schedule.c.time_zone,
                      schedule.c.layers).where(
    schedule.c.schedule_id.in_(bindparam("ids", expanding=True)),
    schedule.c.account_id == bindparam("account_id"))


def definitions_sync(conn: Connection, account_id: int, ids: Sequence[int]) -> list[Any]:
    """What compiling needs, for the cache misses of `revisions`."""
    return list(conn.execute(_DEFINITIONS, {"ids": list(ids), "account_id": account_id}).all())


# -- calendar feeds -------------------------------------------------------------------------


async def put_feed(conn: AsyncConnection, account_id: int, person_id: int, token_hash: str,
                   now_s: int) -> None:
    await conn.execute(delete(schedule_feed).where(schedule_feed.c.person_id == person_id))
    await conn.execute(insert(schedule_feed).values(
        person_id=person_id, account_id=account_id, token_hash=token_hash, created_at=now_s))


async def delete_feed(conn: AsyncConnection, account_id: int, person_id: int) -> bool:
    result = await conn.execute(delete(schedule_feed).where(
        schedule_feed.c.account_id == account_id, schedule_feed.c.person_id == person_id))
    return bool(result.rowcount)


_FEED_OF = select(schedule_feed).where(schedule_feed.c.account_id == bindparam("account_id"),
                                      schedule_feed.c.person_id == bindparam("person_id"))


def feed_of_sync(conn: Connection, account_id: int, person_id: int) -> Row[Any] | None:
    return conn.execute(_FEED_OF, {"account_id": account_id, "person_id": person_id}).first()


async def feed_by_hash(conn: AsyncConnection, token_hash: str) -> Row[Any] | None:
    return (await conn.execute(select(schedule_feed).where(
        schedule_feed.c.token_hash == token_hash))).first()
