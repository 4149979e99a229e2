"""Rules of teams: names unique per account (any case), members must belong to the account."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.kit.ids import numeric_id
from dutyline.platform.member import service as member_service
from dutyline.platform.team import repository as repo
from dutyline.platform.team.schemas import TeamBriefItem, TeamItem
from dutyline.platform.team.schemas import TeamChanges as TeamChanges  # the record it takes
from dutyline.platform.team.schemas import TeamSearch as TeamSearch  # for the console

# --- reads: sync, so a read operation runs them as one unit of database work -----------
# (api/operation.py); the async forms below run the same functions on an async connection.


def list_teams_sync(
    conn: Connection, actor: Actor, *, person_id: int | None = None, query: str = "",
    orderby: str = "created_at", asc: bool = False, offset: int, limit: int,
) -> tuple[int, list[TeamItem]]:
    """(total, one page of the account's teams)."""
    total, rows = repo.list_page_sync(
        conn, actor.account_id, person_id=person_id, query=query.strip(),
        orderby=orderby, asc=asc, offset=offset, limit=limit,
    )
    return total, _items(rows)


def team_info_sync(conn: Connection, actor: Actor, *, team_id: int = 0, team_name: str = "",
                   ref_id: str = "") -> TeamItem:
    """One team by id, name or external ref."""
    if not (team_id or team_name or ref_id):
        raise errors.invalid("team_id", "is required")
    row = repo.find_full_sync(conn, actor.account_id, team_id=team_id, team_name=team_name,
                              ref_id=ref_id)
    if row is None:
        raise errors.not_found("team", team_id or team_name or ref_id)
    return _items([row])[0]


def team_infos_sync(conn: Connection, actor: Actor, *,
                    team_ids: Sequence[int]) -> list[TeamBriefItem]:
    """The account's teams among these ids, with their members; unknown ids are left out."""
    rows = repo.find_brief_sync(conn, actor.account_id, list(dict.fromkeys(team_ids)))
    return [TeamBriefItem(team_id=tid, team_name=name, person_ids=repo.parse_person_ids(csv))
            for tid, name, csv in rows]


async def team_info(conn: AsyncConnection, actor: Actor, *, team_id: int = 0,
                    team_name: str = "", ref_id: str = "") -> TeamItem:
    """One team by id, name or external ref."""
    return await conn.run_sync(lambda sync: team_info_sync(
        sync, actor, team_id=team_id, team_name=team_name, ref_id=ref_id))


async def team_infos(conn: AsyncConnection, actor: Actor, *,
                     team_ids: Sequence[int]) -> list[TeamBriefItem]:
    """The account's teams among these ids, with their members; unknown ids are left out."""
    return await conn.run_sync(lambda sync: team_infos_sync(sync, actor, team_ids=team_ids))


@writes("/team/upsert", ACCOUNT_MANAGE, inputs=TeamChanges)
async def upsert_team(conn: AsyncConnection, actor: Actor, *, team: TeamChanges) -> int:
    """Create a team (no team_id) or update one; returns its id."""
    account_id = actor.account_id
    name = team.team_name.strip()
    if not name:
        raise errors.invalid("team_name", "is required")
    same_name = await repo.find(conn, account_id, team_name=name)
    if team.team_id:
        existing = await repo.find(conn, account_id, team_id=team.team_id)
        if existing is None:
            raise errors.not_found("team", team.team_id)
    elif same_name is not None and team.reset_if_name_exist:
        existing = same_name
    else:
        existing = None
    if same_name is not None and (existing is None or same_name.team_id != existing.team_id):
        raise errors.invalid("team_name", "already exists")

    person_ids = await _resolve_people(conn, actor, team)
    now = actor.now_s
    values: dict[str, Any] = {"team_name": name, "name_key": name.lower(), "updated_at": now,
                              "updated_by": actor.person_id}
    if team.description is not None:
        values["description"] = team.description
    if team.ref_id is not None:
        values["ref_id"] = team.ref_id
    try:
        if existing is None:
            team_id = numeric_id()
            await repo.insert_team(
                conn,
                {**values, "team_id": team_id, "account_id": account_id, "status": "enabled",
                 "creator_id": actor.person_id, "created_at": now},
            )
        else:
            team_id = existing.team_id
            await repo.update_team(conn, team_id, values)
    except IntegrityError:
        # Lost a race with a concurrent upsert of the same name.
        raise errors.invalid("team_name", "already exists") from None
    if person_ids is not None:
        await repo.replace_members(conn, account_id, team_id, person_ids)
    return int(team_id)


@writes("/team/delete", ACCOUNT_MANAGE, dangerous=True)
async def delete_team(conn: AsyncConnection, actor: Actor, *, team_id: int = 0,
                      team_name: str = "", ref_id: str = "") -> int:
    """Delete a team by id, name or external ref; returns its id."""
    row = await _require(conn, actor, team_id=team_id, team_name=team_name, ref_id=ref_id)
    await repo.delete_team(conn, row.team_id)
    return int(row.team_id)


async def _require(conn: AsyncConnection, actor: Actor, *, team_id: int, team_name: str,
                   ref_id: str) -> Any:
    if not (team_id or team_name or ref_id):
        raise errors.invalid("team_id", "is required")
    row = await repo.find(conn, actor.account_id, team_id=team_id, team_name=team_name,
                          ref_id=ref_id)
    if row is None:
        raise errors.not_found("team", team_id or team_name or ref_id)
    return row


async def _resolve_people(conn: AsyncConnection, actor: Actor,
                          team: TeamChanges) -> list[int] | None:
    """The new member list, or None to leave it unchanged. Unknown person ids are refused
    by name. Emails and phones add the members who have them; one that matches no member is
    ignored, as the reference describes (it would invite someone; we have no invitations)."""
    if team.person_ids is None and team.emails is None and team.phones is None:
        return None
    account_id = actor.account_id
    wanted = list(dict.fromkeys(team.person_ids or []))
    found = await member_service.existing_member_ids(conn, actor, wanted)
    missing = [p for p in wanted if p not in found]
    if missing:
        raise errors.invalid("person_ids", "unknown members: " + ", ".join(map(str, missing)))
    emails = {e.strip().lower() for e in team.emails or [] if e.strip()}
    phones = {p.strip() for p in team.phones or [] if p.strip()}
    by_email, by_phone = await repo.member_ids_by_contact(
        conn, account_id, emails=emails, phones=phones
    )
    return list(dict.fromkeys([*wanted, *by_email.values(), *by_phone.values()]))


_ITEM_COLUMNS = (
    "account_id", "team_id", "team_name", "description", "status", "creator_id",
    "creator_name", "created_at", "updated_at", "updated_by", "updated_by_name",
    "person_ids_csv", "ref_id",
)
(_ACCT, _TID, _NAME, _DESC, _STATUS, _CREATOR, _CREATOR_NAME, _CREATED, _UPDATED, _UPDATER,
 _UPDATER_NAME, _PEOPLE, _REF) = (repo.TEAM_COLUMNS.index(c) for c in _ITEM_COLUMNS)


def _items(rows: Sequence[Any]) -> list[TeamItem]:
    """Team rows (in the order of repo.TEAM_COLUMNS) read by position into their records."""
    parse = repo.parse_person_ids
    return [
        TeamItem(
            account_id=r[_ACCT],
            team_id=r[_TID],
            team_name=r[_NAME],
            description=r[_DESC],
            status=r[_STATUS],
            creator_id=r[_CREATOR],
            creator_name=r[_CREATOR_NAME] or "",
            created_at=r[_CREATED],
            updated_at=r[_UPDATED],
            updated_by=r[_UPDATER],
            updated_by_name=r[_UPDATER_NAME] or "",
            person_ids=parse(r[_PEOPLE]),
            ref_id=r[_REF],
        )
        for r in rows
    ]


def team_names_sync(conn: Connection, actor: Actor, team_ids: Iterable[int]) -> dict[int, str]:
    """The names of these teams of the account, by id (unknown ids left out)."""
    wanted = sorted(set(team_ids) - {0})
    if not wanted:
        return {}
    return {r[0]: r[1] for r in repo.find_many_sync(conn, actor.account_id, wanted)}


async def existing_team_ids(conn: AsyncConnection, actor: Actor,
                            team_ids: list[int]) -> set[int]:
    """Which of these ids are teams of the actor's account (for other domains that
    reference teams)."""
    if not team_ids:
        return set()
    return {r.team_id for r in await repo.find_many(conn, actor.account_id, list(team_ids))}


async def person_ids_of_teams(conn: AsyncConnection, actor: Actor,
                              team_ids: list[int]) -> dict[int, list[int]]:
    """{team_id: member ids} for the account's teams among these ids (paging a team)."""
    teams = await existing_team_ids(conn, actor, team_ids)
    if not teams:
        return {}
    return await repo.person_ids_by_team(conn, sorted(teams))


def member_team_ids_sync(conn: Connection, actor: Actor) -> frozenset[int]:
    """The teams the actor's person belongs to (none for the system), for an actor built
    outside a request to load its teams the way a caller's are (api/actor.py)."""
    if not actor.person_id:
        return frozenset()
    return repo.team_ids_of_sync(conn, actor.account_id, actor.person_id)


async def member_team_ids(conn: AsyncConnection, actor: Actor) -> frozenset[int]:
    return await conn.run_sync(member_team_ids_sync, actor)
