"""Every team query. Each one is scoped by account_id: that is the visibility rule."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    String,
    bindparam,
    cast,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.like import contains_pattern
from dutyline.db.paging import ids_by_key, ordered, windowed_page
from dutyline.db.prepared import Prepared
from dutyline.db.tables.platform import member, team, team_member

_ORDER_COLUMNS = {
    "created_at": team.c.created_at,
    "updated_at": team.c.updated_at,
    "team_name": team.c.name_key,
}


_creator = member.alias("creator")
_updater = member.alias("updater")
# Members as one comma-separated string per team, so a page of teams is one round trip.
_person_ids_csv = (
    select(func.aggregate_strings(cast(team_member.c.person_id, String), ","))
    .where(team_member.c.team_id == team.c.team_id)
    .scalar_subquery()
)
_TEAM_ROWS = (
    select(
        team,
        _creator.c.member_name.label("creator_name"),
        _updater.c.member_name.label("updated_by_name"),
        _person_ids_csv.label("person_ids_csv"),
    )
    .select_from(team)
    .outerjoin(_creator, _creator.c.member_id == team.c.creator_id)
    .outerjoin(_updater, _updater.c.member_id == team.c.updated_by)
)


# The columns of a team row as list_page_sync and find_full_sync return it, in order.
TEAM_COLUMNS: tuple[str, ...] = tuple(_TEAM_ROWS.selected_columns.keys())


def parse_person_ids(csv: str | None) -> list[int]:
    return sorted(int(p) for p in csv.split(",")) if csv else []


# --- hot sync reads: one unit of database work per request (api/operation.py) ----------
# Statements are built once, with bound parameters, so SQLAlchemy reuses their compiled form.


@functools.cache
def _page_statements(by_person: bool, by_name: bool, orderby: str,
                     asc: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, windowed page) queries for one combination of filters."""
    conditions = [team.c.account_id == bindparam("account_id")]
    if by_person:
        conditions.append(
            team.c.team_id.in_(
                select(team_member.c.team_id).where(
                    team_member.c.account_id == bindparam("account_id"),
                    team_member.c.person_id == bindparam("person_id"),
                )
            )
        )
    if by_name:
        conditions.append(team.c.name_key.like(bindparam("name_pattern"), escape="/"))
    count = select(func.count()).select_from(team).where(*conditions)
    page = _TEAM_ROWS.where(*conditions).order_by(
        *ordered(_ORDER_COLUMNS[orderby], team.c.team_id, asc=asc))
    return count, windowed_page(page)


def list_page_sync(
    conn: Connection,
    account_id: int,
    *,
    person_id: int | None,
    query: str,
    orderby: str,
    asc: bool,
    offset: int,
    limit: int,
) -> tuple[int, list[Row[Any]]]:
    """A page of teams with creator/updater names and member ids, plus the total (a window
    count: one statement, a second only past the last page), as the driver's tuples in the
    order of TEAM_COLUMNS (then the total)."""
    params: dict[str, Any] = {"account_id": account_id, "offset": offset, "limit": limit}
    if person_id is not None:
        params["person_id"] = person_id
    if query:
        params["name_pattern"] = contains_pattern(query.lower())
    count, page = _prepared_page(person_id is not None, bool(query), orderby, asc)
    rows = page.rows(conn, params)
    if rows:
        return int(rows[0][-1]), list(rows)
    return int(count.rows(conn, params)[0][0]), []


@functools.cache
def _prepared_page(by_person: bool, by_name: bool, orderby: str,
                   asc: bool) -> tuple[Prepared, Prepared]:
    """`_page_statements`, compiled once per dialect and run on the driver's cursor."""
    count, page = _page_statements(by_person, by_name, orderby, asc)
    return Prepared(count), Prepared(page)


_LOOKUP_COLUMNS = {"team_id": team.c.team_id, "team_name": team.c.name_key,
                   "ref_id": team.c.ref_id}


@functools.cache
def _full_by(column: str) -> Select[Any]:
    return _TEAM_ROWS.where(team.c.account_id == bindparam("account_id"),
                            _LOOKUP_COLUMNS[column] == bindparam("value")).limit(1)


def find_full_sync(conn: Connection, account_id: int, *, team_id: int = 0,
                   team_name: str = "", ref_id: str = "") -> Row[Any] | None:
    """One team in the shape list_page_sync returns, by id, else name (any case), else
    external ref."""
    value: int | str
    if team_id:
        column, value = "team_id", team_id
    elif team_name:
        column, value = "team_name", team_name.lower()
    elif ref_id:
        column, value = "ref_id", ref_id
    else:
        return None
    return conn.execute(_full_by(column), {"account_id": account_id, "value": value}).first()


_BRIEF_ROWS = (
    select(team.c.team_id, team.c.team_name, _person_ids_csv)
    .where(team.c.account_id == bindparam("account_id"),
           team.c.team_id.in_(bindparam("team_ids", expanding=True)))
    .order_by(team.c.team_id)
)


def find_brief_sync(conn: Connection, account_id: int, team_ids: list[int]) -> list[Any]:
    """(team_id, team_name, member ids as a comma-separated string) of the account's teams
    among these ids, by id."""
    if not team_ids:
        return []
    return list(conn.execute(_BRIEF_ROWS, {"account_id": account_id, "team_ids": team_ids}))


# --- the rest ----------------------------------------------------------------------------


async def person_ids_by_team(conn: AsyncConnection, team_ids: list[int]) -> dict[int, list[int]]:
    return await ids_by_key(conn, team_member.c.team_id, team_member.c.person_id, team_ids)


async def find(
    conn: AsyncConnection, account_id: int, *, team_id: int = 0, team_name: str = "",
    ref_id: str = "",
) -> Row[Any] | None:
    stmt = select(team).where(team.c.account_id == account_id)
    if team_id:
        stmt = stmt.where(team.c.team_id == team_id)
    elif team_name:
        stmt = stmt.where(team.c.name_key == team_name.lower())
    elif ref_id:
        stmt = stmt.where(team.c.ref_id == ref_id)
    else:
        return None
    return (await conn.execute(stmt.limit(1))).first()


_NAMES = (select(team.c.team_id, team.c.team_name)
          .where(team.c.account_id == bindparam("account_id"),
                 team.c.team_id.in_(bindparam("team_ids", expanding=True)))
          .order_by(team.c.team_id))


def find_many_sync(conn: Connection, account_id: int, team_ids: list[int]) -> list[Any]:
    """(team_id, team_name) of the account's teams among these ids, by id."""
    return list(conn.execute(_NAMES, {"account_id": account_id, "team_ids": team_ids}).all())


async def find_many(conn: AsyncConnection, account_id: int, team_ids: list[int]) -> list[Any]:
    return await conn.run_sync(find_many_sync, account_id, team_ids)


async def member_ids_by_contact(
    conn: AsyncConnection, account_id: int, *, emails: set[str], phones: set[str]
) -> tuple[dict[str, int], dict[str, int]]:
    by_email: dict[str, int] = {}
    by_phone: dict[str, int] = {}
    base = select(member.c.member_id, member.c.email, member.c.phone).where(
        member.c.account_id == account_id, member.c.status != "deleted"
    )
    if emails:
        for r in await conn.execute(base.where(member.c.email.in_(emails))):
            by_email[r.email] = r.member_id
    if phones:
        for r in await conn.execute(base.where(member.c.phone.in_(phones))):
            by_phone[r.phone] = r.member_id
    return by_email, by_phone


async def insert_team(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(team).values(**values))


async def update_team(conn: AsyncConnection, team_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(team).where(team.c.team_id == team_id).values(**values))


async def replace_members(
    conn: AsyncConnection, account_id: int, team_id: int, person_ids: list[int]
) -> None:
    await conn.execute(delete(team_member).where(team_member.c.team_id == team_id))
    if person_ids:
        await conn.execute(
            insert(team_member),
            [{"team_id": team_id, "person_id": p, "account_id": account_id} for p in person_ids],
        )


async def delete_team(conn: AsyncConnection, team_id: int) -> None:
    await conn.execute(delete(team_member).where(team_member.c.team_id == team_id))
    await conn.execute(delete(team).where(team.c.team_id == team_id))


_TEAM_IDS_OF = select(team_member.c.team_id).where(
    team_member.c.account_id == bindparam("account_id"),
    team_member.c.person_id == bindparam("person_id"))


def team_ids_of_sync(conn: Connection, account_id: int, person_id: int) -> frozenset[int]:
    """The teams a member belongs to (a caller's teams, for channel visibility)."""
    rows = conn.execute(_TEAM_IDS_OF, {"account_id": account_id, "person_id": person_id})
    return frozenset(rows.scalars())


async def team_ids_of(conn: AsyncConnection, account_id: int, person_id: int) -> frozenset[int]:
    return await conn.run_sync(team_ids_of_sync, account_id, person_id)
