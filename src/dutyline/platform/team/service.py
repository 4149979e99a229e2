"""Rules of teams: names unique per account (any case), members must belong to the account."""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.operation import Context
from dutyline.kit.ids import numeric_id
from dutyline.platform.member import service as member_service
from dutyline.platform.team import repository as repo
from dutyline.platform.team.schemas import (
    TeamBriefItem,
    TeamInfosRequest,
    TeamInfosResponse,
    TeamItem,
    TeamListRequest,
    TeamListResponse,
    TeamLookup,
    TeamUpsertRequest,
    TeamUpsertResponse,
)


async def list_teams(ctx: Context, req: TeamListRequest) -> TeamListResponse:
    account_id = ctx.caller.account_id
    total, rows = await repo.list_page(
        ctx.conn, account_id, person_id=req.person_id, query=req.query.strip(),
        orderby=req.orderby, asc=req.asc, offset=req.offset, limit=req.limit,
    )
    items = _items(rows)
    return TeamListResponse(p=req.p, limit=req.limit, total=total, items=items)


async def team_info(ctx: Context, req: TeamLookup) -> TeamItem:
    row = await _require(ctx, req)
    full = await repo.get_full(ctx.conn, ctx.caller.account_id, row.team_id)
    return _items([full])[0]


async def team_infos(ctx: Context, req: TeamInfosRequest) -> TeamInfosResponse:
    ids = list(dict.fromkeys(req.team_ids))
    rows = await repo.find_many(ctx.conn, ctx.caller.account_id, ids)
    members = await repo.person_ids_by_team(ctx.conn, [r.team_id for r in rows])
    return TeamInfosResponse(
        items=[
            TeamBriefItem(team_id=r.team_id, team_name=r.team_name, person_ids=members[r.team_id])
            for r in rows
        ]
    )


async def upsert_team(ctx: Context, req: TeamUpsertRequest) -> TeamUpsertResponse:
    account_id = ctx.caller.account_id
    name = req.team_name.strip()
    if not name:
        raise errors.invalid("team_name", "is required")
    same_name = await repo.find(ctx.conn, account_id, team_name=name)
    if req.team_id:
        existing = await repo.find(ctx.conn, account_id, team_id=req.team_id)
        if existing is None:
            raise errors.not_found("team", req.team_id)
    elif same_name is not None and req.reset_if_name_exist:
        existing = same_name
    else:
        existing = None
    if same_name is not None and (existing is None or same_name.team_id != existing.team_id):
        raise errors.invalid("team_name", "already exists")

    person_ids = await _resolve_people(ctx, req)
    now = ctx.now_s
    values: dict[str, Any] = {"team_name": name, "name_key": name.lower(), "updated_at": now,
                              "updated_by": ctx.caller.person_id}
    if req.description is not None:
        values["description"] = req.description
    if req.ref_id is not None:
        values["ref_id"] = req.ref_id
    try:
        if existing is None:
            team_id = numeric_id()
            await repo.insert_team(
                ctx.conn,
                {**values, "team_id": team_id, "account_id": account_id, "status": "enabled",
                 "creator_id": ctx.caller.person_id, "created_at": now},
            )
        else:
            team_id = existing.team_id
            await repo.update_team(ctx.conn, team_id, values)
    except IntegrityError:
        # Lost a race with a concurrent upsert of the same name.
        raise errors.invalid("team_name", "already exists") from None
    if person_ids is not None:
        await repo.replace_members(ctx.conn, account_id, team_id, person_ids)
    ctx.audit_targets.append(team_id)
    return TeamUpsertResponse(team_id=team_id, team_name=name)


async def delete_team(ctx: Context, req: TeamLookup) -> None:
    row = await _require(ctx, req)
    await repo.delete_team(ctx.conn, row.team_id)
    ctx.audit_targets.append(row.team_id)


async def _require(ctx: Context, req: TeamLookup) -> Any:
    if not (req.team_id or req.team_name or req.ref_id):
        raise errors.invalid("team_id", "is required")
    row = await repo.find(
        ctx.conn, ctx.caller.account_id, team_id=req.team_id, team_name=req.team_name,
        ref_id=req.ref_id,
    )
    if row is None:
        raise errors.not_found("team", req.team_id or req.team_name or req.ref_id)
    return row


async def _resolve_people(ctx: Context, req: TeamUpsertRequest) -> list[int] | None:
    """The new member list, or None to leave it unchanged. Unknown person ids are refused
    by name. Emails and phones add the members who have them; one that matches no member is
    ignored, as the reference describes (it would invite someone; we have no invitations)."""
    if req.person_ids is None and req.emails is None and req.phones is None:
        return None
    account_id = ctx.caller.account_id
    wanted = list(dict.fromkeys(req.person_ids or []))
    found = await member_service.existing_member_ids(ctx.conn, account_id, wanted)
    missing = [p for p in wanted if p not in found]
    if missing:
        raise errors.invalid("person_ids", "unknown members: " + ", ".join(map(str, missing)))
    emails = {e.strip().lower() for e in req.emails or [] if e.strip()}
    phones = {p.strip() for p in req.phones or [] if p.strip()}
    by_email, by_phone = await repo.member_ids_by_contact(
        ctx.conn, account_id, emails=emails, phones=phones
    )
    return list(dict.fromkeys([*wanted, *by_email.values(), *by_phone.values()]))


_ITEM_COLUMNS = (
    "account_id", "team_id", "team_name", "description", "status", "creator_id",
    "creator_name", "created_at", "updated_at", "updated_by", "updated_by_name",
    "person_ids_csv", "ref_id",
)


def _items(rows: list[Any]) -> list[TeamItem]:
    if not rows:
        return []
    # Positional access: a Row's attribute lookup by name was the costliest part of a page.
    position = {name: i for i, name in enumerate(rows[0]._fields)}
    (acct, tid, name, desc, status, creator, creator_name, created, updated, updater,
     updater_name, people, ref) = (position[c] for c in _ITEM_COLUMNS)
    return [
        TeamItem(
            account_id=r[acct],
            team_id=r[tid],
            team_name=r[name],
            description=r[desc],
            status=r[status],
            creator_id=r[creator],
            creator_name=r[creator_name] or "",
            created_at=r[created],
            updated_at=r[updated],
            updated_by=r[updater],
            updated_by_name=r[updater_name] or "",
            person_ids=repo.parse_person_ids(r[people]),
            ref_id=r[ref],
        )
        for r in rows
    ]


async def existing_team_ids(conn: AsyncConnection, account_id: int,
                            team_ids: list[int]) -> set[int]:
    """Which of these ids are teams of the account (for other domains that reference teams)."""
    if not team_ids:
        return set()
    return {r.team_id for r in await repo.find_many(conn, account_id, list(team_ids))}


async def person_ids_of_teams(conn: AsyncConnection, account_id: int,
                              team_ids: list[int]) -> dict[int, list[int]]:
    """{team_id: member ids} for the account's teams among these ids (paging a team)."""
    teams = await existing_team_ids(conn, account_id, team_ids)
    if not teams:
        return {}
    return await repo.person_ids_by_team(conn, sorted(teams))
